"""The public page of a payment link, ``/l/{slug}`` (``web/link_page``).

In process: the app over Gateways whose ``Links`` and ``PaymentRequests`` are the real
use cases on the in-memory link book (``testsupport/fake_links.py``: its repository and
an address pool that records which link made each request), two stores. Covers the
page (fixed amount, fiat price, open amount), "Pay" and its redirect to the checkout,
the cookie that leads the same browser back to its unpaid request, the refusals (bad
amounts, unknown, inactive and used-up links, other sites, an empty pool, no rates), the
headers of every page, and a flood of 10,000 "Pay" that leaves the pool, the other link
and the other store unharmed.

The browser tests serve the same app with uvicorn and drive Debian's Chromium on a
phone-sized window: a fixed-amount and an open-amount link, Pay, the checkout, the link
opened again. Screenshots go to ``test-artifacts/links/``; ``docs/img/link-fixed.png``
and ``docs/img/link-open.png`` are refreshed when XMRGATE_UPDATE_DOC_IMAGES=1.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from httpx import Response
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.unit.fakes import AllowAll, FakeOutbox, FakePaymentStore, FakeWallet
from tests.unit.gateway_builder import fake_app, fake_gateway, fake_stores
from testsupport.browser import chromium
from testsupport.fake_links import FakeLinkPool, FakeLinkStore, LinkBook
from testsupport.page_shots import ARTIFACTS, PHONE, assert_fits, copy_to_docs, full_page_png
from testsupport.served_app import ServedApp
from xmrgate.config import Settings
from xmrgate.core.gateway import Gateway
from xmrgate.core.links import Links
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.errors import RatesUnavailable
from xmrgate.domain.fiat import Price, Quote, piconero_for
from xmrgate.domain.links import Link, LinkFields
from xmrgate.domain.records import PaymentRequest
from xmrgate.domain.stores import DEFAULT_STORE_NAME, Store, key_digest
from xmrgate.web.checkout.page import csp_hash
from xmrgate.web.link_page.routes import CLIENT_LIMIT, LINK_LIMIT

XMR = 10**12
LOCK = 900
RATE = Decimal("150")  # EUR per XMR
PRIMARY = (
    "47egMG6teAeRcW7WKRfmnJfq6fRLG2zmpLu2YmvbPS3B3JY"
    "zL3iazF83v7qJSweJiN7AVMBrZ9gsW5PtfSZNfGTRT2PViky"
)
OPERATOR_KEY = "operator-key-for-the-link-page"
DOC_IMAGES = {"link-fixed", "link-open"}
WAIT = 20.0


# ------------------------------------------------------------------ the app over fakes


class Rows:
    """The stores table: the default store (unnamed) and Bob's (``disabled``: by id)."""

    def __init__(self) -> None:
        self.disabled: set[str] = set()

    async def all(self) -> list[Store]:
        rows = [
            Store(id="default", name=DEFAULT_STORE_NAME, account_index=0),
            Store(id="bikes", name="Bob's <Bikes>", account_index=1, accent="#1d4ed8"),
        ]
        return [replace(r, enabled=r.id not in self.disabled) for r in rows]

    async def active_keys(self) -> list[Any]:
        return []


class Rates:
    """A rate book with one EUR rate, or none (``down``)."""

    def __init__(self) -> None:
        self.down = False

    def quote(self, price: Price) -> tuple[int, Quote]:
        if self.down:
            raise RatesUnavailable("no fresh EUR rate")
        at = datetime.now(UTC)
        return piconero_for(price, RATE), Quote(str(price.amount), price.currency, "150", (), at)


class Pool(FakeLinkPool):
    """The fake pool of one store, which may run dry (``empty``)."""

    empty = False

    async def take(self, values: Any) -> PaymentRequest | None:
        return None if self.empty else await super().take(values)


@dataclass
class Parts:
    """The app over fakes, and the fakes."""

    app: FastAPI
    book: LinkBook
    links: dict[str, Links]
    pools: dict[str, Pool]
    rates: Rates
    rows: Rows


@dataclass
class Shop(Parts):
    """The app, a client, and what its tests look at."""

    client: TestClient

    def link(self, slug: str, store: str = "default", **fields: Any) -> Link:
        """A new link of ``store`` through the use case."""
        fields.setdefault("title", "Coffee")
        return asyncio.run(self.links[store].create(LinkFields(**fields), slug))

    def made(self, link: Link) -> list[PaymentRequest]:
        """The requests ``link`` made."""
        return self.book.made(link.id)

    def pay(
        self,
        slug: str,
        amount: str | None = None,
        client: TestClient | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        data = {} if amount is None else {"amount": amount}
        answer: Response = (client or self.client).post(f"/l/{slug}", data=data, headers=headers)
        return answer

    def browser_client(self, host: str = "198.51.100.7") -> TestClient:
        """Another client (its own address and cookies), redirects not followed."""
        return TestClient(self.app, client=(host, 40000), follow_redirects=False)


def build_app(
    *,
    stores: bool = True,
    keys: bool = False,
    checkout: bool = True,
    public_url: str | None = None,
) -> Parts:
    book = LinkBook()
    rows = Rows()
    rates = Rates()
    api_keys = (
        [ApiKey(digest=key_digest(OPERATOR_KEY), label="key:op", scopes=frozenset({"read"}))]
        if keys
        else []
    )
    links: dict[str, Links] = {}
    pools: dict[str, Pool] = {}

    def gateway(store_id: str) -> Gateway:
        pool = pools[store_id] = Pool(book, store_id)
        requests = PaymentRequests(
            FakeWallet(),
            FakePaymentStore(requests=book.requests),  # type: ignore[arg-type]
            FakeOutbox(),
            AllowAll(),
            pool=pool,
            pricing=rates,
            rate_lock=LOCK,
        )
        links[store_id] = Links(
            FakeLinkStore(book, store_id),
            requests,
            AllowAll(),
            store_id=store_id,
            pricing=rates,
            currencies=("EUR",),
            rate_lock=LOCK,
        )
        return fake_gateway(
            store_id,
            payment_requests=requests,
            identity=WalletIdentity(primary_address=PRIMARY),
            api_keys=api_keys,
            links=links[store_id],
        )

    registry = fake_stores(
        lambda store: gateway(store.id), rows if stores else None, operator_keys=api_keys
    )
    settings = Settings(checkout=checkout, public_url=public_url, metrics=False)
    app = fake_app(settings, registry)
    return Parts(app, book, links, pools, rates, rows)


def build_shop(**options: Any) -> Shop:
    parts = build_app(**options)
    client = TestClient(parts.app, client=("198.51.100.7", 40000), follow_redirects=False)
    return Shop(**vars(parts), client=client)


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Shop]:
    monkeypatch.chdir(tmp_path)  # Settings' default database path: never the repository's
    built = build_shop()
    yield built
    built.client.close()


def assert_safe(answer: Response) -> None:
    """The headers and page rules every link page keeps."""
    headers = answer.headers
    csp = headers["content-security-policy"]
    directives = [d.strip() for d in csp.split(";")]
    assert directives[0] == "default-src 'none'"
    for needed in ("img-src data:", "frame-ancestors 'none'", "base-uri 'none'"):
        assert needed in directives
    assert "script-src" not in csp and "unsafe-inline" not in csp and "connect-src" not in csp
    assert headers["x-frame-options"] == "DENY"
    assert headers["cache-control"] == "no-store"
    # As every public form (web/form_origin.py): never a referrer to another site, and
    # not no-referrer, under which browsers post the page's own form with Origin: null.
    assert headers["referrer-policy"] == "same-origin"
    assert '<meta name="referrer" content="same-origin">' in answer.text
    assert headers["x-content-type-options"] == "nosniff"
    assert "x-moneropay-address" not in headers
    html = answer.text
    assert "<script" not in html.lower() and not re.search(r"<[^>]*\son[a-z]+=", html)
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # no foreign asset
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    allowed = re.search(r"style-src ([^;]+)", csp)
    assert allowed is not None
    for style in re.findall(r"<style>(.*?)</style>", html, flags=re.S):
        assert csp_hash(style) in allowed.group(1).split()


def assert_plain(answer: Response) -> None:
    """A page that is not a form: nothing to post."""
    assert answer.headers["content-type"].startswith("text/html")
    assert "<form" not in answer.text
    assert "form-action 'none'" in answer.headers["content-security-policy"]


def assert_form(answer: Response) -> None:
    """The page with "Pay": a plain form posted to the page's own URL."""
    assert "form-action 'self'" in answer.headers["content-security-policy"]
    form = re.search(r"<form[^>]*>", answer.text)
    assert form is not None
    assert 'method="post"' in form.group(0) and "action=" not in form.group(0)
    assert re.search(r'<button type="submit"[^>]*>Pay</button>', answer.text)


def checkout_address(answer: Response) -> str:
    """The address of the checkout a 303 leads to."""
    assert answer.status_code == 303, answer.text
    assert_safe_redirect(answer)
    found = re.fullmatch(r"/pay/([1-9A-HJ-NP-Za-km-z]+)", answer.headers["location"])
    assert found is not None, answer.headers["location"]
    return found.group(1)


def assert_safe_redirect(answer: Response) -> None:
    for name, value in (
        ("x-frame-options", "DENY"),
        ("cache-control", "no-store"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
    ):
        assert answer.headers[name] == value
    assert "x-moneropay-address" not in answer.headers


# ------------------------------------------------------------------ the page


def test_a_fixed_amount_link_shows_brand_title_description_amount_and_pay(shop: Shop) -> None:
    shop.link(
        "bike-service",
        store="bikes",
        title="Service <b>&</b> check",
        description='Line one <i>"x"</i>\nLine two',
        amount=1_250_000_000_000,
    )
    page = shop.client.get("/l/bike-service")
    assert page.status_code == 200
    assert_safe(page)
    assert_form(page)
    html = page.text
    assert "Bob&#x27;s &lt;Bikes&gt;</h1>" in html  # the link's store, escaped
    assert ":root{--accent:#1d4ed8;" in html
    assert "<title>Service &lt;b&gt;&amp;&lt;/b&gt; check</title>" in html
    assert '<h2 id="link-title">Service &lt;b&gt;&amp;&lt;/b&gt; check</h2>' in html
    # Escaped, its newline kept (the checkout's .desc keeps lines: white-space: pre-line).
    assert (
        '<p class="desc" id="description">Line one &lt;i&gt;&quot;x&quot;&lt;/i&gt;\nLine two</p>'
        in html
    )
    assert '<span id="amount">1.25</span> <span class="unit">XMR</span>' in html
    assert 'name="amount"' not in html  # nothing to type


def test_a_fiat_price_shows_the_price(shop: Shop) -> None:
    shop.link("tea", price={"amount": "4.50", "currency": "EUR"}, expires_in=600)
    html = shop.client.get("/l/tea").text
    assert '<span id="amount">4.50</span> <span class="unit">EUR</span>' in html
    assert "Paid in XMR at the exchange rate" in html and 'name="amount"' not in html
    assert "Monero payment</h1>" in html  # the default store, unnamed: the generic heading


def test_an_open_amount_shows_a_field_with_its_unit_and_minimum(shop: Shop) -> None:
    shop.link("donate", title="Donate", min_amount=10_000_000_000)
    shop.link("donate-eur", title="Donate in euros", currency="EUR", expires_in=600)
    html = shop.client.get("/l/donate").text
    field = re.search(r"<input[^>]*>", html)
    assert field is not None
    for attribute in ('name="amount"', 'inputmode="decimal"', "required", 'value=""'):
        assert attribute in field.group(0)
    assert '<label class="field" for="amount">Amount in XMR</label>' in html
    assert "At least 0.01 XMR." in html
    euros = shop.client.get("/l/donate-eur").text
    assert "Amount in EUR</label>" in euros and "At least" not in euros


def test_a_hostile_title_and_description_are_escaped(shop: Shop) -> None:
    shop.link(
        "evil", title="</h2><script>alert(1)</script>", description="<img src=x onerror=alert(2)>"
    )
    page = shop.client.get("/l/evil")
    assert_safe(page)
    assert "<script>" not in page.text and "<img" not in page.text
    assert "&lt;/h2&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


# ------------------------------------------------------------------ Pay


def test_pay_on_a_fixed_amount_makes_a_request_and_goes_to_its_checkout(shop: Shop) -> None:
    link = shop.link("coffee", amount=3 * XMR // 100, return_url="https://shop.example/thanks")
    answer = shop.pay("coffee")
    address = checkout_address(answer)
    (made,) = shop.made(link)
    assert made.address == address
    assert (made.amount, made.description, made.store_id) == (3 * XMR // 100, "Coffee", "default")
    assert made.return_url == "https://shop.example/thanks"
    assert made.expires_at is not None  # a link's request expires (an hour by default)
    assert shop.pools["default"].taken[0]["link_id"] == link.id
    # The checkout it leads to shows the request.
    checkout = shop.client.get(answer.headers["location"])
    assert checkout.status_code == 200 and address in checkout.text


def test_the_cookie_remembers_the_request_for_this_link_only(shop: Shop) -> None:
    link = shop.link("coffee", amount=XMR, expires_in=1800)
    answer = shop.pay("coffee")
    address = checkout_address(answer)
    cookie = answer.headers["set-cookie"]
    parts = [p.strip() for p in cookie.split(";")]
    assert parts[0] == f"xg_link_{link.id}={address}"
    lowered = [p.lower() for p in parts]
    for needed in ("httponly", "samesite=lax", "path=/l/coffee", "max-age=1800"):
        assert needed in lowered
    assert "secure" not in lowered  # plain http, no https public URL


def test_the_same_browser_goes_back_to_its_request_another_gets_its_own(shop: Shop) -> None:
    link = shop.link("coffee", amount=XMR)
    first = checkout_address(shop.pay("coffee"))
    again = checkout_address(shop.pay("coffee"))
    assert again == first
    assert len(shop.made(link)) == 1
    # The page now offers to continue it.
    page = shop.client.get("/l/coffee")
    assert 'You have an unpaid payment for this link: <a id="resume-link" href=' in page.text
    assert f'href="/pay/{first}"' in page.text
    assert_safe(page)
    # Another browser (no cookie) gets a request of its own, and no "continue".
    other = shop.browser_client("203.0.113.9")
    assert "resume-link" not in other.get("/l/coffee").text
    second = checkout_address(shop.pay("coffee", client=other))
    assert second != first
    assert len(shop.made(link)) == 2
    assert f'href="/pay/{second}"' in other.get("/l/coffee").text


def test_a_paid_or_expired_request_is_not_gone_back_to(shop: Shop) -> None:
    link = shop.link("coffee", amount=XMR)
    first = checkout_address(shop.pay("coffee"))
    shop.book.received[first] = XMR  # money seen: no longer waiting
    assert "resume-link" not in shop.client.get("/l/coffee").text
    second = checkout_address(shop.pay("coffee"))
    assert second != first
    made = shop.book.requests[second]
    shop.book.requests[second] = replace(made, expires_at=datetime.now(UTC) - timedelta(seconds=1))
    third = checkout_address(shop.pay("coffee"))
    assert third not in (first, second)
    assert len(shop.made(link)) == 3


def test_a_forged_cookie_never_reaches_another_request(shop: Shop) -> None:
    coffee = shop.link("coffee", amount=XMR)
    tea = shop.link("tea", amount=2 * XMR)
    tea_address = checkout_address(shop.pay("tea"))
    browser = shop.browser_client("203.0.113.9")
    browser.cookies.set(f"xg_link_{coffee.id}", tea_address, path="/l/coffee")
    assert "resume-link" not in browser.get("/l/coffee").text
    mine = checkout_address(shop.pay("coffee", client=browser))
    assert mine != tea_address and len(shop.made(coffee)) == 1 and len(shop.made(tea)) == 1
    garbled = shop.browser_client("203.0.113.10")
    garbled.cookies.set(f"xg_link_{coffee.id}", "not-an-address!", path="/l/coffee")
    page = garbled.get("/l/coffee")
    assert page.status_code == 200 and "resume-link" not in page.text


def test_an_open_amount_makes_the_typed_amount(shop: Shop) -> None:
    link = shop.link("donate", title="Donate")
    address = checkout_address(shop.pay("donate", " 0.5 "))
    assert shop.book.requests[address].amount == 500_000_000_000
    assert shop.made(link)[0].address == address


def test_an_open_amount_typed_again_goes_back_only_for_the_same_amount(shop: Shop) -> None:
    link = shop.link("donate", title="Donate")
    first = checkout_address(shop.pay("donate", "0.5"))
    assert checkout_address(shop.pay("donate", "0.50")) == first
    second = checkout_address(shop.pay("donate", "1"))
    assert second != first and shop.book.requests[second].amount == XMR
    assert len(shop.made(link)) == 2
    assert checkout_address(shop.pay("donate", "1")) == second


def test_an_open_amount_in_euros_is_priced_at_the_rate(shop: Shop) -> None:
    shop.link("donate-eur", title="Donate", currency="EUR", expires_in=600)
    address = checkout_address(shop.pay("donate-eur", "15"))
    made = shop.book.requests[address]
    assert made.amount == XMR // 10 and made.price is not None and made.price.currency == "EUR"


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("0.001", "at least 0.01 XMR"),
        ("", "Enter the amount to pay."),
        ("   ", "Enter the amount to pay."),
        (None, "Enter the amount to pay."),
        ("abc", "a number of XMR such as 0.25"),
        ("-1", "a number of XMR"),
        ("0.1234567890123", "at most 12"),  # 13 decimals
        ("1,5", "a point (not a comma)"),
        ("1e3", "a number of XMR"),
        ("0", "above zero"),
    ],
)
def test_a_bad_amount_is_the_form_again_with_the_reason(
    shop: Shop, typed: str | None, says: str
) -> None:
    link = shop.link("donate", title="Donate", min_amount=10_000_000_000)
    answer = shop.pay("donate", typed)
    assert answer.status_code == 400
    assert_safe(answer)
    assert_form(answer)
    html = answer.text
    assert 'role="alert"' in html and 'aria-invalid="true"' in html
    error = re.search(r'<p class="error" id="amount-error" role="alert">(.*?)</p>', html)
    assert error is not None and says.lower() in error.group(1).lower(), html
    value = re.search(r'name="amount" type="text" inputmode="decimal" value="([^"]*)"', html)
    assert value is not None and value.group(1) == (typed or "")
    assert not shop.made(link) and not shop.pools["default"].taken
    assert "set-cookie" not in answer.headers


def test_a_typed_value_cannot_break_out_of_the_field(shop: Shop) -> None:
    shop.link("donate", title="Donate")
    answer = shop.pay("donate", '"><script>alert(1)</script>')
    assert answer.status_code == 400
    assert "<script>" not in answer.text
    assert 'value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in answer.text


def test_a_form_that_is_not_a_form_makes_nothing(shop: Shop) -> None:
    link = shop.link("donate", title="Donate")
    as_json = shop.client.post("/l/donate", json={"amount": "0.5"})
    bad_utf8 = shop.client.post(
        "/l/donate",
        content=b"amount=%FF%FE",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    for answer in (as_json, bad_utf8):
        assert answer.status_code == 400
        assert "Enter the amount to pay." in answer.text
    too_big = shop.pay("donate", "0.5" + " " * 5000)
    assert too_big.status_code == 413
    assert_plain(too_big)
    assert not shop.made(link)


# ------------------------------------------------------------------ links that cannot be paid


def test_an_unknown_or_malformed_slug_is_404(shop: Shop) -> None:
    shop.link("coffee", amount=XMR)
    pages = []
    for slug in ("nope-nope", "Coffee", "co", "coffee/x", "x" * 5000, "cöffee", "-coffee"):
        for answer in (shop.client.get(f"/l/{slug}"), shop.pay(slug)):
            assert answer.status_code == 404, slug[:40]
            assert_safe(answer)
            assert_plain(answer)
            pages.append(answer.text)
    assert len(set(pages)) == 1 and "not valid" in pages[0]
    assert not shop.book.requests


def test_an_inactive_link_is_410_and_makes_nothing(shop: Shop) -> None:
    link = shop.link("coffee", amount=XMR)
    address = checkout_address(shop.pay("coffee"))
    asyncio.run(shop.links["default"].update(link.id, {"active": False}))
    for answer in (shop.client.get("/l/coffee"), shop.pay("coffee")):
        assert answer.status_code == 410
        assert_safe(answer)
        assert_plain(answer)
        assert "not taking payments" in answer.text
        assert address not in answer.text
    assert len(shop.made(link)) == 1


def test_a_used_up_link_is_410_but_leads_its_browser_back(shop: Shop) -> None:
    link = shop.link("once", amount=XMR, max_uses=1)
    address = checkout_address(shop.pay("once"))
    other = shop.browser_client("203.0.113.9")
    for answer in (other.get("/l/once"), shop.pay("once", client=other)):
        assert answer.status_code == 410
        assert_plain(answer)
        assert "used as often as it may be" in answer.text
    # The browser that made the one request still finds it.
    page = shop.client.get("/l/once")
    assert page.status_code == 200 and f'href="/pay/{address}"' in page.text
    assert checkout_address(shop.pay("once")) == address
    assert len(shop.made(link)) == 1


def test_an_empty_pool_or_no_rate_is_503_with_retry_after(shop: Shop) -> None:
    link = shop.link("coffee", amount=XMR)
    euros = shop.link("tea", price={"amount": "4.50", "currency": "EUR"}, expires_in=600)
    shop.pools["default"].empty = True
    shop.rates.down = True
    for slug, says in (("coffee", "wallet"), ("tea", "exchange rate")):
        answer = shop.pay(slug)
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "60"
        assert_safe(answer)
        assert_plain(answer)
        assert says in answer.text and "Nothing was charged" in answer.text
    assert not shop.made(link) and not shop.made(euros)
    shop.pools["default"].empty = False
    shop.rates.down = False
    checkout_address(shop.pay("coffee"))  # a minute later, it works


def test_a_disabled_store_is_not_paid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shop = build_shop()
    link = shop.link("bike-repair", store="bikes", amount=XMR)
    assert shop.client.get("/l/bike-repair").status_code == 200
    shop.rows.disabled.add("bikes")  # the operator disabled Bob's store meanwhile
    asyncio.run(shop.app.state.stores.load())
    answer = shop.pay("bike-repair")
    assert answer.status_code == 409
    assert_plain(answer)
    assert not shop.made(link)


# ------------------------------------------------------------------ other sites


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "http://testserver.evil.example"},
        {"Origin": "https://testserver"},
        {"Origin": "null"},  # a sandboxed frame or a data: page
        {"Origin": "null", "Sec-Fetch-Site": "same-site"},
        {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "http://testserver", "Sec-Fetch-Site": "cross-site"},
    ],
)
def test_a_form_posted_from_another_site_is_403_and_makes_nothing(
    shop: Shop, headers: dict[str, str]
) -> None:
    link = shop.link("coffee", amount=XMR)
    answer = shop.pay("coffee", headers=headers)
    assert answer.status_code == 403
    assert_safe(answer)
    assert_plain(answer)
    assert "another site" in answer.text and "set-cookie" not in answer.headers
    assert not shop.made(link) and not shop.pools["default"].taken


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no Origin: an old browser, curl
        {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        # Sec-Fetch-Site, set by the browser, decides when present (web/form_origin.py).
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "none"},  # typed or bookmarked
    ],
)
def test_a_form_posted_from_the_page_itself_is_taken(shop: Shop, headers: dict[str, str]) -> None:
    link = shop.link("coffee", amount=XMR)
    checkout_address(shop.pay("coffee", headers=headers))
    assert len(shop.made(link)) == 1


def test_behind_a_proxy_the_public_url_is_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shop = build_shop(public_url="https://pay.shop.example/gateway/")
    shop.link("coffee", amount=XMR)
    assert shop.pay("coffee", headers={"Origin": "https://evil.example"}).status_code == 403
    answer = shop.pay("coffee", headers={"Origin": "https://pay.shop.example"})
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert location.startswith("https://pay.shop.example/gateway/pay/")
    lowered = [p.strip().lower() for p in answer.headers["set-cookie"].split(";")]
    assert "secure" in lowered and "path=/gateway/l/coffee" in lowered


# ------------------------------------------------------------------ limits and a flood


def test_the_eleventh_pay_from_one_client_in_a_minute_is_429(shop: Shop) -> None:
    links = [shop.link(f"link-{n:02d}", amount=XMR) for n in range(CLIENT_LIMIT + 1)]
    answers = [shop.pay(link.slug) for link in links]  # other links: per client
    assert [a.status_code for a in answers[:CLIENT_LIMIT]] == [303] * CLIENT_LIMIT
    flooded = answers[CLIENT_LIMIT]
    assert flooded.status_code == 429
    assert 1 <= int(flooded.headers["retry-after"]) <= 60
    assert_safe(flooded)
    assert_plain(flooded)
    assert not shop.made(links[-1])
    # Another /64 is not held up; an address of the same /64 is.
    same = TestClient(shop.app, client=("2001:db8:1:2::5", 1), follow_redirects=False)
    for _ in range(CLIENT_LIMIT):
        assert shop.pay(links[-1].slug, client=same).status_code == 303
    nearby = TestClient(shop.app, client=("2001:db8:1:2::ffff", 1), follow_redirects=False)
    assert shop.pay(links[-1].slug, client=nearby).status_code == 429
    other = TestClient(shop.app, client=("2001:db8:1:3::5", 1), follow_redirects=False)
    assert shop.pay(links[-1].slug, client=other).status_code == 303


def test_the_page_itself_is_not_limited(shop: Shop) -> None:
    shop.link("coffee", amount=XMR)
    assert {shop.client.get("/l/coffee").status_code for _ in range(30)} == {200}


def test_going_back_does_not_count_against_the_link(shop: Shop) -> None:
    link = shop.link("coffee", amount=XMR)
    address = checkout_address(shop.pay("coffee"))
    clients = [shop.browser_client(f"192.0.2.{n}") for n in range(1, 100)]
    made = 1
    for client in clients:
        if made == LINK_LIMIT:
            break
        checkout_address(shop.pay("coffee", client=client))
        made += 1
    assert len(shop.made(link)) == LINK_LIMIT
    assert shop.pay("coffee", client=shop.browser_client("192.0.2.200")).status_code == 429
    # The link's limit is spent, yet its first browser still goes back to its request.
    assert checkout_address(shop.pay("coffee")) == address
    assert len(shop.made(link)) == LINK_LIMIT


def test_a_flood_of_10000_pays_makes_at_most_the_links_limit(shop: Shop) -> None:
    """10,000 "Pay" on one link from 40 /64s (each address of a /64 a new one) and a few
    IPv4 clients: at most LINK_LIMIT requests, every other answer 429 with Retry-After;
    the pool gave only those; the other store's link works right after."""
    link = shop.link("donate", title="Donate", min_amount=10**9)
    bikes = shop.link("bike-service", store="bikes", amount=XMR)
    hosts = [f"2001:db8:{net:x}::{n:x}" for net in range(40) for n in range(1, 6)] + [
        f"198.51.100.{n}" for n in range(20, 30)
    ]

    async def flood() -> dict[int, int]:
        codes: dict[int, int] = {}
        # The same form post from each client straight to its ASGI transport: no client
        # around it, so no cookie kept (a flood keeps none: it would only go back) and no
        # client's work per request (a third of the flood's CPU when it went through
        # httpx.AsyncClient); the app answers each in full before the next.
        request = httpx.Request("POST", "http://testserver/l/donate", data={"amount": "0.01"})
        clients = [httpx.ASGITransport(shop.app, client=(host, 4000)) for host in hosts]
        for n in range(10_000):
            answer = await clients[n % len(clients)].handle_async_request(request)
            codes[answer.status_code] = codes.get(answer.status_code, 0) + 1
            if answer.status_code == 429:
                assert answer.headers["retry-after"].isdigit()
        return codes

    started = time.monotonic()
    codes = asyncio.run(flood())
    elapsed = time.monotonic() - started
    assert set(codes) == {303, 429}, codes
    assert codes[303] == LINK_LIMIT and codes[429] == 10_000 - LINK_LIMIT
    assert len(shop.made(link)) == LINK_LIMIT
    assert len(shop.pools["default"].taken) == LINK_LIMIT  # the pool gave only those
    assert not shop.pools["bikes"].taken
    # The other store's link, from a fresh client, works afterwards.
    after = shop.browser_client("203.0.113.50")
    address = checkout_address(shop.pay("bike-service", client=after))
    assert [r.address for r in shop.made(bikes)] == [address]
    assert elapsed < 60  # the limiter's window: the flood was one minute's worth


# ------------------------------------------------------------------ the app around it


def test_the_page_is_public_with_api_keys_and_never_tells_the_wallets_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shop = build_shop(keys=True, stores=False)
    link = shop.link("coffee", amount=XMR)
    page = shop.client.get("/l/coffee")
    assert page.status_code == 200 and "x-moneropay-address" not in page.headers
    answer = shop.pay("coffee")
    assert answer.status_code == 303 and "x-moneropay-address" not in answer.headers
    assert len(shop.made(link)) == 1
    assert shop.client.get("/links").status_code == 401  # the API still needs a key


def test_no_checkout_means_no_link_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shop = build_shop(checkout=False)
    shop.link("coffee", amount=XMR)
    answer = shop.client.get("/l/coffee")
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("application/json")


# ------------------------------------------------------------------ Chromium on a phone


class Site(ServedApp):
    """The app over fakes, served by uvicorn on its own loop in a thread."""

    def __init__(self) -> None:
        parts = build_app()
        self.app, self.book, self.links = parts.app, parts.book, parts.links
        super().__init__(self.app, start_timeout=WAIT)

    def link(self, slug: str, store: str = "default", **fields: Any) -> Link:
        return self.run(self.links[store].create(LinkFields(**fields), slug))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    monkeypatch.chdir(tmp_path)
    with Site() as served:
        yield served


@pytest.fixture
def phone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, PHONE) as driver:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 1, "mobile": True},
        )
        yield driver


def wait_for_checkout(driver: WebDriver, site: Site) -> str:
    """The address of the checkout page the browser lands on."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        found = re.fullmatch(rf"{re.escape(site.url)}/pay/(\w+)", driver.current_url)
        if found and driver.find_elements(By.CSS_SELECTOR, "main#checkout"):
            return found.group(1)
        time.sleep(0.05)
    pytest.fail(f"no checkout page; the browser is at {driver.current_url}")


def screenshot(driver: WebDriver, name: str) -> None:
    """A full-page PNG into test-artifacts/links/, and docs/img/ when asked."""
    path = full_page_png(driver, ARTIFACTS / "links" / f"{name}.png")
    if name in DOC_IMAGES:
        copy_to_docs(path, f"{name}.png")


def assert_fits_a_phone(driver: WebDriver) -> None:
    """Nothing wider than the screen; "Pay" (and the field) large enough to tap."""
    assert_fits(driver, "the page", "phone")
    for element in driver.find_elements(By.CSS_SELECTOR, "button#pay, input#amount"):
        assert element.size["height"] >= 44 and element.size["width"] >= 44, element.size


@pytest.mark.browser
def test_chromium_pays_a_fixed_amount_link_and_goes_back_to_it(
    site: Site, phone: WebDriver
) -> None:
    site.link(
        "bike-service",
        store="bikes",
        title="Bike service",
        description="A full service of your bike.\nBrakes, gears and chain included.",
        amount=250_000_000_000,
    )
    phone.get(f"{site.url}/l/bike-service")
    assert phone.find_element(By.ID, "link-title").text == "Bike service"
    assert phone.find_element(By.ID, "amount").text == "0.25"
    assert "Bob's <Bikes>" in phone.find_element(By.TAG_NAME, "h1").text
    assert_fits_a_phone(phone)
    screenshot(phone, "link-fixed")
    phone.find_element(By.ID, "pay").click()
    address = wait_for_checkout(phone, site)
    assert phone.find_element(By.ID, "address").text == address
    # The link opened again in the same browser: "continue", and Pay goes back to it.
    phone.get(f"{site.url}/l/bike-service")
    resume = phone.find_element(By.ID, "resume-link")
    assert resume.get_attribute("href") == f"{site.url}/pay/{address}"
    phone.find_element(By.ID, "pay").click()
    assert wait_for_checkout(phone, site) == address
    phone.get(f"{site.url}/l/bike-service")
    phone.find_element(By.ID, "resume-link").click()
    assert wait_for_checkout(phone, site) == address
    link = next(x for x in site.book.links.values() if x.slug == "bike-service")
    assert len(site.book.made(link.id)) == 1


@pytest.mark.browser
def test_chromium_pays_an_open_amount_link_and_goes_back_to_it(
    site: Site, phone: WebDriver
) -> None:
    link = site.link(
        "donate",
        title="Support the project",
        description="Any amount helps. Thank you!",
        min_amount=10_000_000_000,
    )
    phone.get(f"{site.url}/l/donate")
    field = phone.find_element(By.ID, "amount")
    assert field.get_attribute("inputmode") == "decimal"
    assert_fits_a_phone(phone)
    field.send_keys("0.5")
    screenshot(phone, "link-open")
    field.clear()
    field.send_keys("0.001")
    phone.find_element(By.ID, "pay").click()
    # The form again, with the reason: wait for the answer's page (the click returns
    # before the browser has loaded it).
    error = WebDriverWait(phone, 10).until(
        lambda d: next(iter(d.find_elements(By.ID, "amount-error")), None)
    )
    assert "at least 0.01 XMR" in error.text
    assert phone.find_element(By.ID, "amount").get_attribute("value") == "0.001"
    assert_fits_a_phone(phone)
    screenshot(phone, "link-open-refused")
    field = phone.find_element(By.ID, "amount")
    field.clear()
    field.send_keys("0.5")
    phone.find_element(By.ID, "pay").click()
    address = wait_for_checkout(phone, site)
    assert phone.find_element(By.ID, "amount").text == "0.5"
    assert site.book.requests[address].amount == 500_000_000_000
    phone.get(f"{site.url}/l/donate")
    assert phone.find_element(By.ID, "resume-link").get_attribute("href") == (
        f"{site.url}/pay/{address}"
    )
    screenshot(phone, "link-open-again")
    phone.find_element(By.ID, "amount").send_keys("0.5")
    phone.find_element(By.ID, "pay").click()
    assert wait_for_checkout(phone, site) == address
    assert len(site.book.made(link.id)) == 1
