"""Refunds on the dashboard in headless Chromium, on the real app over fakes.

Each test serves the real app (``create_app``: the shell, the API routes, the error
handlers) on loopback with uvicorn, over a ``Gateway`` whose use cases are the real ones
on in-memory fakes: payment requests (``FakePaymentStore``, its ``refunded`` read from
the refund book as the SQL store reads its column), refunds (``Refunds`` on
``FakeRefundStore``), payouts (``Payouts`` on ``FakeJournal``) and one ``FakeWallet``. A
customer's claim is made through the ``Refunds`` use case on the server's own loop.

- A request that received money has a Refund button; its form makes a refund and shows
  the claim link once, with a copy button, through the page's redraws; a reload does not
  show it again. A request that received nothing has no button.
- The Refunds page lists the claimed refund (waiting for approval) first, with its
  request, the claim address and the actions it allows.
- Send moves a claimed refund to sent (the wallet sent it once, to the claimed address);
  on a view-only wallet it shows the gateway's 409 message and stays claimed; a send
  whose outcome is unknown (504) says so and leaves it "sending".
- Record paid by hand (tx hash, tx key checked by check_tx_key) and Cancel.

Screenshots go to ``test-artifacts/admin/refunds-*.png``; ``docs/img/admin-refunds.png``
is refreshed when XMRGATE_UPDATE_DOC_IMAGES=1. Needs Debian's chromium and
chromium-driver; fails (never skips) without them.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from selenium.webdriver import Chrome as WebDriver

from tests.unit.fakes import (
    AllowAll,
    FakeJournal,
    FakeOutbox,
    FakePaymentStore,
    FakeWallet,
)
from tests.unit.gateway_builder import fake_app, fake_gateway
from testsupport.admin_page import look_again, page_errors, screenshots, text
from testsupport.browser import chromium, click, css, shown, wait_for
from testsupport.fake_refunds import FakeRefundStore, RefundBook
from testsupport.monero_addresses import fake_address
from testsupport.page_shots import DESKTOP
from testsupport.served_app import ServedApp
from xmrgate.config import Settings
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.payouts import Payouts
from xmrgate.core.refunds import RefundAsk, Refunds
from xmrgate.core.wallet_mode import VIEW_ONLY_REFUSAL
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.errors import WalletTimeout
from xmrgate.domain.ledger import Transfer, TransferState
from xmrgate.domain.records import PaymentRequest, PaymentStatus
from xmrgate.domain.refunds import Refund
from xmrgate.domain.wallet_answers import TxKeyCheck

pytestmark = pytest.mark.browser

XMR = 10**12


@dataclass
class Payments(FakePaymentStore):
    """Payment requests whose ``refunded`` is what the refund book reserves (the SQL store
    keeps both in one table), at a chain height the test moves."""

    book: RefundBook = field(default_factory=RefundBook)
    height: int = 100

    async def status(self, address: str) -> PaymentStatus | None:
        found = await super().status(address)
        if found is None:
            return None
        held = self.book.requests.get(address)
        request = replace(found.request, refunded=held.refunded if held else 0)
        return PaymentStatus(request, found.transfers, self.height)


class Site(ServedApp):
    """The app over fakes, served by uvicorn on its own loop in a thread."""

    def __init__(self) -> None:
        self.book = RefundBook()
        self.payments = Payments(book=self.book)
        self.wallet = FakeWallet()
        self.journal = FakeJournal()
        identity = WalletIdentity()
        payouts = Payouts(self.wallet, self.journal, priority=0, timeout=5)
        self.refunds = Refunds(FakeRefundStore(self.book), payouts, self.wallet)

        gateway = fake_gateway(
            wallet=self.wallet,
            payment_requests=PaymentRequests(self.wallet, self.payments, FakeOutbox(), AllowAll()),
            payouts=payouts,
            identity=identity,
            refunds=self.refunds,
        )
        super().__init__(fake_app(Settings(), gateway))

    def request(self, received: int, expected: int = XMR) -> str:
        """A request that received ``received`` piconero in one unlocked transfer."""
        address = fake_address("mainnet", "subaddress")
        held = self.book.add_request(address, received)
        self.payments.requests[address] = PaymentRequest(
            id=held.id,
            address=address,
            subaddr_index=held.id,
            amount=expected,
            description=f"order {held.id}",
            callback_url=None,
            return_url=None,
            created_at=datetime.now(UTC) - timedelta(hours=2),
            created_height=80,
        )
        if received:
            self.payments.transfers[address] = [
                Transfer(
                    tx_hash=f"{held.id:02d}" + "ab" * 31,
                    subaddr_index=held.id,
                    amount=received,
                    fee=30_000_000,
                    height=85,
                    timestamp=int(time.time()) - 3600,
                    unlock_time=0,
                    double_spend_seen=False,
                    state=TransferState.UNLOCKED,
                )
            ]
        return address

    def refund(self, address: str, amount: int, reason: str = "", claim: bool = False) -> Refund:
        """A refund made (and claimed by a customer when ``claim``) through the use case."""
        made = self.run(self.refunds.create(RefundAsk(address, amount=amount, reason=reason)))
        if not claim:
            return made.refund
        return self.run(self.refunds.claim(made.refund.id, fake_address("mainnet", "standard")))

    def status_of(self, refund_id: str) -> str:
        return self.book.refunds[refund_id].status.value


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


# ------------------------------------------------------------------ helpers

# The pages redraw whenever an answer changes (after each action too): what the tests
# read is read in one script (atomic against the page's own code), and clicks retry on
# an element that a redraw replaced.
ROWS_JS = """
return Array.from(document.querySelectorAll(arguments[0])).map(function (r) {
  return {id: r.getAttribute("data-refund"), status: r.getAttribute("data-status"),
    text: r.innerText, bold: r.querySelectorAll("b").length,
    actions: Array.from(r.querySelectorAll("button")).map(function (b) {
      return b.getAttribute("data-action"); }),
    titles: Array.from(r.querySelectorAll("[title]")).map(function (e) {
      return e.getAttribute("title"); }),
    links: Array.from(r.querySelectorAll("a")).map(function (a) {
      return a.getAttribute("href"); })};
});
"""


def rows(driver: WebDriver, selector: str = "tr[data-refund]") -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = driver.execute_script(ROWS_JS, selector)
    return found


def row(driver: WebDriver, refund_id: str) -> dict[str, Any]:
    (found,) = rows(driver, f'tr[data-refund="{refund_id}"]')
    return found


def row_status(driver: WebDriver, refund_id: str) -> str | None:
    found = rows(driver, f'tr[data-refund="{refund_id}"]')
    return found[0]["status"] if found else None  # type: ignore[no-any-return]


def wait_status(driver: WebDriver, refund_id: str, status: str) -> None:
    wait_for(
        driver, f"refund {refund_id} {status}", lambda: row_status(driver, refund_id) == status
    )


def open_page(driver: WebDriver, site: Site, fragment: str, ready: str) -> None:
    driver.get(f"{site.url}/admin#{fragment}")
    shown(driver, ready)


def act(driver: WebDriver, refund_id: str, action: str) -> None:
    click(driver, f'button[data-action="{action}"][data-refund="{refund_id}"]')


# ------------------------------------------------------------------ the tests


def test_a_refund_made_on_the_request_page_shows_its_link_once(
    browser: WebDriver, site: Site
) -> None:
    address = site.request(XMR)
    open_page(browser, site, f"/request/{address}", "#refund-open")
    assert text(browser, "#no-refunds") == "No refunds."
    click(browser, "#refund-open")
    amount = shown(browser, "#refund-amount")
    assert amount.get_attribute("value") == "1"  # all it received, nothing refunded yet
    amount.clear()
    amount.send_keys("0.25")
    shown(browser, "#refund-reason").send_keys("one cup broken <b>")
    click(browser, "#refund-submit")

    link = shown(browser, "#claim-url")
    url = link.get_attribute("value") or ""
    match = re.fullmatch(re.escape(site.url) + r"/refund/([A-Za-z0-9_-]{32})", url)
    assert match, url
    digest = hashlib.sha256(match.group(1).encode()).hexdigest()
    (refund_id,) = site.book.refunds
    assert site.book.digests[digest] == refund_id
    made = site.book.refunds[refund_id]
    assert (made.amount, made.reason) == (XMR // 4, "one cup broken <b>")
    assert text(browser, "#made-id") == refund_id
    assert text(browser, "#made-amount") == "0.25 XMR"
    assert "shown only now" in text(browser, "#link-once")
    assert "will not show it again" in text(browser, "#link-once")
    click(browser, "#copy-link")
    said = wait_for(browser, "copy feedback", lambda: text(browser, "#copy-said"))
    assert said == "Copied." or said.startswith("Selected"), said

    # The page shows the refund and what is refunded; the link stays through redraws.
    wait_status(browser, refund_id, "open")
    wait_for(browser, "0.25 refunded", lambda: text(browser, "#req-refunded") == "0.25 XMR")
    shown_row = row(browser, refund_id)
    assert "one cup broken <b>" in shown_row["text"]  # as text, never as HTML
    assert shown_row["bold"] == 0
    assert shown_row["actions"] == ["cancel"]
    before = text(browser, "#tx-list td:nth-child(3)")
    site.payments.height += 1  # one more confirmation: the page redraws
    look_again(browser)  # now, not at its next refresh (3 s)
    wait_for(browser, "a redraw", lambda: text(browser, "#tx-list td:nth-child(3)") != before)
    assert shown(browser, "#claim-url").get_attribute("value") == url
    screenshots(browser, "refund-link")

    # Gone once closed; a reload shows the refund, never its link.
    click(browser, "#refund-panel button.secondary")
    assert not css(browser, "#claim-url")
    browser.refresh()
    wait_status(browser, refund_id, "open")
    assert match.group(1) not in browser.page_source
    click(browser, "#refund-open")
    assert shown(browser, "#refund-amount").get_attribute("value") == "0.75"

    # Nothing received: nothing to refund, no button.
    empty = site.request(0)
    open_page(browser, site, f"/request/{empty}", "#no-refunds")
    assert css(browser, "#refund-open") == []
    assert page_errors(browser) == []


def test_the_refunds_page_lists_the_claimed_ones_first(browser: WebDriver, site: Site) -> None:
    address = site.request(XMR)
    claimed = site.refund(address, XMR // 10, "wrong size", claim=True)
    fresh = site.refund(address, XMR // 5)  # newer, yet after the claimed one
    open_page(browser, site, "/refunds", "#refund-list")
    listed = rows(browser, "#refund-list tbody tr")
    assert [r["id"] for r in listed] == [claimed.id, fresh.id]
    assert [r["status"] for r in listed] == ["claimed", "open"]
    assert "waiting for your approval" in listed[0]["text"]
    assert "0.1 XMR" in listed[0]["text"] and "0.2 XMR" in listed[1]["text"]
    assert claimed.claim_address in listed[0]["titles"]
    assert "not claimed yet" in listed[1]["text"]
    assert listed[0]["links"] == [f"#/request/{address}"] and address in listed[0]["titles"]
    assert [r["actions"] for r in listed] == [["send", "paid", "cancel"], ["cancel"]]
    assert "1 refund waits for your approval." in text(browser, "#refund-results")
    assert "null" not in text(browser, "#refund-results")
    nav = css(browser, '#nav a[aria-current="page"]')
    assert [a.text for a in nav] == ["Refunds"]
    # The store header, as on every page: an operator picks among the stores.
    assert css(browser, "#store-select")[0].get_attribute("value") == "default"
    assert page_errors(browser) == []


def test_send_moves_a_claimed_refund_to_sent(browser: WebDriver, site: Site) -> None:
    address = site.request(XMR)
    claimed = site.refund(address, XMR // 2, claim=True)
    open_page(browser, site, "/refunds", "#refund-list")
    act(browser, claimed.id, "send")
    assert shown(browser, "#send-to").text == claimed.claim_address
    assert site.wallet.sent == []  # nothing before the confirmation
    click(browser, "#send-confirm")
    wait_status(browser, claimed.id, "sent")
    assert site.status_of(claimed.id) == "sent"
    assert site.wallet.sent == [[{"amount": XMR // 2, "address": claimed.claim_address}]]
    sent = site.book.refunds[claimed.id]
    assert text(browser, "#refund-panel h2") == "Refund sent"
    assert shown(browser, "#sent-tx .mono").get_attribute("title") == sent.tx_hash_list[0]
    shown_row = row(browser, claimed.id)
    assert shown_row["actions"] == []  # nothing more to do with it
    assert sent.tx_hash_list[0] in shown_row["titles"]
    assert page_errors(browser) == []


def test_send_on_a_view_only_wallet_shows_the_409(browser: WebDriver, site: Site) -> None:
    site.wallet.view_only = True
    address = site.request(XMR)
    claimed = site.refund(address, XMR // 2, claim=True)
    open_page(browser, site, "/refunds", "#refund-list")
    act(browser, claimed.id, "send")
    click(browser, "#send-confirm")
    error = shown(browser, "#refund-error").text
    assert VIEW_ONLY_REFUSAL in error and error.endswith("(HTTP 409)"), error
    assert site.status_of(claimed.id) == "claimed" and site.wallet.sent == []
    assert shown(browser, "#send-confirm").is_enabled()
    assert row_status(browser, claimed.id) == "claimed"
    # The way out on a view-only wallet: pay by hand, then record it.
    tx_hash, tx_key = "c4" * 32, "d5" * 32
    assert claimed.claim_address is not None
    site.wallet.tx_key_answers[(tx_hash, tx_key, claimed.claim_address)] = TxKeyCheck(
        received=XMR // 2, confirmations=0, in_pool=True
    )
    act(browser, claimed.id, "paid")
    assert shown(browser, "#paid-to").text == claimed.claim_address
    shown(browser, "#paid-hash").send_keys(tx_hash)
    shown(browser, "#paid-key").send_keys(tx_key.upper())
    click(browser, "#paid-submit")
    wait_status(browser, claimed.id, "sent")
    recorded = site.book.refunds[claimed.id]
    assert recorded.manual and recorded.tx_hash_list == (tx_hash,) and recorded.tx_key == tx_key
    assert "paid by hand" in row(browser, claimed.id)["text"]
    assert text(browser, "#refund-panel h2") == "Refund recorded"
    assert page_errors(browser, 409) == []


def test_a_send_with_an_unknown_outcome_says_so(browser: WebDriver, site: Site) -> None:
    site.wallet.transfer_error = WalletTimeout("wallet-rpc did not answer in 5 s")
    address = site.request(XMR)
    claimed = site.refund(address, XMR // 2, claim=True)
    open_page(browser, site, "/refunds", "#refund-list")
    act(browser, claimed.id, "send")
    click(browser, "#send-confirm")
    unknown = shown(browser, "#refund-unknown").text
    assert unknown.startswith("Outcome unknown:") and "never send it again" in unknown
    wait_status(browser, claimed.id, "sending")
    shown_row = row(browser, claimed.id)
    assert "outcome unknown: check the wallet" in shown_row["text"]
    assert shown_row["actions"] == ["paid"]
    assert len(site.wallet.sent) == 1
    assert page_errors(browser, 504) == []


def test_cancel_withdraws_a_refund_and_frees_its_money(browser: WebDriver, site: Site) -> None:
    address = site.request(XMR)
    made = site.refund(address, XMR // 4)
    open_page(browser, site, f"/request/{address}", f'tr[data-refund="{made.id}"]')
    assert text(browser, "#req-refunded") == "0.25 XMR"
    act(browser, made.id, "cancel")
    click(browser, "#cancel-confirm")
    wait_status(browser, made.id, "cancelled")
    assert site.status_of(made.id) == "cancelled"
    assert site.book.requests[address].refunded == 0
    assert "may be refunded again" in text(browser, "#refund-panel")
    wait_for(browser, "no refunded line", lambda: not css(browser, "#req-refunded"))
    assert row(browser, made.id)["actions"] == []
    click(browser, "#refund-open")
    assert shown(browser, "#refund-amount").get_attribute("value") == "1"
    assert page_errors(browser) == []


def test_screenshot_of_the_refunds_page(browser: WebDriver, site: Site) -> None:
    """The page as docs/dashboard.md shows it: one refund of each kind, Send asked."""
    first, second = site.request(XMR), site.request(3 * XMR)
    done = site.refund(first, XMR // 2, "parcel lost", claim=True)
    site.run(site.refunds.send(done.id, requested_by="operator"))
    site.refund(first, XMR // 5, "wrong colour")
    site.run(site.refunds.cancel(site.refund(second, XMR, "changed my mind").id))
    waiting = site.refund(second, 1_250_000_000_000, "one cup broken", claim=True)
    open_page(browser, site, "/refunds", "#refund-list")
    act(browser, waiting.id, "send")
    shown(browser, "#send-confirm")
    statuses = [r["status"] for r in rows(browser, "#refund-list tbody tr")]
    assert statuses[0] == "claimed" and sorted(statuses[1:]) == ["cancelled", "open", "sent"]
    screenshots(browser, "refunds", docs=True)
    assert page_errors(browser) == []
