"""Prices in fiat on the pages, in headless Chromium against a real gateway.

The gateway runs with ``--rate-currencies EUR`` and its real rate sources pointed at the
fake providers on loopback (``testsupport/fake_rates.py``): 150.12, 150.13 and 150.14
EUR per XMR, so the rate is their median, 150.13.

- A request priced at 19.99 EUR: its checkout page shows the XMR amount the gateway
  worked out, "19.99 EUR" beside it and the locked rate with the lock's end in the
  browser's time zone (UTC+05:30 here, so that a page left in UTC would show), under
  its strict CSP (no console error), still polling ``status.json``.
- The dashboard's form offers EUR, creates a request priced at 12.50 EUR, and the
  request's page and the list show that price; the API agrees.

Nothing is paid: the API's handling of paid fiat requests is tested elsewhere, on both
databases; one SQLite gateway keeps this module to one wallet. The phone screenshot of
the checkout goes to ``test-artifacts/checkout/fiat-phone.png``, and to
``docs/img/checkout-fiat.png`` when XMRGATE_UPDATE_DOC_IMAGES=1.
"""

# ruff: noqa: F811

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.support.select import Select

from tests.integration.test_admin_browser import css, text_of, wait_for

# The checkout test's Chromium fixture; tests name it as a parameter (hence F811 above).
from tests.integration.test_checkout_browser import (  # noqa: F401
    PHONE,
    browser,
    console_errors,
    emulate,
    screenshot,
)
from testsupport.fake_rates import FakeRates
from testsupport.gateway import Gateway, close_gateway, start_gateway
from xmrgate.devnet import Devnet
from xmrgate.domain.fiat import Price, piconero_for
from xmrgate.domain.money import piconero_to_xmr

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
RATE = Decimal("150.13")  # the median of the three providers' answers below
TIMEZONE = "Asia/Kolkata"  # UTC+05:30: local minutes differ from UTC's
OFFSET = timedelta(hours=5, minutes=30)

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture(scope="module")
def fiat_gateway(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A SQLite gateway pricing in EUR, its sources on the fake providers, with a rate."""
    with FakeRates() as fake:
        for provider, value in (("coingecko", "150.12"), ("kraken", "150.13")):
            fake.set(provider, "EUR", value)
        fake.set("cryptocompare", "EUR", "150.14")
        args = ["--rate-currencies", "EUR", "--rate-source-url", fake.option()]
        gw = start_gateway(devnet, "sqlite", tmp_path_factory.mktemp("fiat"), args)
        try:
            # The book asks the sources at start-up; the first answers take a moment.
            gw.wait_for(
                "a EUR rate",
                lambda: gw.get("/rates", params={"currency": "EUR"}).json(),
                lambda body: body.get("rate") == str(RATE),
                30,
            )
            yield gw
        finally:
            close_gateway(gw)


@pytest.fixture(autouse=True)
def local_time(browser: WebDriver) -> None:
    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": TIMEZONE})


def local_clock_texts(iso: str) -> set[str]:
    """How the lock's end may read in UTC+05:30: 24 h or 12 h, with or without a leading 0."""
    local = datetime.fromisoformat(iso) + OFFSET
    h12 = local.hour % 12 or 12
    return {f"{local.hour:02}:{local.minute:02}", f"{h12}:{local.minute:02}"}


def test_checkout_shows_the_fiat_price_beside_the_xmr_amount(
    fiat_gateway: Gateway, browser: WebDriver
) -> None:
    r = fiat_gateway.post(
        "/receive",
        json={"price": {"amount": "19.99", "currency": "EUR"}, "description": "2 coffees"},
    )
    assert r.status_code == 200, r.text
    made = r.json()
    address, amount = made["address"], made["amount"]
    assert amount == piconero_for(Price(Decimal("19.99"), "EUR"), RATE)
    assert made["price"]["rate"] == str(RATE)

    emulate(browser, PHONE)
    browser.get(f"{fiat_gateway.url}/pay/{address}")
    assert text_of("#amount")(browser) == piconero_to_xmr(amount)
    assert text_of(".big")(browser) == f"{piconero_to_xmr(amount)} XMR"
    assert text_of("#price-amount")(browser) == "19.99 EUR"
    assert browser.title == f"Pay {piconero_to_xmr(amount)} XMR (19.99 EUR)"

    # The lock's end: the request's expiry, rewritten by the script in local time.
    lock = css(browser, "#price-lock")[0]
    expires_at = fiat_gateway.status(address)["expires_at"]
    assert lock.get_attribute("datetime") == expires_at
    assert (lock.get_attribute("title") or "").endswith(" UTC")  # the text without script
    rate_line = text_of("#price-rate")(browser)
    assert rate_line.startswith("Rate 1 XMR = 150.13 EUR, locked until ")
    assert "UTC" not in rate_line
    assert any(t in rate_line for t in local_clock_texts(expires_at)), rate_line

    # Still polling status.json (the page's script runs under its CSP), and nothing refused.
    wait_for(
        browser,
        "a poll of status.json",
        lambda d: d.execute_script(
            "return performance.getEntriesByType('resource')"
            ".filter(e => e.name.endsWith('/status.json')).length;"
        ),
        15,
    )
    assert "Waiting for payment" in text_of("#status")(browser)
    assert console_errors(browser) == []

    shot = screenshot(browser, "fiat-phone")
    # The committed doc image changes only when asked, as the other checkout images do.
    if os.environ.get("XMRGATE_UPDATE_DOC_IMAGES") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_IMG / "checkout-fiat.png")


def test_dashboard_creates_a_fiat_priced_request(fiat_gateway: Gateway, browser: WebDriver) -> None:
    emulate(browser, (1280, 800))
    browser.get(f"{fiat_gateway.url}/admin#/new")
    wait_for(browser, "the form", lambda d: css(d, "#new-currency"), 30)
    currency = Select(css(browser, "#new-currency")[0])
    assert [o.text for o in currency.options] == ["XMR", "EUR"]
    currency.select_by_value("EUR")
    assert "now 1 XMR = 150.13 EUR, from coingecko, kraken, cryptocompare)" in (
        text_of("#new-amount-hint")(browser)
    )
    css(browser, "#new-amount")[0].send_keys("12.50")
    css(browser, "#new-description")[0].send_keys("a fiat-priced order")
    css(browser, "#new-submit")[0].click()

    address = wait_for(browser, "the new request's page", text_of("#req-address"), 30)
    wait_for(browser, "its price", text_of("#req-price"), 15, lambda t: t == "12.50 EUR")
    assert text_of("#req-rate")(browser) == "1 XMR = 150.13 EUR"
    expected = piconero_for(Price(Decimal("12.50"), "EUR"), RATE)
    assert text_of("#req-expected")(browser) == f"{piconero_to_xmr(expected)} XMR"
    body = fiat_gateway.status(address)
    assert body["amount"]["expected"] == expected
    assert body["price"]["amount"] == "12.50" and body["price"]["currency"] == "EUR"
    assert body["description"] == "a fiat-priced order"

    browser.get(f"{fiat_gateway.url}/admin#/requests")
    row = f'#request-list tr[data-address="{address}"]'
    wait_for(browser, "the request in the list", lambda d: css(d, row), 30)
    assert text_of(f"{row} .fiat")(browser) == "12.50 EUR"
    assert console_errors(browser) == []
