"""Unmatched receipts on the dashboard in headless Chromium, on the real app.

Each test serves the real app (``create_app``: the shell, the API routes, the error
handlers) on loopback with uvicorn, over a ``Gateway`` whose receipts are the real use
case (``UnmatchedReceipts``) on the real SQL repository (``SqlUnmatched``) in a copy of
the migrated SQLite template; the rest of the gateway is the fakes of the other admin
tests. Receipts are rows of ``unmatched_receipts`` inserted with SQLAlchemy, as the sync
tick writes them, and the chain height is ``sync_state``'s (confirmations count from it).

- The Unmatched page lists the store's receipts newest first: amount in XMR (exact beyond
  2^53), age ("3 h ago"), the address shortened with a copy button, the subaddress index,
  the state ("confirmed 10", pool, unlocked, gone), the status and the note; the
  navigation counts the open receipts that hold money. It filters open / dismissed / all.
- "More" pages with ``next_cursor`` (25 a page); "Newest" goes back.
- "Dismiss" asks a note (a blank one is refused in the page) and POSTs it: the row then
  shows "dismissed" and the note, and the count drops. A receipt dismissed meanwhile
  shows the gateway's 409 message; a key without the ``receive`` scope its 403.
- The overview has a card "Unmatched: N open, X XMR" linked to the open receipts.
- A gateway built without receipts shows the 404's message.

Screenshots go to ``test-artifacts/admin/unmatched-*.png``; ``docs/img/admin-unmatched.png``
is refreshed when XMRGATE_UPDATE_DOC_IMAGES=1. Needs Debian's chromium and chromium-driver;
fails (never skips) without them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver import Chrome as WebDriver
from sqlalchemy import delete, insert, select

from tests.unit.fakes import (
    FakeWallet,
    checked_identity,
)
from tests.unit.gateway_builder import fake_app, fake_gateway
from testsupport.admin_page import page_errors, screenshots, text
from testsupport.browser import chromium, click, css, shown, wait_for
from testsupport.migrated import MigratedTemplates
from testsupport.monero_addresses import fake_address
from testsupport.page_shots import DESKTOP
from testsupport.served_app import ServedApp
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.payments import SYNC_STATE_ID
from xmrgate.adapters.store.tables import sync_state, unmatched_receipts
from xmrgate.adapters.store.unmatched import SqlUnmatched
from xmrgate.config import Settings
from xmrgate.core.unmatched import UnmatchedReceipts
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.stores import DEFAULT_STORE, key_digest

pytestmark = pytest.mark.browser

READER = "reader-key-of-the-unmatched-page"
XMR = 10**12
HEIGHT = 1000  # the chain height the sync saw: a receipt mined at 990 has 10 confirmations


class Site(ServedApp):
    """The app over fakes and the receipts in SQLite, served by uvicorn in a thread."""

    def __init__(self, url: str, *, keys: list[ApiKey] | None = None) -> None:
        # The engine is only ever used on the server's loop (``run``), as aiosqlite wants.
        self.db = Database(url)
        self.receipts = UnmatchedReceipts(SqlUnmatched(self.db, DEFAULT_STORE))
        self.wallet = FakeWallet()
        # The wallet checked and open, as after the supervisor's start: the overview's
        # /health and /balance answer at once instead of waiting for a check.
        identity = checked_identity()
        identity.ready.set()

        gateway = fake_gateway(
            wallet=self.wallet,
            identity=identity,
            unmatched=self.receipts,
            api_keys=keys or [],
        )
        super().__init__(fake_app(Settings(), gateway))
        self.run(self._chain_height(HEIGHT))

    async def _chain_height(self, height: int) -> None:
        async with self.db.write() as conn:
            await conn.execute(delete(sync_state).where(sync_state.c.id == SYNC_STATE_ID))
            await conn.execute(
                insert(sync_state).values(
                    id=SYNC_STATE_ID, wallet_height=height, updated_at=datetime.now(UTC)
                )
            )

    def receipt(
        self,
        amount: int,
        age: timedelta,
        *,
        index: int = 7,
        state: str = "confirmed",
        height: int = 990,
        status: str = "open",
        note: str | None = None,
        address: str | None = None,
    ) -> int:
        """A receipt first seen (and recorded) ``age`` ago, as the tick writes one; its id."""
        seen = datetime.now(UTC) - age
        values: dict[str, Any] = {
            "store_id": DEFAULT_STORE,
            "subaddr_index": index,
            "address": fake_address("mainnet", "subaddress") if address is None else address,
            "tx_hash": hashlib.sha256(f"{index} {seen.timestamp()}".encode()).hexdigest(),
            "amount": amount,
            "fee": 30_000_000,
            "height": 0 if state == "pool" else height,
            "timestamp": int(seen.timestamp()),
            "unlock_time": 0,
            "double_spend_seen": False,
            "state": state,
            "first_seen": int(seen.timestamp()),
            "status": status,
            "note": note,
            "created_at": seen,
            "updated_at": seen,
            "dismissed_at": seen + timedelta(minutes=5) if status == "dismissed" else None,
        }

        async def write() -> int:
            async with self.db.write() as conn:
                made = await conn.execute(
                    insert(unmatched_receipts).values(**values).returning(unmatched_receipts.c.id)
                )
                return int(made.scalar_one())

        return self.run(write())

    def stored(self, receipt_id: int) -> tuple[str, str | None]:
        """(status, note) of a receipt as the database holds it."""

        async def read() -> tuple[str, str | None]:
            async with self.db.read() as conn:
                row = (
                    await conn.execute(
                        select(unmatched_receipts.c.status, unmatched_receipts.c.note).where(
                            unmatched_receipts.c.id == receipt_id
                        )
                    )
                ).one()
            return row[0], row[1]

        return self.run(read())

    def close(self) -> None:
        self.run(self.db.dispose())
        super().close()


def new_site(tmp_path: Path, templates: MigratedTemplates, **options: Any) -> Site:
    return Site(templates.sqlite_copy(tmp_path / "unmatched.sqlite3"), **options)


@pytest.fixture
def site(tmp_path: Path, migrated_templates: MigratedTemplates) -> Iterator[Site]:
    with new_site(tmp_path, migrated_templates) as served:
        yield served


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, DESKTOP, console=True) as driver:
        yield driver


@pytest.fixture(autouse=True)
def fresh_console(browser: WebDriver) -> None:
    """Drop what the browser logged before this test: a test that failed midway leaves
    its refusals there, which would fail the next test's ``page_errors``."""
    browser.get_log("browser")  # type: ignore[no-untyped-call]


# ------------------------------------------------------------------ helpers

# The page redraws whenever an answer changes (after an action too): the rows are read in
# one script (atomic against the page's own code).
ROWS_JS = """
return Array.from(document.querySelectorAll("#unmatched-list tbody tr")).map(function (r) {
  function cell(selector) {
    var c = r.querySelector(selector);
    return c ? c.innerText.trim() : null;
  }
  var address = r.querySelector(".receipt-address");
  var seen = r.querySelector("time.ago");
  return {id: Number(r.getAttribute("data-receipt")), status: r.getAttribute("data-status"),
    state: r.getAttribute("data-state"), seen: seen ? seen.innerText : null,
    seenTitle: seen ? seen.getAttribute("title") : null,
    amount: cell("td.num .amt"), address: address ? address.innerText : null,
    full: address ? address.getAttribute("title") : null, index: cell('[data-field="index"]'),
    stateText: cell("td.state"), statusText: cell("td.status .badge"), note: cell("td.note"),
    bold: r.querySelectorAll("b").length,
    actions: Array.from(r.querySelectorAll("button[data-action]"), b => b.innerText)};
});
"""


def rows(driver: WebDriver) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = driver.execute_script(ROWS_JS)
    return found


def by_id(driver: WebDriver) -> dict[int, dict[str, Any]]:
    return {r["id"]: r for r in rows(driver)}


def open_page(driver: WebDriver, site: Site, fragment: str = "/unmatched") -> None:
    driver.get("about:blank")  # the same URL again would only be a fragment navigation
    driver.get(f"{site.url}/admin#{fragment}")
    wait_for(driver, "the unmatched receipts", lambda: css(driver, "#unmatched-results > *"))


def wait_ids(driver: WebDriver, wanted: list[int], what: str) -> None:
    wait_for(driver, what, lambda: [r["id"] for r in rows(driver)] == wanted)


def nav_count(driver: WebDriver) -> str:
    """The count beside "Unmatched" in the navigation; "" when hidden."""
    found = driver.execute_script(
        "var e = document.getElementById('nav-unmatched'); return e.hidden ? '' : e.innerText;"
    )
    return str(found)


def dismiss(driver: WebDriver, receipt_id: int, note: str) -> None:
    """Open the Dismiss panel of a receipt, type the note and submit it."""
    click(driver, f'#unmatched-list button[data-action="dismiss"][data-receipt="{receipt_id}"]')
    box = shown(driver, "#unmatched-note")
    box.clear()
    box.send_keys(note)
    click(driver, "#unmatched-submit")


# ------------------------------------------------------------------ the tests


def test_the_page_lists_receipts_with_amount_age_and_state(browser: WebDriver, site: Site) -> None:
    old = site.receipt(
        2 * XMR,
        timedelta(days=2),
        index=3,
        state="unlocked",
        status="dismissed",
        note="<b>refunded",
    )
    gone = site.receipt(XMR, timedelta(hours=20), index=4, state="gone")
    big = site.receipt(2**53 + 1, timedelta(hours=3, minutes=5), index=12)
    pool = site.receipt(XMR // 4, timedelta(minutes=7), index=5, state="pool")
    open_page(browser, site)
    # The navigation's link, its count beside it (two open receipts hold money).
    assert [a.text for a in css(browser, '#nav a[aria-current="page"]')] == ["Unmatched 2"]
    about = text(browser, "#unmatched-about")
    assert "no payment request owns" in about and "in the wallet" in about
    assert "another tool" in about and "deleted or pruned" in about

    listed = rows(browser)
    assert [r["id"] for r in listed] == [pool, big, gone, old]  # newest first
    shown_rows = {r["id"]: r for r in listed}
    assert shown_rows[big]["amount"] == "9007.199254740993 XMR"  # exact beyond 2^53
    assert shown_rows[big]["seen"] == "3 h ago"
    assert "UTC" in shown_rows[big]["seenTitle"]
    assert shown_rows[big]["stateText"] == "confirmed 10"
    assert shown_rows[big]["index"] == "12"
    full = shown_rows[big]["full"]
    assert len(full) == 95 and shown_rows[big]["address"] == f"{full[:8]}…{full[-6:]}"
    assert shown_rows[big]["actions"] == ["Copy", "Dismiss"]
    assert (shown_rows[pool]["seen"], shown_rows[pool]["amount"]) == ("7 min ago", "0.25 XMR")
    assert (
        shown_rows[pool]["stateText"].startswith("pool")
        and "not mined" in shown_rows[pool]["stateText"]
    )
    assert (
        shown_rows[gone]["stateText"].startswith("gone") and shown_rows[gone]["seen"] == "20 h ago"
    )
    assert shown_rows[old]["seen"] == "2 d ago" and shown_rows[old]["stateText"] == "unlocked"
    assert (shown_rows[old]["statusText"], shown_rows[old]["note"]) == ("dismissed", "<b>refunded")
    assert shown_rows[old]["bold"] == 0  # the note is text, never HTML
    assert shown_rows[old]["actions"] == ["Copy"]  # a dismissed receipt has no Dismiss
    # Open and holding money: the big one and the pool one (the gone one holds nothing).
    assert nav_count(browser) == "2"
    summary = text(browser, "#unmatched-summary")
    assert summary.startswith("2 open receipts hold 9007.449254740993 XMR"), summary
    click(browser, f'#unmatched-list button[data-action="copy"][data-receipt="{big}"]')
    said = wait_for(
        browser, "copy feedback", lambda: text(browser, f'tr[data-receipt="{big}"] .acts .hint')
    )
    assert said == "Copied." or said.startswith("Could not copy"), said

    # The filter: open only, dismissed only, all again.
    click(browser, '#unmatched-filter a[data-filter="open"]')
    wait_ids(browser, [pool, big, gone], "the open receipts")
    assert text(browser, '#unmatched-filter a[aria-current="true"]') == "Open"
    click(browser, '#unmatched-filter a[data-filter="dismissed"]')
    wait_ids(browser, [old], "the dismissed receipt")
    click(browser, '#unmatched-filter a[data-filter="all"]')
    wait_ids(browser, [pool, big, gone, old], "every receipt")
    assert page_errors(browser) == []


def test_ages_read_as_a_person_says_them(browser: WebDriver, site: Site) -> None:
    """``XmrFormat.ago`` (format.js): the largest whole unit; a moment ahead is "just now"."""
    open_page(browser, site)
    cases = [(0, "just now"), (59, "just now"), (60, "1 min ago"), (3599, "59 min ago")]
    cases += [(3600, "1 h ago"), (86399, "23 h ago"), (86400, "1 d ago"), (40 * 86400, "40 d ago")]
    cases += [(-300, "just now")]
    got = browser.execute_script(
        "return arguments[0].map(function (c) { return XmrFormat.ago(1e9 - c[0], 1e9); });", cases
    )
    assert got == [c[1] for c in cases]
    assert "No unmatched receipts" in text(browser, "#unmatched-results")
    assert nav_count(browser) == ""


def test_more_pages_with_the_cursor(browser: WebDriver, site: Site) -> None:
    made = [site.receipt(XMR + i, timedelta(hours=40 - i), index=100 + i) for i in range(30)]
    newest_first = made[::-1]
    open_page(browser, site, "/unmatched?status=open")
    wait_ids(browser, newest_first[:25], "the first page")
    assert not css(browser, "#unmatched-newest")
    click(browser, "#unmatched-more")
    wait_ids(browser, newest_first[25:], "the second page")
    assert "cursor=" in browser.current_url and "status=open" in browser.current_url
    assert not css(browser, "#unmatched-more")
    assert nav_count(browser) == "30"
    click(browser, "#unmatched-newest")
    wait_ids(browser, newest_first[:25], "the first page again")
    assert page_errors(browser) == []


def test_dismiss_with_a_note(browser: WebDriver, site: Site) -> None:
    first = site.receipt(XMR, timedelta(hours=5), index=8)
    second = site.receipt(XMR // 2, timedelta(hours=1), index=9)
    open_page(browser, site)
    wait_for(browser, "two open", lambda: nav_count(browser) == "2")

    # A blank note is refused in the page: nothing is sent.
    click(browser, f'#unmatched-list button[data-action="dismiss"][data-receipt="{first}"]')
    assert text(browser, "#unmatched-panel h2") == "Dismiss this receipt?"
    assert "1 XMR" in text(browser, "#unmatched-panel")
    shown(browser, "#unmatched-note").send_keys("   ")
    click(browser, "#unmatched-submit")
    assert shown(browser, "#unmatched-said .notice.error").text.startswith("Note:")
    assert site.stored(first) == ("open", None)

    dismiss(browser, first, "  Sent back to the customer, tx 1234  ")
    wait_for(
        browser, "the answer", lambda: text(browser, "#unmatched-panel h2") == "Receipt dismissed"
    )
    assert "Sent back to the customer, tx 1234" in text(browser, "#unmatched-panel")
    assert site.stored(first) == ("dismissed", "Sent back to the customer, tx 1234")
    wait_for(
        browser,
        "the row dismissed",
        lambda: by_id(browser)[first]["statusText"] == "dismissed",
    )
    row = by_id(browser)[first]
    assert row["note"] == "Sent back to the customer, tx 1234" and row["actions"] == ["Copy"]
    assert by_id(browser)[second]["statusText"] == "open"
    assert nav_count(browser) == "1"
    assert text(browser, "#unmatched-summary").startswith("1 open receipt holds 0.5 XMR")
    assert page_errors(browser) == []


def test_a_receipt_dismissed_meanwhile_shows_the_409_message(
    browser: WebDriver, site: Site
) -> None:
    receipt = site.receipt(XMR, timedelta(hours=2))
    open_page(browser, site)
    click(browser, f'#unmatched-list button[data-action="dismiss"][data-receipt="{receipt}"]')
    shown(browser, "#unmatched-note")
    site.run(site.receipts.dismiss(receipt, "dismissed through the API"))
    shown(browser, "#unmatched-note").send_keys("returned")
    click(browser, "#unmatched-submit")
    refused = shown(browser, "#unmatched-error").text
    assert refused == f"unmatched receipt {receipt} is dismissed already (HTTP 409)", refused
    assert site.stored(receipt) == ("dismissed", "dismissed through the API")
    # The list reloads after the answer: the row shows the other dismissal.
    wait_for(
        browser,
        "the other note",
        lambda: by_id(browser)[receipt]["note"] == "dismissed through the API",
    )
    assert page_errors(browser, 409) == []


def test_a_key_without_receive_gets_the_403_message(
    browser: WebDriver, tmp_path: Path, migrated_templates: MigratedTemplates
) -> None:
    reader = ApiKey(digest=key_digest(READER), label="key:read", scopes=frozenset({"read"}))
    site = new_site(tmp_path, migrated_templates, keys=[reader])
    try:
        receipt = site.receipt(XMR, timedelta(hours=2))
        browser.get(f"{site.url}/admin#/unmatched")
        shown(browser, "#api-key").send_keys(READER)
        click(browser, "#login button[type=submit]")
        wait_ids(browser, [receipt], "the receipt, read with the read scope")
        dismiss(browser, receipt, "returned")
        refused = shown(browser, "#unmatched-error").text
        assert refused == "This key lacks the 'receive' scope: use a key that has it for this."
        assert site.stored(receipt) == ("open", None)
        assert page_errors(browser, 403, 401) == []
    finally:
        browser.execute_script("sessionStorage.clear();")
        site.close()


def test_the_overview_card_counts_the_open_receipts(browser: WebDriver, site: Site) -> None:
    site.receipt(XMR, timedelta(hours=3), index=8)
    site.receipt(XMR // 2, timedelta(hours=2), index=9)
    site.receipt(5 * XMR, timedelta(hours=1), index=10, status="dismissed", note="test payment")
    site.receipt(7 * XMR, timedelta(minutes=30), index=11, state="gone")
    browser.get("about:blank")
    browser.get(f"{site.url}/admin#/")
    shown(browser, "#card-unmatched")
    assert text(browser, "#unmatched-open") == "2 open"
    assert text(browser, "#unmatched-amount") == "1.5 XMR"
    assert nav_count(browser) == "2"
    screenshots(browser, "unmatched-overview")
    click(browser, "#card-unmatched h2 a")
    wait_for(browser, "the open receipts", lambda: len(rows(browser)) == 3)
    assert browser.current_url.endswith("#/unmatched?status=open")
    # The fakes' gateway has no overview (/status: 404, so the store's own overview, as for
    # a store key) and no list of requests (/receive: 404, shown in its card).
    assert page_errors(browser, 404) == []


def test_a_store_without_receipts_shows_none_open(browser: WebDriver, site: Site) -> None:
    """Every store has its receipts (the gateway is complete): none recorded is an empty
    list and a card saying so, never an error, and no count in the navigation."""
    browser.get("about:blank")
    browser.get(f"{site.url}/admin#/unmatched?status=open")
    wait_for(browser, "the empty list", lambda: "No open receipts" in text(browser, "#main"))
    assert rows(browser) == []
    browser.get("about:blank")
    browser.get(f"{site.url}/admin#/")
    shown(browser, "#card-unmatched")
    assert text(browser, "#unmatched-open") == "None open."
    assert nav_count(browser) == ""
    assert page_errors(browser) == []


def test_screenshot_of_the_unmatched_page(browser: WebDriver, site: Site) -> None:
    """The page as docs/dashboard.md shows it: open and dismissed receipts, one in the
    pool, the Dismiss panel open."""
    site.receipt(
        XMR // 2,
        timedelta(days=3),
        index=21,
        state="unlocked",
        status="dismissed",
        note="Paid twice by order 1042; sent back",
    )
    site.receipt(XMR // 40, timedelta(hours=26), index=17, state="unlocked")
    late = site.receipt(3 * XMR // 10, timedelta(hours=3), index=33)
    site.receipt(XMR // 100, timedelta(minutes=4), index=34, state="pool")
    open_page(browser, site)
    wait_for(browser, "four receipts", lambda: len(rows(browser)) == 4)
    click(browser, f'#unmatched-list button[data-action="dismiss"][data-receipt="{late}"]')
    shown(browser, "#unmatched-note").send_keys("Order 1077's request was deleted; matched by hand")
    assert "null" not in text(browser, "#main")
    screenshots(browser, "unmatched", docs=True)
    assert page_errors(browser) == []
