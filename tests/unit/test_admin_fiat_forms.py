"""Fiat amounts in the dashboard's refund and link forms in headless Chromium,
on the real app (``create_app`` served by uvicorn on loopback) over the real use cases on
fakes, with a real ``RateBook`` fed by a fixed source (1 XMR = 150 EUR, 160 USD;
``test_pos_api.FixedSource``) as the refunds' and links' pricing and ``GET /rates``:

- The Refund form offers XMR and the gateway's currencies; a refund typed in EUR ("7,50")
  goes as ``price``, the gateway converts it and the panel shows the XMR it reserved
  (0.05 XMR) beside the price; the refund list shows the price under the amount. More
  EUR than the request received is the gateway's 409, shown in the panel.
- The New link form's open amount is typed in XMR or a currency, its minimum in the same
  unit: EUR with "5" makes ``{"currency": "EUR", "min_price": "5"}`` (no expiry sent: the
  rate lock is the gateway's default), the list shows "at least 5.00 EUR", and the link's
  public page says "At least 5.00 EUR.".

Screenshots go to ``test-artifacts/admin/fiat-*.png``. Needs Debian's chromium and
chromium-driver; fails (never skips) without them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.support.select import Select

from tests.unit import test_admin_refunds as refund_pages
from tests.unit.fakes import (
    AllowAll,
    FakeJournal,
    FakeOutbox,
    FakePaymentStore,
    FakeWallet,
)
from tests.unit.gateway_builder import fake_app, fake_gateway
from tests.unit.test_pos_api import FixedSource
from testsupport.admin_page import page_errors, screenshots, text
from testsupport.browser import chromium, click, shown, wait_for
from testsupport.fake_links import FakeLinkPool, FakeLinkStore, LinkBook
from testsupport.fake_refunds import FakeRefundStore, RefundBook
from testsupport.page_shots import DESKTOP
from testsupport.served_app import ServedApp
from xmrgate.config import Settings
from xmrgate.core.links import Links
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.payouts import Payouts
from xmrgate.core.rates import RateBook
from xmrgate.core.refunds import Refunds
from xmrgate.core.wallet_status import WalletIdentity

pytestmark = pytest.mark.browser

XMR = 10**12


def fixed_rates() -> RateBook:
    """A real RateBook over one source answering 150 EUR and 160 USD, refreshed once."""
    book = RateBook(
        [FixedSource()], ["EUR", "USD"], refresh=60, max_age=600, max_spread=0.05, min_sources=1
    )
    asyncio.run(book.refresh_once())
    return book


class Site(refund_pages.Site):
    """``test_admin_refunds``' site (its ``request`` and ``refund`` helpers), its refunds
    and links priced by the rate book, which ``GET /rates`` answers too."""

    def __init__(self) -> None:  # builds its own app: the parent's has no rates
        self.rates = fixed_rates()
        self.book = RefundBook()
        self.payments = refund_pages.Payments(book=self.book)
        self.wallet = FakeWallet()
        identity = WalletIdentity()
        payouts = Payouts(self.wallet, FakeJournal(), priority=0, timeout=5)
        self.refunds = Refunds(FakeRefundStore(self.book), payouts, self.wallet, pricing=self.rates)
        self.link_book = LinkBook()
        link_requests = PaymentRequests(
            FakeWallet(),
            FakePaymentStore(requests=self.link_book.requests),
            FakeOutbox(),
            AllowAll(),
            pool=FakeLinkPool(self.link_book),
            pricing=self.rates,
        )
        self.links = Links(
            FakeLinkStore(self.link_book),
            link_requests,
            AllowAll(),
            pricing=self.rates,
            currencies=self.rates.currencies,
            rate_lock=900,
        )

        gateway = fake_gateway(
            wallet=self.wallet,
            payment_requests=PaymentRequests(self.wallet, self.payments, FakeOutbox(), AllowAll()),
            payouts=payouts,
            identity=identity,
            refunds=self.refunds,
            links=self.links,
            rates=self.rates,
        )
        ServedApp.__init__(self, fake_app(Settings(), gateway))


@pytest.fixture
def site(browser: WebDriver) -> Iterator[Site]:
    with Site() as served:
        yield served
        # Leave its page before its server stops: a refresh due meanwhile would log a
        # refused connection that the next test's page_errors would read as its own.
        browser.get("about:blank")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, DESKTOP, console=True) as driver:
        yield driver


def options(driver: WebDriver, selector: str) -> list[str]:
    return [o.text for o in Select(shown(driver, selector)).options]


def test_a_refund_typed_in_euros(browser: WebDriver, site: Site) -> None:
    address = site.request(XMR)  # 1 XMR received: 150 EUR at the rate
    browser.get(f"{site.url}/admin#/request/{address}")
    click(browser, "#refund-open")
    assert options(browser, "#refund-currency") == ["XMR", "EUR", "USD"]
    amount = shown(browser, "#refund-amount")
    assert amount.get_attribute("value") == "1"  # XMR first: all that is refundable
    Select(shown(browser, "#refund-currency")).select_by_value("EUR")
    assert amount.get_attribute("value") == ""  # typed afresh in EUR
    assert "now 1 XMR = 150 EUR" in text(browser, "#refund-amount-hint")

    amount.send_keys("200")  # 1.333 XMR: more than it received
    click(browser, "#refund-submit")
    refused = wait_for(browser, "the 409", lambda: text(browser, "#refund-error"))
    assert "HTTP 409" in refused, refused
    assert not site.book.refunds

    amount.clear()
    amount.send_keys("7,50")
    shown(browser, "#refund-reason").send_keys("one cup broken")
    click(browser, "#refund-submit")
    wait_for(browser, "the price made", lambda: text(browser, "#made-price") == "7.50 EUR")
    assert text(browser, "#made-amount") == "0.05 XMR"  # what the gateway converted
    assert "7.50 EUR is 0.05 XMR at the gateway's rate now" in text(browser, "#made-converted")
    ((refund_id, made),) = site.book.refunds.items()
    assert made.amount == XMR // 20 and made.price == {"amount": "7.50", "currency": "EUR"}
    wait_for(
        browser,
        "the price in the list",
        lambda: "7.50 EUR" in text(browser, f'tr[data-refund="{refund_id}"] td.num'),
    )
    screenshots(browser, "fiat-refund")
    assert page_errors(browser, 409) == []


def test_an_open_link_with_a_minimum_in_euros(browser: WebDriver, site: Site) -> None:
    browser.get(f"{site.url}/admin#/links")
    click(browser, "#link-new")
    shown(browser, "#link-title").send_keys("Tips")
    click(browser, "#link-kind-open")
    assert options(browser, "#link-currency") == ["XMR", "EUR", "USD"]
    assert text(browser, 'label[for="link-min"]') == "Minimum (XMR)"
    Select(shown(browser, "#link-currency")).select_by_value("EUR")
    assert text(browser, 'label[for="link-min"]') == "Minimum (EUR)"
    life = Select(shown(browser, "#link-life"))
    assert life.first_selected_option.text == "as long as the rate lock"
    shown(browser, "#link-min").send_keys("5")
    click(browser, "#link-submit")
    url = str(shown(browser, "#made-url").get_attribute("value"))

    ((link_id, link),) = site.link_book.links.items()
    assert (link.fields.currency, link.fields.min_price, link.fields.min_amount) == (
        "EUR",
        "5.00",
        None,
    )
    assert link.fields.expires_in == 900  # the rate lock, the gateway's default for fiat
    kind = f'#link-list tr[data-link="{link_id}"] [data-kind="open"]'
    wait_for(browser, "the link listed", lambda: text(browser, kind))
    assert text(browser, kind) == "open amount in EUR\nat least 5.00 EUR"
    screenshots(browser, "fiat-link")
    assert page_errors(browser) == []

    browser.get(url)  # the public page: the minimum in its currency
    assert text(browser, "#amount-min") == "At least 5.00 EUR."
