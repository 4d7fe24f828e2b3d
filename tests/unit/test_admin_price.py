"""Prices in fiat on the dashboard: ``format.js`` in node, the pages in Chromium.

The pages run against a small HTTP server holding the real shell and static files and
answers made by the gateway's own code: the list and one request by ``listed_json`` and
``receive_status_json`` from a request carrying a ``Quote``, ``GET /rates`` by a real
``RateBook`` whose real sources ask the fake providers on loopback (``FakeRates``). What
the form posts is kept, so the tests read the very body the gateway would get.

- The list shows "19.90 EUR" under the XMR amount of a priced request, nothing under
  another; one request shows its price, rate, sources and lock in a card of its own.
- The form offers XMR and the gateway's currencies; with fiat prices off (400) XMR only,
  and says why; a price is sent as ``price`` (never with ``amount``), typed "19,90".

Needs Debian's chromium, chromium-driver and nodejs; fails (never skips) without them.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from testsupport.browser import chromium
from testsupport.fake_rates import PROVIDERS, FakeRates, unknown
from xmrgate.adapters.rate_sources import build_sources, rate_client
from xmrgate.core.rates import RateBook
from xmrgate.domain.fiat import Quote
from xmrgate.domain.money import piconero_to_xmr
from xmrgate.domain.payloads import created_json, receive_status_json
from xmrgate.domain.records import PaymentRequest
from xmrgate.web.admin.routes import shell, static_file
from xmrgate.web.api.invoices import listed_json

pytestmark = pytest.mark.browser

FORMAT_JS = str(files("xmrgate.web.admin") / "static" / "format.js")
NOW = datetime.now(UTC).replace(microsecond=0)
QUOTE = Quote("19.90", "EUR", "150.125", ("coingecko", "kraken"), NOW - timedelta(seconds=30))


def request(index: int, amount: int, price: Quote | None) -> PaymentRequest:
    return PaymentRequest(
        id=index,
        address=str(index) + "B" * 94,
        subaddr_index=index,
        amount=amount,
        description=f"order {index}",
        callback_url=None,
        return_url=None,
        created_at=NOW - timedelta(minutes=index),
        created_height=100,
        expires_at=NOW + timedelta(minutes=15),
        price=price,
    )


PRICED = request(4, 132_556_203_165, QUOTE)  # 19.90 EUR at 150.125, rounded up
PLAIN = request(5, 500_000_000_000, None)
REQUESTS = {r.address: r for r in (PRICED, PLAIN)}
RATES_OFF = {
    "status": 400,
    "message": "prices in fiat are turned off on this gateway (--rate-currencies is empty)",
}


# ------------------------------------------------------------------ format.js in node

NODE_SCRIPT = """
const f = require(process.argv[1]);
const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
const parsed = texts.map((t) => {
  try { return f.parseFiat(t); } catch (e) { return "ERR " + e.message; }
});
const quote = { amount: "19.90", currency: "EUR", rate: "150.125" };
process.stdout.write(JSON.stringify({ parsed: parsed, rate: f.rate(quote) }));
"""


def test_format_js_reads_and_writes_prices() -> None:
    """Typed prices become what POST /receive takes; a quote's rate reads in full."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.fail("node not found: install Debian's nodejs (make system-deps)")
    texts = ["19.99", " 19,90 ", "20", ".5", "5.", "007.50", "0", "0,00", "", "1e3", "-1", "1.2.3"]
    out = subprocess.run(
        [node, "-e", NODE_SCRIPT, FORMAT_JS],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    result = json.loads(out.stdout)
    above_zero = "ERR a price above zero, such as 19.99"
    malformed = "ERR a price such as 19.99"
    assert result["parsed"] == [
        "19.99", "19.90", "20", "0.5", "5", "7.50", above_zero, above_zero,
        malformed, malformed, malformed, malformed,
    ]  # fmt: skip
    assert result["rate"] == "1 XMR = 150.125 EUR"


# ------------------------------------------------------------------ the pages in Chromium


class Site:
    """The shell, its files and the API answers the pages ask for; ``rates`` is what
    ``GET /rates`` answers (a RateBook, or a status and body), ``posted`` every body
    ``POST /receive`` got."""

    def __init__(self, book: RateBook) -> None:
        self.book = book
        self.rates: RateBook | tuple[int, dict[str, Any]] = book
        self.posted: list[tuple[dict[str, Any], str | None]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            # TCP_NODELAY: http.server writes the headers and the body apart, and without
            # it the body waits for the client's delayed ACK of the headers (40 ms each).
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/admin":
                    self._send(200, shell(), "text/html; charset=utf-8")
                elif path.startswith("/admin/static/"):
                    found = static_file(path.rsplit("/", 1)[1])
                    self._send(200, found.body, found.media_type)
                else:
                    self._json(*site.answer(path))

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                site.posted.append((body, self.headers.get("Idempotency-Key")))
                self._json(200, created_json(PRICED if "price" in body else PLAIN))

            def _json(self, code: int, body: Any) -> None:
                self._send(code, json.dumps(body).encode(), "application/json")

            def _send(self, code: int, body: bytes, media_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", media_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # close() waits for serve_forever to look again: every 0.5 s unless told.
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        ).start()

    def answer(self, path: str) -> tuple[int, Any]:
        """What the gateway would answer to GET ``path`` (404 for anything else)."""
        if path == "/rates":
            if isinstance(self.rates, RateBook):
                return 200, {"currencies": [self.rates.snapshot(c) for c in self.rates.currencies]}
            return self.rates
        if path == "/receive":
            return 200, {"requests": [listed_json(r, NOW) for r in REQUESTS.values()]}
        parts = path.split("/")  # "", "receive", address[, "callbacks"]
        found = REQUESTS.get(parts[2]) if len(parts) > 2 and parts[1] == "receive" else None
        if found is not None and parts[3:] == ["callbacks"]:
            return 200, {"callbacks": []}
        if found is not None and len(parts) == 3:
            return 200, receive_status_json(found, [], 100, now=NOW.timestamp())
        return 404, {"status": 404, "message": "not found"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def refreshed_book(fake: FakeRates) -> RateBook:
    """A real RateBook over the real sources, fed once: EUR from two providers (median
    150.125), USD from none."""
    fake.set("coingecko", "EUR", "150.12")
    fake.set("kraken", "EUR", "150.13")
    fake.set("cryptocompare", "EUR", unknown())

    async def build() -> RateBook:
        async with rate_client(None, 5.0) as client:
            sources = build_sources(PROVIDERS, fake.bases, client=client)
            book = RateBook(
                sources, ("EUR", "USD"), refresh=60, max_age=300, max_spread=0.05, min_sources=1
            )
            await book.refresh_once()
            return book

    return asyncio.run(build())


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with FakeRates() as fake:
        served = Site(refreshed_book(fake))
    try:
        yield served
    finally:
        served.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, (1280, 900)) as driver:
        yield driver


def texts(driver: WebDriver, selector: str) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]


def open_page(driver: WebDriver, site: Site, fragment: str, ready: str) -> None:
    """Load the dashboard afresh at ``fragment`` and wait for ``ready`` (a CSS selector)."""
    driver.get("about:blank")  # the same URL again would only be a fragment navigation
    driver.get(f"{site.url}/admin#{fragment}")
    deadline = time.monotonic() + 20
    while not texts(driver, ready) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert texts(driver, ready), f"no {ready} on #{fragment}: {texts(driver, '#main')}"


def test_the_list_shows_the_price_under_the_xmr_amount(browser: WebDriver, site: Site) -> None:
    open_page(browser, site, "/requests", "#request-list")
    priced = f'tr[data-address="{PRICED.address}"]'
    plain = f'tr[data-address="{PLAIN.address}"]'
    assert texts(browser, f"{priced} td.num") == [
        f"{piconero_to_xmr(PRICED.amount)} XMR\n19.90 EUR"
    ]
    fiat = browser.find_element(By.CSS_SELECTOR, f"{priced} .fiat")
    assert fiat.get_attribute("title") == "1 XMR = 150.125 EUR (coingecko, kraken)"
    assert texts(browser, f"{plain} .fiat") == []
    assert texts(browser, f"{plain} td.num") == ["0.5 XMR"]


def test_a_priced_request_shows_its_price_rate_and_lock(browser: WebDriver, site: Site) -> None:
    open_page(browser, site, f"/request/{PRICED.address}", "#card-price")
    assert texts(browser, "#req-price") == ["19.90 EUR"]
    assert texts(browser, "#req-rate") == ["1 XMR = 150.125 EUR"]
    assert texts(browser, "#req-rate-sources dd") == ["coingecko, kraken"]
    times = browser.find_elements(By.CSS_SELECTOR, "#card-price time")
    assert [t.get_attribute("datetime") for t in times] == [
        QUOTE.to_json()["rate_at"],
        receive_status_json(PRICED, [], 100, now=NOW.timestamp())["expires_at"],
    ]
    assert texts(browser, "#req-expected") == [f"{piconero_to_xmr(PRICED.amount)} XMR"]

    open_page(browser, site, f"/request/{PLAIN.address}", "#req-expected")
    assert texts(browser, "#card-price") == []


def test_with_fiat_prices_off_the_form_offers_xmr_only(browser: WebDriver, site: Site) -> None:
    """GET /rates answers 400: XMR only, the hint says why, and the amount is sent as ever."""
    site.rates = (400, RATES_OFF)
    try:
        open_page(browser, site, "/new", "#new-form")
    finally:
        site.rates = site.book
    currency = Select(browser.find_element(By.ID, "new-currency"))
    assert [o.text for o in currency.options] == ["XMR"]
    assert "Prices in fiat are off on this gateway" in texts(browser, "#new-amount-hint")[0]
    site.posted.clear()
    browser.find_element(By.ID, "new-amount").send_keys("0.5")
    browser.find_element(By.ID, "new-submit").click()
    open_page(browser, site, f"/request/{PLAIN.address}", "#req-expected")
    assert [body for body, _ in site.posted] == [{"amount": 500_000_000_000}]


def test_the_form_creates_a_request_priced_in_fiat(browser: WebDriver, site: Site) -> None:
    """EUR chosen: the hint gives the book's rate, "never" expires is the lock's end, and
    "19,90" goes as {"price": {"amount": "19.90", "currency": "EUR"}} without an amount."""
    open_page(browser, site, "/new", "#new-form")
    currency = Select(browser.find_element(By.ID, "new-currency"))
    assert [o.text for o in currency.options] == ["XMR", "EUR", "USD"]
    expiry = Select(browser.find_element(By.ID, "new-expires"))
    assert expiry.first_selected_option.text == "never"

    currency.select_by_value("USD")  # no provider prices it: the form says so before a 503
    hint = texts(browser, "#new-amount-hint")[0]
    assert hint.startswith("No fresh USD rate now, so the gateway refuses prices in USD: ")

    currency.select_by_value("EUR")
    hint = texts(browser, "#new-amount-hint")[0]
    assert "now 1 XMR = 150.125 EUR, from coingecko, kraken)" in hint
    assert expiry.first_selected_option.text == "when the rate lock ends"
    assert browser.find_element(By.ID, "new-amount").get_attribute("placeholder") == "19.99"

    site.posted.clear()
    browser.find_element(By.ID, "new-amount").send_keys("19,90")
    browser.find_element(By.ID, "new-description").send_keys("two teas")
    browser.find_element(By.ID, "new-submit").click()
    deadline = time.monotonic() + 20
    while not texts(browser, "#req-price") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert texts(browser, "#req-price") == ["19.90 EUR"], texts(browser, "#main")
    ((body, idempotency_key),) = site.posted
    assert body == {"price": {"amount": "19.90", "currency": "EUR"}, "description": "two teas"}
    assert idempotency_key
