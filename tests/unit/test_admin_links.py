"""Payment links on the dashboard in headless Chromium, on the real app over fakes.

Each test serves the real app (``create_app``: the shell, the API routes, the error
handlers) on loopback with uvicorn, over a ``Gateway`` whose use cases are the real ones
on in-memory fakes: the links (``Links`` on ``FakeLinkStore``, ``testsupport/fake_links.py``),
the payment requests they make (``PaymentRequests`` over ``FakeLinkPool``, which records
the link of each request), the list of requests (``Invoices`` over a listing that
filters by link, as ``GET /receive?link=`` does). A payer's "Pay" is ``Links.pay`` on the
server's own loop; what a request received is set in the ``LinkBook``.

- "New link" makes a link (fixed XMR amount, or an open amount with a minimum) and shows
  its public URL with a copy button; the list shows it.
- The list shows each link's kind (fixed XMR, fiat price, open amount with its minimum),
  its state, and the counts the repository computes: uses, paid, received.
- Deactivate / Activate (PATCH active); Delete of an unused link deletes it, of a used one
  only deactivates it, and the page says so.
- "Requests" shows the requests a link made (GET /receive?link=).
- A key with the ``read`` scope only reads the list; its actions say it lacks ``receive``.

Screenshots go to ``test-artifacts/admin/links-*.png``; ``docs/img/admin-links.png`` is
refreshed when XMRGATE_UPDATE_DOC_IMAGES=1. Needs Debian's chromium and chromium-driver;
fails (never skips) without them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

import pytest
from selenium.webdriver import Chrome as WebDriver

from tests.unit.fakes import (
    AllowAll,
    FakeOutbox,
    FakePaymentStore,
    FakeWallet,
)
from tests.unit.gateway_builder import fake_app, fake_gateway
from testsupport.admin_page import look_again, page_errors, screenshots, text
from testsupport.browser import chromium, click, css, shown, wait_for
from testsupport.fake_links import FakeLinkPool, FakeLinkStore, LinkBook
from testsupport.page_shots import DESKTOP
from testsupport.served_app import ServedApp
from xmrgate.config import Settings
from xmrgate.core.invoices import Invoices, ListQuery
from xmrgate.core.links import Links
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.links import Link, LinkFields
from xmrgate.domain.records import PaymentRequest
from xmrgate.domain.stores import key_digest

pytestmark = pytest.mark.browser

READER = "reader-key-of-the-links-page"
XMR = 10**12


class LinkListing:
    """``GET /receive``'s listing over the book's requests: newest first, by link."""

    def __init__(self, book: LinkBook) -> None:
        self.book = book
        self.asked: list[ListQuery] = []

    async def page(self, query: ListQuery, now: datetime) -> list[PaymentRequest]:
        self.asked.append(query)
        found = [
            r
            for r in self.book.requests.values()
            if query.link is None or self.book.made_by.get(r.address) == query.link
        ]
        found.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return found[: query.limit + 1]


class Site(ServedApp):
    """The app over fakes, served by uvicorn on its own loop in a thread."""

    def __init__(self, keys: list[ApiKey] | None = None) -> None:
        self.book = LinkBook()
        self.wallet = FakeWallet()
        self.listing = LinkListing(self.book)
        identity = WalletIdentity()
        requests = PaymentRequests(
            self.wallet,
            FakePaymentStore(requests=self.book.requests),
            FakeOutbox(),
            AllowAll(),
            pool=FakeLinkPool(self.book),
        )
        self.links = Links(
            FakeLinkStore(self.book), requests, AllowAll(), currencies=("EUR",), rate_lock=900
        )

        gateway = fake_gateway(
            wallet=self.wallet,
            payment_requests=requests,
            identity=identity,
            invoices=Invoices(self.listing, cast(Any, None)),
            links=self.links,
            api_keys=keys or [],
        )
        super().__init__(fake_app(Settings(), gateway))

    def link(self, title: str, slug: str | None = None, **fields: Any) -> Link:
        """A link made through the use case."""
        return self.run(self.links.create(LinkFields(title=title, **fields), slug))

    def pay(self, link: Link, typed: str | None = None, received: int = 0) -> PaymentRequest:
        """One "Pay" on the link's page; ``received`` piconero arrived (paid when it
        covers the request's amount)."""
        found = self.run(self.links.find(link.slug))
        request, _ = self.run(self.links.pay(found, typed, None))
        if received:
            self.book.received[request.address] = received
            if received >= request.amount:
                self.book.requests[request.address] = replace(request, status="paid")
        return request


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

# The page redraws whenever an answer changes (after each action too): what the tests
# read is read in one script (atomic against the page's own code), and clicks retry on
# an element that a redraw replaced.
ROWS_JS = """
return Array.from(document.querySelectorAll(arguments[0])).map(function (r) {
  function cell(name) {
    var c = r.querySelector('[data-count="' + name + '"]');
    return c ? c.innerText.trim() : null;
  }
  var kind = r.querySelector("[data-kind]");
  var url = r.querySelector(".link-url");
  return {id: r.getAttribute("data-link"), active: r.getAttribute("data-active"),
    text: r.innerText, bold: r.querySelectorAll("b").length,
    kind: kind ? kind.getAttribute("data-kind") : null, kindText: kind ? kind.innerText : "",
    url: url ? url.innerText : null, href: url ? url.getAttribute("href") : null,
    full: url ? url.getAttribute("title") : null,
    uses: cell("uses"), paid: cell("paid"), received: cell("received"),
    state: r.querySelector(".state").innerText,
    actions: Array.from(r.querySelectorAll("button[data-action]")).map(function (b) {
      return [b.getAttribute("data-action"), b.innerText]; })};
});
"""


def rows(driver: WebDriver, selector: str = "tr[data-link]") -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = driver.execute_script(ROWS_JS, selector)
    return found


def row(driver: WebDriver, link_id: str) -> dict[str, Any]:
    (found,) = rows(driver, f'#link-list tr[data-link="{link_id}"]')
    return found


def open_page(driver: WebDriver, site: Site, ready: str) -> None:
    driver.get(f"{site.url}/admin#/links")
    shown(driver, ready)


def act(driver: WebDriver, link_id: str, action: str) -> None:
    click(driver, f'#link-list button[data-action="{action}"][data-link="{link_id}"]')


def wait_active(driver: WebDriver, link_id: str, active: bool) -> None:
    wait_for(
        driver,
        f"link {link_id} active={active}",
        lambda: (
            [r["active"] for r in rows(driver, f'#link-list tr[data-link="{link_id}"]')]
            == [str(active).lower()]
        ),
    )


def fill(driver: WebDriver, selector: str, value: str) -> None:
    box = shown(driver, selector)
    box.clear()
    box.send_keys(value)


# ------------------------------------------------------------------ the tests


def test_a_link_made_in_the_form_shows_its_url(browser: WebDriver, site: Site) -> None:
    open_page(browser, site, "#link-results .notice")
    assert "No payment links yet" in text(browser, "#link-results")
    nav = css(browser, '#nav a[aria-current="page"]')
    assert [a.text for a in nav] == ["Links"]
    click(browser, "#link-new")
    fill(browser, "#link-title", "Coffee <b>")
    fill(browser, "#link-description", "A cup of the house blend")
    fill(browser, "#link-amount", "0.025")
    assert not css(browser, "#link-min")[0].is_displayed()  # a fixed amount: no minimum
    fill(browser, "#link-max-uses", "40")
    fill(browser, "#link-slug", "coffee")
    click(browser, "#link-submit")

    url = shown(browser, "#made-url").get_attribute("value")
    assert url == f"{site.url}/l/coffee"
    (link,) = site.book.links.values()
    assert (link.slug, link.fields.title, link.fields.description) == (
        "coffee",
        "Coffee <b>",
        "A cup of the house blend",
    )
    assert (link.fields.amount, link.fields.max_uses, link.fields.expires_in) == (
        XMR // 40,
        40,
        3600,
    )
    assert link.fields.active
    assert text(browser, "#made-title") == "Coffee <b>"
    click(browser, "#copy-made")
    said = wait_for(browser, "copy feedback", lambda: text(browser, "#copy-said"))
    assert said == "Copied." or said.startswith("Could not copy"), said

    # The list shows it, as text (never as HTML), and the panel stays through the redraw.
    wait_for(browser, "the new link listed", lambda: rows(browser, "#link-list tbody tr"))
    listed = row(browser, link.id)
    assert listed["bold"] == 0 and "Coffee <b>" in listed["text"]
    assert (listed["url"], listed["href"], listed["full"]) == ("/l/coffee", url, url)
    assert (listed["kind"], listed["uses"], listed["paid"], listed["received"]) == (
        "fixed",
        "0 / 40",
        "0",
        "0 XMR",
    )
    assert "0.025 XMR" in listed["kindText"]
    assert listed["active"] == "true" and listed["state"] == "active"
    assert shown(browser, "#made-url").get_attribute("value") == url

    # An open amount with a minimum, its slug drawn by the gateway, a day per request.
    click(browser, "#link-close")
    click(browser, "#link-new")
    fill(browser, "#link-title", "Tips")
    click(browser, "#link-kind-open")
    assert not css(browser, "#link-amount")[0].is_displayed()
    fill(browser, "#link-min", "0.001")
    browser.execute_script(
        "var s = document.getElementById('link-life'); s.value = '86400';"
        "s.dispatchEvent(new Event('change'));"
    )
    click(browser, "#link-submit")
    url = shown(browser, "#made-url").get_attribute("value") or ""
    tips = next(x for x in site.book.links.values() if x.fields.title == "Tips")
    assert url == f"{site.url}/l/{tips.slug}" and len(tips.slug) == 10
    assert (tips.fields.amount, tips.fields.min_amount, tips.fields.expires_in) == (
        None,
        XMR // 1000,
        86400,
    )
    assert tips.fields.max_uses is None
    wait_for(browser, "two links", lambda: len(rows(browser, "#link-list tbody tr")) == 2)
    listed = row(browser, tips.id)
    assert listed["kind"] == "open" and "at least 0.001 XMR" in listed["kindText"]
    assert listed["uses"] == "0"

    # A bad amount is refused in the page; a taken slug by the gateway (409), nothing made.
    click(browser, "#link-new")
    fill(browser, "#link-title", "Tea")
    fill(browser, "#link-amount", "1,2,3")
    click(browser, "#link-submit")
    assert shown(browser, "#link-said .notice.error").text.startswith("Amount:")
    fill(browser, "#link-amount", "1")
    fill(browser, "#link-slug", "coffee")
    click(browser, "#link-submit")
    refused = shown(browser, "#link-error").text
    assert refused.endswith("(HTTP 409)") and "coffee" in refused, refused
    assert len(site.book.links) == 2
    assert page_errors(browser, 409) == []


def test_the_list_shows_each_links_kind_and_counts(browser: WebDriver, site: Site) -> None:
    coffee = site.link("Coffee", "coffee", amount=XMR // 40, max_uses=3)
    bike = site.link("Bike", "bike", price={"amount": "199.00", "currency": "EUR"}, expires_in=900)
    tips = site.link("Tips", "tips", min_amount=XMR // 1000)
    site.pay(coffee, received=XMR // 40)
    site.pay(coffee, received=XMR // 40)
    site.pay(coffee)  # made, not paid: used up now
    site.pay(tips, "0.5", received=XMR // 2)
    site.pay(tips, "0.25", received=XMR // 10)  # partly paid: received, not paid
    open_page(browser, site, "#link-list")
    listed = rows(browser, "#link-list tbody tr")
    assert [r["id"] for r in listed] == [tips.id, bike.id, coffee.id]  # newest first
    by_id = {r["id"]: r for r in listed}
    assert (by_id[coffee.id]["uses"], by_id[coffee.id]["paid"], by_id[coffee.id]["received"]) == (
        "3 / 3",
        "2",
        "0.05 XMR",
    )
    assert "used up" in by_id[coffee.id]["state"]
    assert by_id[coffee.id]["kind"] == "fixed" and "0.025 XMR" in by_id[coffee.id]["kindText"]
    assert by_id[bike.id]["kind"] == "price" and "199.00 EUR" in by_id[bike.id]["kindText"]
    assert (by_id[bike.id]["uses"], by_id[bike.id]["paid"], by_id[bike.id]["received"]) == (
        "0",
        "0",
        "0 XMR",
    )
    assert (by_id[tips.id]["uses"], by_id[tips.id]["paid"], by_id[tips.id]["received"]) == (
        "2",
        "1",
        "0.6 XMR",
    )
    assert by_id[tips.id]["url"] == "/l/tips" and by_id[tips.id]["full"] == f"{site.url}/l/tips"
    assert [a[1] for a in by_id[tips.id]["actions"]] == ["Copy", "Deactivate", "Delete", "Requests"]
    assert "null" not in text(browser, "#link-results")

    # A payment arrives: the list follows it (it refreshes every 10 s, and at once when
    # the operator comes back to the tab).
    site.pay(tips, "1", received=XMR)
    look_again(browser)
    wait_for(
        browser,
        "the new figures",
        lambda: (
            row(browser, tips.id)["received"] == "1.6 XMR" and row(browser, tips.id)["uses"] == "3"
        ),
    )

    # "Requests": the requests the link made, newest first, each linked to its page.
    act(browser, tips.id, "requests")
    shown(browser, "#link-request-list")
    made = [
        r.address for r in sorted(site.book.made(tips.id), key=lambda r: r.created_at, reverse=True)
    ]
    shown_rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('#link-request-list tbody tr'), r => "
        "[r.getAttribute('data-address'), r.querySelector('a').getAttribute('href'), r.innerText]);"
    )
    assert [r[0] for r in shown_rows] == made
    assert [r[1] for r in shown_rows] == [f"#/request/{a}" for a in made]
    assert "paid" in shown_rows[-1][2] and "0.5 XMR" in shown_rows[-1][2]
    assert site.listing.asked[-1].link == tips.id
    assert page_errors(browser) == []


def test_deactivate_and_activate(browser: WebDriver, site: Site) -> None:
    coffee = site.link("Coffee", "coffee", amount=XMR // 40)
    open_page(browser, site, "#link-list")
    assert row(browser, coffee.id)["actions"][1] == ["toggle", "Deactivate"]
    act(browser, coffee.id, "toggle")
    wait_active(browser, coffee.id, False)
    assert not site.book.links[coffee.id].fields.active
    assert text(browser, "#link-panel h2") == "Link deactivated"
    listed = row(browser, coffee.id)
    assert listed["state"] == "inactive" and listed["actions"][1] == ["toggle", "Activate"]
    act(browser, coffee.id, "toggle")
    wait_active(browser, coffee.id, True)
    assert site.book.links[coffee.id].fields.active
    assert text(browser, "#link-panel h2") == "Link activated"
    assert row(browser, coffee.id)["actions"][1] == ["toggle", "Deactivate"]
    assert page_errors(browser) == []


def test_delete_of_a_used_link_only_deactivates_it(browser: WebDriver, site: Site) -> None:
    unused = site.link("Unused", "unused", amount=XMR)
    used = site.link("Used", "used", amount=XMR)
    site.pay(used)
    open_page(browser, site, "#link-list")

    act(browser, used.id, "delete")
    assert "It made 1 payment request:" in text(browser, "#link-panel")
    click(browser, "#delete-confirm")
    only = shown(browser, "#only-deactivated").text
    assert "only deactivated" in only, only
    assert text(browser, "#link-panel h2") == "Link deactivated, not deleted"
    wait_active(browser, used.id, False)
    assert used.id in site.book.links and not site.book.links[used.id].fields.active

    act(browser, unused.id, "delete")
    assert "It made no payment request" in text(browser, "#link-panel")
    click(browser, "#delete-confirm")
    wait_for(
        browser, "the deleted notice", lambda: text(browser, "#link-panel h2") == "Link deleted"
    )
    assert not css(browser, "#only-deactivated")
    wait_for(browser, "one link left", lambda: len(rows(browser, "#link-list tbody tr")) == 1)
    assert unused.id not in site.book.links
    assert page_errors(browser) == []


def test_screenshot_of_the_links_page(browser: WebDriver, site: Site) -> None:
    """The page as docs/dashboard.md shows it: three kinds of link, one turned off, the
    requests of one shown."""
    site.link("Donations", "donate", description="Keeps the node running", min_amount=XMR // 100)
    coffee = site.link("Coffee", "coffee", amount=XMR // 40, max_uses=100)
    site.link(
        "Workshop ticket", "workshop", price={"amount": "25.00", "currency": "EUR"}, expires_in=900
    )
    old = site.link("Summer sale", "summer-sale", amount=XMR // 4)
    for _ in range(3):
        site.pay(coffee, received=XMR // 40)
    site.pay(coffee)
    site.pay(old, received=XMR // 4)
    site.run(site.links.update(old.id, {"active": False}))
    open_page(browser, site, "#link-list")
    act(browser, coffee.id, "requests")
    shown(browser, "#link-request-list")
    assert "null" not in text(browser, "#link-panel")
    assert len(rows(browser, "#link-list tbody tr")) == 4
    screenshots(browser, "links", docs=True)
    assert page_errors(browser) == []


def test_a_read_key_lists_the_links_and_cannot_change_them(browser: WebDriver) -> None:
    reader = ApiKey(digest=key_digest(READER), label="key:read", scopes=frozenset({"read"}))
    site = Site(keys=[reader])
    try:
        coffee = site.link("Coffee", "coffee", amount=XMR // 40)
        open_page(browser, site, "#api-key")
        shown(browser, "#api-key").send_keys(READER)
        click(browser, "#login button[type=submit]")
        shown(browser, "#link-list")
        act(browser, coffee.id, "toggle")
        refused = shown(browser, "#link-error").text
        assert refused == "This key lacks the 'receive' scope: use a key that has it for this."
        assert site.book.links[coffee.id].fields.active
        click(browser, "#link-close")
        click(browser, "#link-new")
        fill(browser, "#link-title", "Tea")
        fill(browser, "#link-amount", "1")
        click(browser, "#link-submit")
        assert "lacks the 'receive' scope" in shown(browser, "#link-error").text
        assert list(site.book.links) == [coffee.id]
        assert page_errors(browser, 403, 401) == []
    finally:
        browser.execute_script("sessionStorage.clear();")
        site.close()
