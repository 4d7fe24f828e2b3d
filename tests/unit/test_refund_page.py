"""The customer's refund claim page, ``/refund/{token}`` (``web/refund_page``).

In process: the app over Gateways whose ``Refunds`` use the in-memory refund book
(``testsupport/fake_refunds.py``) and the fake wallet, one store or two. Covers the
page and its form, one claim only, the hostile input (guessed and
malformed tokens, other networks' addresses, spaces, payment ids, framing, posts from
another origin, a flood of claims) and that a page never shows another refund.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from tests.unit.fakes import FakeJournal, FakeWallet
from tests.unit.gateway_builder import fake_app, fake_gateway, fake_stores
from testsupport.fake_refunds import FakeRefundStore, RefundBook
from xmrgate.config import Settings
from xmrgate.core.gateway import Gateway
from xmrgate.core.payouts import Payouts
from xmrgate.core.refunds import RefundAsk, Refunds
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.errors import WalletUnavailable
from xmrgate.domain.monero_keys import ALPHABET, base58_decode
from xmrgate.domain.refunds import RefundStatus
from xmrgate.domain.stores import DEFAULT_STORE_NAME, Store, key_digest
from xmrgate.web.checkout.page import csp_hash
from xmrgate.web.limits import SlidingWindow, client_key

# Real addresses of a throwaway regtest wallet (tests/unit/test_monero_keys.py).
ADDRESS = (
    "47egMG6teAeRcW7WKRfmnJfq6fRLG2zmpLu2YmvbPS3B3JY"
    "zL3iazF83v7qJSweJiN7AVMBrZ9gsW5PtfSZNfGTRT2PViky"
)
SUBADDRESS = (
    "83rGqPx7diBcEDoKTwB65VeE4PwWsjkBDQWvKSh93cumexV"
    "xGV3exdkYsco9vmg3c7J2ijuZgs114i5YDV7kwzPKMSAWExx"
)
INTEGRATED = (
    "4HMMN4vPFSARcW7WKRfmnJfq6fRLG2zmpLu2YmvbPS3B3JYzL3iaz"
    "F83v7qJSweJiN7AVMBrZ9gsW5PtfSZNfGTRfWjf613y6788UcWCw7"
)
_ENCODED_SIZES = [0, 2, 3, 5, 6, 7, 9, 10, 11]


def base58_encode(raw: bytes) -> str:
    """Monero's block base58 (the inverse of ``monero_keys.base58_decode``)."""
    out = []
    for start in range(0, len(raw), 8):
        block = raw[start : start + 8]
        number = int.from_bytes(block, "big")
        chars = []
        for _ in range(_ENCODED_SIZES[len(block)]):
            number, digit = divmod(number, 58)
            chars.append(ALPHABET[digit])
        out.append("".join(reversed(chars)))
    return "".join(out)


def with_prefix(address: str, prefix: int) -> str:
    """The same keys under another network prefix (the checksum is the wallet's check)."""
    return base58_encode(bytes([prefix]) + base58_decode(address)[1:])


# The customers' addresses: ADDRESS; a testnet one; one with a mistyped character.
TESTNET = with_prefix(ADDRESS, 53)
TYPO = ADDRESS[:50] + ("b" if ADDRESS[50] != "b" else "c") + ADDRESS[51:]
# The shops' payment requests (mainnet subaddresses).
REQUEST_A = SUBADDRESS
REQUEST_B = base58_encode(bytes([42]) + bytes(range(1, 65)) + b"\x01\x02\x03\x04")
XMR = 10**12
OPERATOR_KEY = "operator-key-for-the-refund-page"


def test_the_test_addresses_are_what_they_claim() -> None:
    assert base58_encode(base58_decode(ADDRESS)) == ADDRESS
    assert base58_decode(TESTNET)[0] == 53 and len(TESTNET) == 95
    assert base58_decode(REQUEST_B)[0] == 42 and len(REQUEST_B) == 95
    assert len(TYPO) == 95 and TYPO != ADDRESS


# ------------------------------------------------------------------ the app over fakes


class CountingStore(FakeRefundStore):
    """A store's fake repository that counts token lookups (the 404 path's timing)."""

    def __init__(self, book: RefundBook, store_id: str = "default") -> None:
        super().__init__(book, store_id)
        self.lookups = 0

    async def by_token(self, digest: str) -> Any:
        self.lookups += 1
        return await super().by_token(digest)


class Rows:
    """The stores table: the default store (unnamed) and Bob's."""

    async def all(self) -> list[Store]:
        return [
            Store(id="default", name=DEFAULT_STORE_NAME, account_index=0),
            Store(id="bikes", name="Bob's <Bikes>", account_index=1, accent="#1d4ed8"),
        ]

    async def active_keys(self) -> list[Any]:
        return []


@dataclass
class Shop:
    """The app and what its tests look at."""

    client: TestClient
    book: RefundBook
    wallet: FakeWallet
    stores: dict[str, Refunds]
    public: CountingStore

    def make(
        self, amount: int = XMR, reason: str = "", store: str = "default", **ask: Any
    ) -> tuple[str, str]:
        """A new open refund of ``store``: (its token, its id)."""
        address = REQUEST_A if store == "default" else REQUEST_B
        made = asyncio.run(
            self.stores[store].create(
                RefundAsk(address=address, amount=amount, reason=reason, **ask)
            )
        )
        return made.token, made.refund.id

    def status(self, refund_id: str) -> RefundStatus:
        return self.book.refunds[refund_id].status

    def claim(self, token: str, address: str = ADDRESS, **headers: str) -> Response:
        answer: Response = self.client.post(
            f"/refund/{token}", data={"address": address}, headers=headers
        )
        return answer


def _gateway(refunds: Refunds, wallet: FakeWallet, store_id: str, keys: list[ApiKey]) -> Gateway:
    return fake_gateway(
        store_id,
        wallet=wallet,
        identity=WalletIdentity(primary_address=ADDRESS),
        api_keys=keys,
        refunds=refunds,
    )


def build_shop(
    tmp_path: Path,
    *,
    stores: bool = True,
    keys: bool = False,
    checkout: bool = True,
    public_url: str | None = None,
    client: tuple[str, int] = ("198.51.100.7", 40000),
) -> Shop:
    book = RefundBook()
    book.add_request(REQUEST_A, 5 * XMR, "default")
    book.add_request(REQUEST_B, 5 * XMR, "bikes")
    wallet = FakeWallet()
    api_keys = (
        [ApiKey(digest=key_digest(OPERATOR_KEY), label="key:op", scopes=frozenset({"read"}))]
        if keys
        else []
    )
    public = CountingStore(book, "default")

    def refunds(repo: FakeRefundStore) -> Refunds:
        return Refunds(repo, Payouts(wallet, FakeJournal(), priority=0, timeout=5), wallet)

    default_refunds = refunds(public)
    bikes_refunds = refunds(FakeRefundStore(book, "bikes"))
    default = _gateway(default_refunds, wallet, "default", api_keys)
    registry = fake_stores(
        lambda store: (
            default
            if store.id == "default"
            else _gateway(bikes_refunds, wallet, store.id, api_keys)
        ),
        Rows() if stores else None,
        operator_keys=api_keys,
    )
    settings = Settings(
        sqlite=str(tmp_path / "unused.sqlite3"),
        checkout=checkout,
        public_url=public_url,
        metrics=False,
    )
    app = fake_app(settings, registry)
    return Shop(
        client=TestClient(app, client=client),
        book=book,
        wallet=wallet,
        stores={"default": default_refunds, "bikes": bikes_refunds},
        public=public,
    )


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Shop]:
    built = build_shop(tmp_path)
    yield built
    built.client.close()


def assert_plain(answer: Response) -> None:
    """A page that is not a form: no form, no field, nothing to post."""
    assert answer.headers["content-type"].startswith("text/html")
    assert "<form" not in answer.text and 'name="address"' not in answer.text
    assert "form-action 'none'" in answer.headers["content-security-policy"]


def assert_safe(answer: Response) -> None:
    """The headers and page rules every refund page keeps."""
    headers = answer.headers
    csp = headers["content-security-policy"]
    directives = [d.strip() for d in csp.split(";")]
    assert directives[0] == "default-src 'none'"
    for needed in ("img-src data:", "frame-ancestors 'none'", "base-uri 'none'"):
        assert needed in directives
    assert "script-src" not in csp and "unsafe-inline" not in csp and "connect-src" not in csp
    assert headers["x-frame-options"] == "DENY"
    assert headers["cache-control"] == "no-store"
    # same-origin, not no-referrer: the token never goes to another site, and Chromium
    # posts the page's own form with its real Origin (under no-referrer: "null").
    assert headers["referrer-policy"] == "same-origin"
    # A <meta name="referrer"> would override the header in the browser.
    assert 'name="referrer" content="no-referrer"' not in answer.text
    assert headers["x-content-type-options"] == "nosniff"
    assert "x-moneropay-address" not in headers
    html = answer.text
    assert "<script" not in html.lower()
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # no foreign asset
    allowed = re.search(r"style-src ([^;]+)", csp)
    assert allowed is not None
    for style in re.findall(r"<style>(.*?)</style>", html, flags=re.S):
        assert csp_hash(style) in allowed.group(1).split()


# ------------------------------------------------------------------ the page and a claim


def test_an_open_refund_shows_shop_amount_reason_expiry_and_a_plain_form(shop: Shop) -> None:
    token, _ = shop.make(
        amount=1_250_000_000_000, reason='Returned: <b>size</b> & "fit"', store="bikes"
    )
    page = shop.client.get(f"/refund/{token}")
    assert page.status_code == 200
    assert_safe(page)
    assert "form-action 'self'" in page.headers["content-security-policy"]
    html = page.text
    assert "Bob&#x27;s &lt;Bikes&gt;</h1>" in html  # the refund's store, escaped
    assert ":root{--accent:#1d4ed8;" in html
    assert '<span id="amount">1.25</span>' in html and "1250000000000 piconero" in html
    assert "Returned: &lt;b&gt;size&lt;/b&gt; &amp; &quot;fit&quot;" in html
    assert "<b>size</b>" not in html
    assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ">', html)
    form = re.search(r"<form[^>]*>", html)
    assert form is not None
    assert 'method="post"' in form.group(0) and "action=" not in form.group(0)
    assert re.search(r'<input[^>]* name="address"', html)


def test_a_hostile_reason_is_escaped(shop: Shop) -> None:
    token, _ = shop.make(reason="</p><script>alert(1)</script><img src=x onerror=alert(2)>")
    html = shop.client.get(f"/refund/{token}").text
    assert "<script>" not in html and "<img" not in html
    assert "&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_default_store_unnamed_shows_the_generic_heading(shop: Shop) -> None:
    token, _ = shop.make()
    html = shop.client.get(f"/refund/{token}").text
    assert "Monero refund</h1>" in html and "Bikes" not in html


def test_a_valid_claim_is_recorded_and_says_what_happens_next(shop: Shop) -> None:
    token, refund_id = shop.make(store="bikes")
    answer = shop.claim(token, f"  {ADDRESS}\n")
    assert answer.status_code == 200, answer.text
    assert_safe(answer)
    assert_plain(answer)
    assert "Refund claimed" in answer.text and ADDRESS in answer.text
    assert "shop sends the refund" in answer.text and "wallet" in answer.text
    refund = shop.book.refunds[refund_id]
    assert refund.status is RefundStatus.CLAIMED and refund.claim_address == ADDRESS
    # Claimed through its own store's Gateway: the event is the store's.
    assert shop.book.events == [("refund.claimed", refund_id, "bikes")]


def test_an_integrated_address_may_be_claimed_to(shop: Shop) -> None:
    token, refund_id = shop.make()
    assert shop.claim(token, INTEGRATED).status_code == 200
    assert shop.book.refunds[refund_id].claim_address == INTEGRATED


def test_a_second_claim_is_a_409_page_without_form_or_address(shop: Shop) -> None:
    token, refund_id = shop.make()
    assert shop.claim(token).status_code == 200
    for again in (shop.claim(token, INTEGRATED), shop.client.get(f"/refund/{token}")):
        assert again.status_code == 409
        assert_safe(again)
        assert_plain(again)
        assert ADDRESS not in again.text and INTEGRATED not in again.text
        assert "claimed already" in again.text
    assert shop.book.refunds[refund_id].claim_address == ADDRESS
    assert len(shop.book.events) == 1


def test_an_expired_refund_is_410(shop: Shop) -> None:
    token, refund_id = shop.make()
    refund = shop.book.refunds[refund_id]
    # Past its life, not yet swept: still "open" in the book, expired to the customer.
    shop.book.refunds[refund_id] = replace(
        refund, expires_at=datetime.now(UTC) - timedelta(seconds=1)
    )
    for answer in (shop.client.get(f"/refund/{token}"), shop.claim(token)):
        assert answer.status_code == 410
        assert_safe(answer)
        assert_plain(answer)
        assert "expired" in answer.text
    assert shop.book.refunds[refund_id].claim_address is None


def test_a_cancelled_refund_is_410(shop: Shop) -> None:
    token, refund_id = shop.make()
    asyncio.run(shop.stores["default"].cancel(refund_id))
    for answer in (shop.client.get(f"/refund/{token}"), shop.claim(token)):
        assert answer.status_code == 410
        assert_plain(answer)
        assert "withdrew" in answer.text
    assert shop.status(refund_id) is RefundStatus.CANCELLED


# ------------------------------------------------------------------ guessed tokens


def test_unknown_and_malformed_tokens_get_the_same_404_on_the_same_path(shop: Shop) -> None:
    shop.make()
    unknown = secrets.token_urlsafe(24)
    malformed = [
        unknown[:20],  # too short
        unknown[:31] + "é",  # not ASCII
        "A" * 10_000,  # 10 KB
        unknown[:16] + "/" + unknown[17:],  # a slash inside
        "",
        unknown + "x",  # too long by one
    ]
    pages = []
    for token in [unknown, *malformed]:
        for answer in (shop.client.get(f"/refund/{token}"), shop.claim(token)):
            assert answer.status_code == 404, token[:40]
            assert_safe(answer)
            assert_plain(answer)
            pages.append(answer.text)
    assert len(set(pages)) == 1
    assert "not valid" in pages[0]
    # Every one of them, malformed or not, was looked up once (a decoy for malformed).
    assert shop.public.lookups == 2 * (1 + len(malformed))
    assert not shop.book.events


def test_a_token_of_another_shape_never_reaches_a_refund(shop: Shop) -> None:
    token, refund_id = shop.make()
    for variant in (token.upper(), token.lower(), token[::-1], f" {token}"):
        if variant == token:
            continue
        assert shop.claim(variant).status_code == 404
    assert shop.status(refund_id) is RefundStatus.OPEN


# ------------------------------------------------------------------ bad addresses


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        (ADDRESS[:40] + " " + ADDRESS[40:], "space"),
        (f"{ADDRESS}?tx_payment_id=0123456789abcdef", "payment id"),
        (f"monero:{ADDRESS}", "payment id or URI"),
        (TESTNET, "This is a testnet address; this shop takes mainnet addresses."),
        (TYPO, "checksum"),
        (ADDRESS[:-1], "not a complete Monero address"),
        ("", "Enter your Monero address"),
        ("   ", "Enter your Monero address"),
    ],
)
def test_a_bad_address_is_the_form_again_with_the_reason(shop: Shop, typed: str, says: str) -> None:
    shop.wallet.invalid_addresses.add(TYPO)  # the wallet's checksum check refuses it
    token, refund_id = shop.make()
    answer = shop.claim(token, typed)
    assert answer.status_code == 400
    assert_safe(answer)
    assert "form-action 'self'" in answer.headers["content-security-policy"]
    html = answer.text
    assert 'role="alert"' in html and says.replace("'", "&#x27;") in html
    assert 'aria-invalid="true"' in html and "<form" in html
    if typed.strip():
        value = re.search(r'name="address" type="text" value="([^"]*)"', html)
        assert value is not None
        assert value.group(1) == typed.replace("&", "&amp;")  # the typed value, escaped
    assert shop.status(refund_id) is RefundStatus.OPEN
    assert not shop.book.events


def test_a_typed_value_cannot_break_out_of_the_field(shop: Shop) -> None:
    token, _ = shop.make()
    answer = shop.claim(token, '"><script>alert(1)</script>')
    assert answer.status_code == 400
    assert "<script>" not in answer.text
    assert 'value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in answer.text


def test_another_networks_address_the_wallet_names_is_refused(shop: Shop) -> None:
    # Mainnet prefix locally, but the shop's wallet says it is a stagenet one.
    shop.wallet.address_networks[INTEGRATED] = "stagenet"
    token, refund_id = shop.make()
    answer = shop.claim(token, INTEGRATED)
    assert answer.status_code == 400
    assert "This is a stagenet address; this shop takes mainnet addresses." in answer.text
    assert shop.status(refund_id) is RefundStatus.OPEN


def test_a_form_that_is_not_a_form_is_the_form_again(shop: Shop) -> None:
    token, refund_id = shop.make()
    as_json = shop.client.post(f"/refund/{token}", json={"address": ADDRESS})
    bad_utf8 = shop.client.post(
        f"/refund/{token}",
        content=b"address=%FF%FE",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    for answer in (as_json, bad_utf8):
        assert answer.status_code == 400
        assert "Enter your Monero address" in answer.text
    assert shop.status(refund_id) is RefundStatus.OPEN


def test_a_body_over_4_kib_is_refused_unread(shop: Shop) -> None:
    token, refund_id = shop.make()
    answer = shop.claim(token, ADDRESS + "x" * 4096)
    assert answer.status_code == 413
    assert_plain(answer)
    assert shop.status(refund_id) is RefundStatus.OPEN


def test_a_wallet_that_cannot_check_now_is_503_with_retry_after(shop: Shop) -> None:
    shop.wallet.validate_error = WalletUnavailable("connection refused", request_sent=False)
    token, refund_id = shop.make()
    answer = shop.claim(token)
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "60"
    assert_safe(answer)
    assert_plain(answer)
    assert "Nothing was claimed" in answer.text
    assert shop.status(refund_id) is RefundStatus.OPEN
    shop.wallet.validate_error = None
    assert shop.claim(token).status_code == 200  # a minute later, it works


# ------------------------------------------------------------------ other sites


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "http://testserver.evil.example"},
        {"Origin": "https://testserver"},  # another scheme is another origin
        {"Origin": "http://testserver:8080"},
        {"Origin": "null"},  # a sandboxed frame or a data: page, in an old browser
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # a sibling subdomain is another origin
        {"Origin": "http://testserver", "Sec-Fetch-Site": "cross-site"},
    ],
)
def test_a_form_posted_from_another_origin_is_403_and_claims_nothing(
    shop: Shop, headers: dict[str, str]
) -> None:
    token, refund_id = shop.make()
    answer = shop.claim(token, **headers)
    assert answer.status_code == 403
    assert_safe(answer)
    assert_plain(answer)
    assert "another site" in answer.text
    assert shop.status(refund_id) is RefundStatus.OPEN
    assert not shop.book.events


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no Origin: an old browser, curl
        {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        {"Origin": "HTTP://TestServer:80"},
        # What Chromium sends for a page's own form under Referrer-Policy: no-referrer
        # (a page cached from before): the browser's own Sec-Fetch-Site decides.
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
    ],
)
def test_a_form_posted_from_the_page_itself_is_taken(shop: Shop, headers: dict[str, str]) -> None:
    token, refund_id = shop.make()
    assert shop.claim(token, **headers).status_code == 200
    assert shop.status(refund_id) is RefundStatus.CLAIMED


def test_behind_a_proxy_the_public_urls_origin_is_the_pages(tmp_path: Path) -> None:
    shop = build_shop(tmp_path, public_url="https://pay.shop.example/gateway")
    token, refund_id = shop.make()
    assert shop.claim(token, Origin="https://evil.example").status_code == 403
    assert shop.claim(token, Origin="https://pay.shop.example").status_code == 200
    assert shop.status(refund_id) is RefundStatus.CLAIMED


def test_no_page_may_be_framed(shop: Shop) -> None:
    token, _ = shop.make()
    answers = [
        shop.client.get(f"/refund/{token}"),
        shop.claim(token, "nope"),
        shop.client.get("/refund/nope"),
        shop.claim(token, Origin="https://evil.example"),
    ]
    for answer in answers:
        assert answer.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]


# ------------------------------------------------------------------ a flood


def test_the_eleventh_claim_from_one_address_in_a_minute_is_429(shop: Shop) -> None:
    tokens = [secrets.token_urlsafe(24) for _ in range(11)]  # fresh tokens: per address
    answers = [shop.claim(token) for token in tokens]
    assert [a.status_code for a in answers[:10]] == [404] * 10
    flooded = answers[10]
    assert flooded.status_code == 429
    assert 1 <= int(flooded.headers["retry-after"]) <= 60
    assert_safe(flooded)
    assert_plain(flooded)
    # A refused claim claims nothing, even with a real token.
    token, refund_id = shop.make()
    assert shop.claim(token).status_code == 429
    assert shop.status(refund_id) is RefundStatus.OPEN
    # Another client is not held up by this one, and the page still shows.
    other = TestClient(shop.client.app, client=("203.0.113.9", 5000))
    assert other.post(f"/refund/{token}", data={"address": ADDRESS}).status_code == 200
    assert shop.status(refund_id) is RefundStatus.CLAIMED


def test_the_sixth_claim_of_one_token_in_a_minute_is_429(shop: Shop) -> None:
    token, refund_id = shop.make()
    codes = [shop.claim(token, "not-an-address").status_code for _ in range(5)]
    assert codes == [400] * 5
    answer = shop.claim(token)
    assert answer.status_code == 429 and "retry-after" in answer.headers
    assert shop.status(refund_id) is RefundStatus.OPEN
    # The same client may still claim another refund.
    other_token, other_id = shop.make()
    assert shop.claim(other_token).status_code == 200
    assert shop.status(other_id) is RefundStatus.CLAIMED


def test_the_page_itself_is_not_limited(shop: Shop) -> None:
    token, _ = shop.make()
    assert {shop.client.get(f"/refund/{token}").status_code for _ in range(15)} == {200}


def test_the_limiter_slides_and_its_memory_is_bounded() -> None:
    now = [1000.0]
    limiter = SlidingWindow(2, 60.0, max_keys=3, clock=lambda: now[0])
    assert limiter.hit("a") == 0 and limiter.hit("a") == 0
    assert limiter.hit("a") == 60
    now[0] += 30
    assert limiter.hit("a") == 30  # refused attempts are not counted
    now[0] += 30.5
    assert limiter.hit("a") == 0  # the first two left the window
    for key in ("b", "c", "d", "e"):
        limiter.hit(key)
    assert len(limiter) == 3  # "a" and "b", the least recently seen, were forgotten
    assert limiter.hit("a") == 0 and limiter.hit("a") == 0  # "a" starts afresh
    assert len(limiter) == 3
    with pytest.raises(ValueError):
        SlidingWindow(0, 60.0)


def test_client_keys_group_an_ipv6_64() -> None:
    assert client_key("2001:db8:1:2::5") == client_key("2001:db8:1:2:ffff::1")
    assert client_key("2001:db8:1:2::5") != client_key("2001:db8:1:3::5")
    assert client_key("::ffff:192.0.2.1") == client_key("192.0.2.1") == "192.0.2.1"
    assert client_key(None) == "?"


# ------------------------------------------------------------------ one refund per page


def test_a_refunds_page_never_shows_another_refund(shop: Shop) -> None:
    token_a, _ = shop.make(amount=1_111_111_111_111, reason="Reason of refund A")
    token_b, id_b = shop.make(amount=2_222_222_222_222, reason="Reason of refund B", store="bikes")
    page_a = shop.client.get(f"/refund/{token_a}").text
    page_b = shop.client.get(f"/refund/{token_b}").text
    assert "1.111111111111" in page_a and "Reason of refund A" in page_a
    assert "2.222222222222" not in page_a and "Reason of refund B" not in page_a
    assert "Bikes" not in page_a and REQUEST_A not in page_a and REQUEST_B not in page_a
    assert "2.222222222222" in page_b and "Reason of refund B" in page_b
    assert "1.111111111111" not in page_b and "Reason of refund A" not in page_b
    # B claimed: A's page and claim are untouched, and B's answer names only B.
    claimed_b = shop.claim(token_b, INTEGRATED).text
    assert "2.222222222222" in claimed_b and "1.111111111111" not in claimed_b
    page_a = shop.client.get(f"/refund/{token_a}")
    assert page_a.status_code == 200 and INTEGRATED not in page_a.text
    assert shop.book.refunds[id_b].claim_address == INTEGRATED


# ------------------------------------------------------------------ the app around it


def test_the_page_is_public_with_api_keys_and_never_tells_the_wallets_address(
    tmp_path: Path,
) -> None:
    shop = build_shop(tmp_path, keys=True, stores=False)
    token, refund_id = shop.make()
    page = shop.client.get(f"/refund/{token}")
    assert page.status_code == 200
    assert "x-moneropay-address" not in page.headers
    assert shop.claim(token).status_code == 200
    assert shop.status(refund_id) is RefundStatus.CLAIMED
    assert shop.client.get("/refunds").status_code == 401  # the API still needs a key


def test_a_single_store_gateway_claims_with_its_own_refunds(tmp_path: Path) -> None:
    shop = build_shop(tmp_path, stores=False)
    token, refund_id = shop.make(reason="One shop")
    assert "One shop" in shop.client.get(f"/refund/{token}").text
    assert shop.claim(token).status_code == 200
    assert shop.status(refund_id) is RefundStatus.CLAIMED


def test_no_checkout_means_no_refund_page(tmp_path: Path) -> None:
    shop = build_shop(tmp_path, checkout=False)
    token, _ = shop.make()
    answer = shop.client.get(f"/refund/{token}")
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("application/json")
