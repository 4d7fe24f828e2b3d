"""The dashboard's overview in headless Chromium, fed a canned ``GET /status``.

A small HTTP server serves the real shell and static files, and a ``/status`` body made
by the real ``overview_json`` from an ``OverviewReport``. Two things are checked:

- amounts beyond 2^53 piconero show exactly where ``JSON.parse`` gives its reviver no
  source text (browsers before 2023): the page's ``JSON.parse`` is replaced, before any
  script of the page runs, by one that drops the reviver's third argument;
- with ``--daemon-address`` the wallet card shows monerod's height and how far the
  wallet is behind it; without, nothing about a daemon;
- stores: when ``GET /status`` answers 404 (a store key; the operator on another store)
  the overview is the store's own (balance, health, latest requests, chart), exact and
  without an error; an operator's chosen store goes with every later call as
  ``X-Xmrgate-Store`` (the list of stores itself goes without it).

Needs Debian's chromium and chromium-driver; fails (never skips) without them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from testsupport.browser import chromium
from xmrgate.core.overview import DaemonFacts, OverviewReport, StoreFacts
from xmrgate.core.wallet_status import HealthReport
from xmrgate.domain.money import piconero_to_xmr
from xmrgate.web.admin.routes import shell, static_file
from xmrgate.web.api.status import overview_json

pytestmark = pytest.mark.browser

TOTAL = 2**64 - 1  # 18446744.073709551615 XMR: a float shows 18446744.073709551616
UNLOCKED = 2**53 + 1
# Runs before the page's scripts: notes whether this Chromium passes the source text
# (so the test shows the override matters), then takes it away as older browsers do.
NO_SOURCE_TEXT = """
window.__hadSourceText = false;
JSON.parse("1", function (k, v, context) {
  window.__hadSourceText = !!(context && typeof context.source === "string");
  return v;
});
(function () {
  var parse = JSON.parse;
  JSON.parse = function (text, reviver) {
    if (typeof reviver !== "function") { return parse(text); }
    return parse(text, function (key, value) { return reviver.call(this, key, value); });
  };
})();
"""


def report(daemon: DaemonFacts | None) -> OverviewReport:
    return OverviewReport(
        health=HealthReport(200, {"wallet": True, "database": True}, wallet_mode="full"),
        balance=(TOTAL, UNLOCKED),
        wallet_height=1000,
        facts=StoreFacts(998, 0, 0, {"waiting": 1}),
        problems=[],
        daemon=daemon,
    )


NOT_FOUND = {"status": 404, "message": "not found"}
STORES = [
    {"id": "default", "name": "Default store", "wallet": {"account": 0}, "enabled": True},
    {"id": "shop-b", "name": "Shop B", "wallet": {"account": 1}, "enabled": True},
]
STORE_REQUEST = {
    "address": "4" + "A" * 94,
    "amount": TOTAL,
    "description": "an order",
    "created_at": "2026-11-20T10:00:00Z",
    "expires_at": None,
    "status": "waiting",
}


class Site:
    """The shell, its static files and the answers the test sets: ``/status`` (None: 404),
    ``/stores`` (status code and body); every API call's ``X-Xmrgate-Store`` is noted."""

    def __init__(self) -> None:
        self.status: dict[str, Any] | None = overview_json(report(None))
        self.stores: tuple[int, dict[str, Any]] = (404, NOT_FOUND)  # a gateway without stores
        self.calls: list[tuple[str, str | None]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            # TCP_NODELAY: http.server writes the headers and the body apart, and without
            # it the body waits for the client's delayed ACK of the headers (40 ms each).
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/admin":
                    self._send(shell(), "text/html; charset=utf-8")
                    return
                if path.startswith("/admin/static/"):
                    found = static_file(path.rsplit("/", 1)[1])
                    self._send(found.body, found.media_type)
                    return
                if path == "/blank":  # this origin, without the dashboard
                    self._send(b"<!doctype html><title>blank</title>", "text/html")
                    return
                site.calls.append((path, self.headers.get("X-Xmrgate-Store")))
                # json.dumps writes Python's ints exactly, as the gateway does.
                answers: dict[str, tuple[int, Any]] = {
                    "/status": (200, site.status) if site.status else (404, NOT_FOUND),
                    "/received/daily": (200, {"days": []}),
                    "/stores": site.stores,
                    "/balance": (200, {"total": TOTAL, "unlocked": UNLOCKED}),
                    "/health": (200, {"status": 200, "services": {"walletrpc": True}}),
                    "/receive": (200, {"requests": [STORE_REQUEST], "next_cursor": None}),
                }
                code, body = answers.get(path, (404, NOT_FOUND))
                self._send(json.dumps(body).encode(), "application/json", code)

            def _send(self, body: bytes, media_type: str, code: int = 200) -> None:
                self.send_response(code)
                self.send_header("Content-Type", media_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # shutdown() waits for serve_forever to look again: every 0.5 s unless told.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    served = Site()
    try:
        yield served
    finally:
        served.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """Headless Chromium without the reviver's source text (see NO_SOURCE_TEXT)."""
    with chromium(tmp_path_factory, (1280, 800)) as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": NO_SOURCE_TEXT})
        yield driver


def texts(driver: WebDriver, selector: str) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]


def overview(driver: WebDriver, site: Site) -> None:
    """Load the overview afresh and wait until it is drawn (or say what the page shows)."""
    driver.get("about:blank")  # the same URL again would only be a fragment navigation
    driver.get(f"{site.url}/admin#/")
    deadline = time.monotonic() + 20
    while not texts(driver, "#card-wallet") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert texts(driver, "#card-wallet"), f"no overview drawn: {texts(driver, '#main')}"


def test_amounts_beyond_2_53_are_exact_without_the_revivers_source_text(
    browser: WebDriver, site: Site
) -> None:
    site.status = overview_json(report(None))
    overview(browser, site)
    assert browser.execute_script("return window.__hadSourceText") is True
    assert browser.execute_script('return JSON.parse("1", (k, v, c) => c === undefined)')
    assert texts(browser, "#balance-total") == [f"{piconero_to_xmr(TOTAL)} XMR"]
    assert texts(browser, "#balance-total")[0].startswith("18446744.073709551615")
    assert texts(browser, "#balance-unlocked") == [f"{piconero_to_xmr(UNLOCKED)} XMR"]


def test_wallet_card_shows_the_wallet_against_the_daemon(browser: WebDriver, site: Site) -> None:
    site.status = overview_json(report(DaemonFacts(height=1040)))
    overview(browser, site)
    assert texts(browser, "#daemon-height") == ["1040"]
    assert texts(browser, "#wallet-behind-daemon") == ["40 blocks"]
    behind = browser.find_element(By.ID, "wallet-behind-daemon")
    assert behind.get_attribute("class") == "bad"

    site.status = overview_json(report(DaemonFacts(height=None)))
    overview(browser, site)
    assert texts(browser, "#daemon-height") == ["unknown (monerod did not answer)"]
    assert texts(browser, "#wallet-behind-daemon") == ["unknown"]


def test_without_a_daemon_address_the_card_says_nothing_of_a_daemon(
    browser: WebDriver, site: Site
) -> None:
    site.status = overview_json(report(None))
    overview(browser, site)
    assert texts(browser, "#sync-behind") == ["2 blocks"]
    assert not texts(browser, "#daemon-height")
    assert "aemon" not in texts(browser, "#card-wallet")[0]


def fresh(driver: WebDriver, site: Site, fragment: str, **storage: str) -> None:
    """Open the dashboard at ``fragment`` in a tab whose sessionStorage holds ``storage``."""
    driver.get(f"{site.url}/blank")
    driver.execute_script(
        "sessionStorage.clear();"
        "Object.entries(arguments[0]).forEach(([k, v]) => sessionStorage.setItem(k, v));",
        storage,
    )
    site.calls.clear()
    driver.get(f"{site.url}/admin#{fragment}")


def wait(driver: WebDriver, selector: str, what: str) -> None:
    deadline = time.monotonic() + 20
    while not texts(driver, selector) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert texts(driver, selector), f"no {what}: {texts(driver, '#main')}"


def test_without_status_the_overview_is_the_stores_own(browser: WebDriver, site: Site) -> None:
    """A store key: /stores 403, /status 404: no switcher, the store's figures, no error."""
    site.status = None
    site.stores = (403, {"status": 403, "message": "this API key lacks the 'admin' scope"})
    try:
        fresh(browser, site, "/", **{"xmrgate.apiKey": "xgs_" + "k" * 40})
        wait(browser, "#store-note", "store overview")
    finally:
        site.status = overview_json(report(None))
        site.stores = (404, NOT_FOUND)
    assert texts(browser, "#balance-total") == [f"{piconero_to_xmr(TOTAL)} XMR"]
    assert texts(browser, "#health-status") == ["Healthy"]
    latest = browser.find_elements(By.CSS_SELECTOR, "#latest-list li")
    assert [e.get_attribute("data-address") for e in latest] == [STORE_REQUEST["address"]]
    assert texts(browser, "#received h2") == ["Received per day, last 30 days"]
    assert texts(browser, "#main .notice.error") == []
    assert texts(browser, "#store-select") == []
    assert texts(browser, "#store-name") == ["this key's own store"]
    assert {store for _, store in site.calls} == {None}


def test_the_chosen_store_goes_with_every_call(browser: WebDriver, site: Site) -> None:
    """An operator (/stores 200) picks shop-b: each later call names it, /stores never."""
    site.stores = (200, {"stores": STORES})
    try:
        fresh(browser, site, "/")
        wait(browser, "#store-select", "switcher")
        wait(browser, "#card-wallet", "overview")
        assert [store for _, store in site.calls] == [None] * len(site.calls)
        site.calls.clear()
        Select(browser.find_element(By.ID, "store-select")).select_by_value("shop-b")
        deadline = time.monotonic() + 20
        while len({p for p, _ in site.calls}) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert {p for p, _ in site.calls} >= {"/status", "/received/daily"}, site.calls
        assert {store for _, store in site.calls} == {"shop-b"}, site.calls
        assert browser.execute_script("return sessionStorage.getItem('xmrgate.store')") == "shop-b"

        browser.refresh()
        wait(browser, "#card-wallet", "overview after a reload")
        assert ("/stores", None) in site.calls
        assert {s for p, s in site.calls if p != "/stores"} == {"shop-b"}, site.calls
        assert Select(browser.find_element(By.ID, "store-select")).first_selected_option.text == (
            "Shop B · shop-b"
        )
    finally:
        site.stores = (404, NOT_FOUND)
