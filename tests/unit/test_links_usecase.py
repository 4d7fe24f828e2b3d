"""Payment links, the use case over in-memory fakes: the merchant's checks
(every refusal stores nothing), and "Pay" (fixed, fiat and open amounts, min_amount,
max_uses, inactive links, the same browser going back to its open request, the request
recording its link and expiring as the link says, the URL guard on the link's URLs)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any, cast

import pytest

from tests.unit.fakes import FakeOutbox, FakePaymentStore, FakeWallet
from testsupport.fake_links import FakeLinkPool, FakeLinkStore, LinkBook
from xmrgate.core.links import Links
from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests, request_columns
from xmrgate.domain.errors import AlreadyExists, Gone, InvalidInput, NotFound
from xmrgate.domain.fiat import Price, Quote, piconero_for
from xmrgate.domain.invoice import MAX_EXPIRES_IN
from xmrgate.domain.links import SLUG, Link, LinkFields, parse_xmr
from xmrgate.domain.money import MAX_AMOUNT
from xmrgate.domain.payloads import callback_json, created_json, record_json

XMR = 10**12
LOCK = 900
RATE = Decimal("150")  # EUR per XMR


class FixedRate:
    """A rate book with one EUR rate."""

    def __init__(self) -> None:
        self.asked: list[Price] = []

    def quote(self, price: Price) -> tuple[int, Quote]:
        self.asked.append(price)
        at = datetime(2026, 11, 25, tzinfo=UTC)
        quote = Quote(str(price.amount), price.currency, str(RATE), ("kraken",), at)
        return piconero_for(price, RATE), quote


@dataclass
class Guard:
    """A URL guard that refuses the URLs in ``refused`` and records what it was asked."""

    refused: set[str] = field(default_factory=set)
    asked: list[tuple[str, str]] = field(default_factory=list)

    async def check(self, url: str, field: str) -> None:
        self.asked.append((url, field))
        if url in self.refused:
            raise InvalidInput(f"{field} points at an internal address")


@dataclass
class Shop:
    """One store's links over a shared book, and what the tests look at."""

    links: Links
    book: LinkBook
    pool: FakeLinkPool
    guard: Guard
    pricing: FixedRate

    def make(self, slug: str | None = None, **fields: Any) -> Link:
        fields.setdefault("title", "Coffee")
        return asyncio.run(self.links.create(LinkFields(**fields), slug))

    def pay(
        self, link: Link, typed: str | None = None, reuse: str | None = None
    ) -> tuple[Any, bool]:
        fresh = asyncio.run(self.links.find(link.slug))
        return asyncio.run(self.links.pay(fresh, typed, reuse))


def build(
    book: LinkBook | None = None,
    store_id: str = "default",
    *,
    currencies: tuple[str, ...] = ("EUR",),
    pricing: bool = True,
) -> Shop:
    book = book or LinkBook()
    guard, rate = Guard(), FixedRate()
    pool = FakeLinkPool(book, store_id)
    requests = PaymentRequests(
        FakeWallet(),
        FakePaymentStore(requests=book.requests),  # type: ignore[arg-type]
        FakeOutbox(),
        guard,
        pool=pool,
        pricing=rate if pricing else None,
        rate_lock=LOCK,
    )
    links = Links(
        FakeLinkStore(book, store_id),
        requests,
        guard,
        store_id=store_id,
        pricing=rate if pricing else None,
        currencies=currencies if pricing else (),
        rate_lock=LOCK,
    )
    return Shop(links, book, pool, guard, rate)


@pytest.fixture
def shop() -> Shop:
    return build()


# ------------------------------------------------------------------ the merchant's


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("empty title", {"title": ""}, "title"),
    ("blank title", {"title": "   "}, "title"),
    ("long title", {"title": "x" * 201}, "title"),
    ("long description", {"description": "x" * 2001}, "description"),
    ("NUL", {"description": "a\x00b"}, "NUL"),
    ("amount and price", {"amount": 1, "price": {"amount": "5", "currency": "EUR"}}, "one of"),
    ("amount and min", {"amount": 5, "min_amount": 1}, "open amount"),
    (
        "price and currency",
        {"price": {"amount": "5", "currency": "EUR"}, "currency": "EUR"},
        "open",
    ),
    ("zero amount", {"amount": 0}, "amount"),
    ("huge amount", {"amount": MAX_AMOUNT + 1}, "amount"),
    ("bool amount", {"amount": True}, "amount"),
    ("zero min", {"min_amount": 0}, "min_amount"),
    ("price decimals", {"price": {"amount": "5.001", "currency": "EUR"}}, "decimals"),
    ("price negative", {"price": {"amount": "-5", "currency": "EUR"}}, "digits"),
    ("price not configured", {"price": {"amount": "5", "currency": "USD"}}, "not configured"),
    ("price unknown currency", {"price": {"amount": "5", "currency": "XYZ"}}, "unknown"),
    ("currency not configured", {"currency": "USD"}, "not configured"),
    ("currency junk", {"currency": "euro"}, "ISO 4217"),
    ("short life", {"amount": 5, "expires_in": 59}, "expires_in"),
    ("long life", {"amount": 5, "expires_in": MAX_EXPIRES_IN + 1}, "expires_in"),
    ("fiat beyond the lock", {"currency": "EUR", "expires_in": LOCK + 1}, "rate lock"),
    (
        "price beyond the lock",
        {"price": {"amount": "5", "currency": "EUR"}, "expires_in": LOCK + 1},
        "rate lock",
    ),
    ("no uses", {"amount": 5, "max_uses": 0}, "max_uses"),
    ("internal callback", {"amount": 5, "callback_url": "http://10.0.0.1/cb"}, "callback_url"),
    ("internal return", {"amount": 5, "return_url": "http://10.0.0.1/r"}, "return_url"),
]


@pytest.mark.parametrize(
    ("fields", "message"), [(f, m) for _, f, m in REFUSED], ids=[n for n, _, _ in REFUSED]
)
def test_a_refused_link_stores_nothing(shop: Shop, fields: dict[str, Any], message: str) -> None:
    shop.guard.refused = {"http://10.0.0.1/cb", "http://10.0.0.1/r"}
    fields.setdefault("title", "Coffee")
    with pytest.raises(InvalidInput, match=message):
        asyncio.run(shop.links.create(LinkFields(**fields)))
    assert shop.book.links == {}


@pytest.mark.parametrize("slug", ["ab", "Coffee", "-coffee", "cof fee", "café", "x" * 65])
def test_a_bad_slug_is_refused(shop: Shop, slug: str) -> None:
    with pytest.raises(InvalidInput, match="slug"):
        shop.make(slug, amount=5)
    assert shop.book.links == {}


def test_prices_in_fiat_need_pricing() -> None:
    shop = build(pricing=False)
    for fields in ({"price": {"amount": "5", "currency": "EUR"}}, {"currency": "EUR"}):
        with pytest.raises(InvalidInput, match="turned off"):
            shop.make(**fields)
    assert shop.make().fields.currency is None  # an open amount in XMR needs no rate
    assert len(shop.book.links) == 1


def test_a_chosen_slug_is_unique_across_stores(shop: Shop) -> None:
    other = build(shop.book, "bikes")
    shop.make("coffee", amount=5)
    with pytest.raises(AlreadyExists):
        other.make("coffee", amount=5)
    assert len(shop.book.links) == 1


def test_a_link_as_stored(shop: Shop) -> None:
    link = shop.make(
        title="  Coffee  ",
        amount=3 * XMR,
        callback_url="https://shop.example/cb",
        return_url="",
    )
    assert SLUG.fullmatch(link.slug) and link.id.startswith("ln_")
    assert link.fields.title == "Coffee" and link.fields.return_url is None
    assert link.fields.expires_in == 3600 and link.fields.active
    assert ("https://shop.example/cb", "callback_url") in shop.guard.asked
    priced = shop.make(price={"amount": "5.00", "currency": "eur"}, expires_in=600)
    assert priced.fields.price == {"amount": "5.00", "currency": "EUR"}
    assert shop.links.default_expires_in(True) == LOCK
    assert shop.links.default_expires_in(False) == 3600


def test_get_listing_and_another_stores_link(shop: Shop) -> None:
    other = build(shop.book, "bikes")
    mine = shop.make(amount=5)
    theirs = other.make(amount=5)
    assert asyncio.run(shop.links.get(mine.id)).id == mine.id
    for unknown in (theirs.id, "ln_0000000000000000", "junk"):
        with pytest.raises(NotFound):
            asyncio.run(shop.links.get(unknown))
        with pytest.raises(NotFound):
            asyncio.run(shop.links.delete(unknown))
        with pytest.raises(NotFound):
            asyncio.run(shop.links.update(unknown, {"title": "x"}))
    assert [x.id for x in asyncio.run(shop.links.listing(10))] == [mine.id]
    for limit in (0, 1001):
        with pytest.raises(InvalidInput):
            asyncio.run(shop.links.listing(limit))
    # The page finds any store's link by its slug; it names its store.
    assert asyncio.run(shop.links.find(theirs.slug)).store_id == "bikes"


def test_find_refuses_unknown_and_malformed_slugs(shop: Shop) -> None:
    for slug in ("nothing-here", "../etc", "A" * 100, ""):
        with pytest.raises(NotFound):
            asyncio.run(shop.links.find(slug))


def test_update_changes_only_what_is_given(shop: Shop) -> None:
    link = shop.make("coffee", amount=5, description="hot", max_uses=3)
    changed = asyncio.run(shop.links.update(link.id, {"title": "Tea"}))
    assert changed.slug == "coffee" and changed.fields.title == "Tea"
    assert (changed.fields.description, changed.fields.amount, changed.fields.max_uses) == (
        "hot",
        5,
        3,
    )
    # Another kind of amount replaces the old one; a fiat one takes the rate lock.
    priced = asyncio.run(
        shop.links.update(link.id, {"price": {"amount": "4.50", "currency": "EUR"}})
    )
    assert priced.fields.amount is None and priced.fields.expires_in == LOCK
    opened = asyncio.run(shop.links.update(link.id, {"min_amount": XMR}))
    assert opened.fields.price is None and opened.fields.min_amount == XMR
    cleared = asyncio.run(shop.links.update(link.id, {"max_uses": None, "active": False}))
    assert cleared.fields.max_uses is None and not cleared.fields.active


@pytest.mark.parametrize(
    "changes",
    [
        {"title": ""},
        {"title": None},
        {"slug": "tea"},
        {"id": "ln_x"},
        {"amount": 5, "price": {"amount": "5", "currency": "EUR"}},
        {"expires_in": 10},
        {"currency": "EUR", "expires_in": LOCK + 1},
        {"callback_url": "http://10.0.0.1/cb"},
        {"max_uses": 0},
    ],
)
def test_a_refused_update_changes_nothing(shop: Shop, changes: dict[str, Any]) -> None:
    shop.guard.refused = {"http://10.0.0.1/cb"}
    link = shop.make(amount=5)
    with pytest.raises(InvalidInput):
        asyncio.run(shop.links.update(link.id, changes))
    assert shop.book.links[link.id] == link


def test_delete_removes_an_unused_link_and_turns_off_a_used_one(shop: Shop) -> None:
    unused, used = shop.make(amount=5), shop.make(amount=5)
    shop.pay(used)
    assert asyncio.run(shop.links.delete(unused.id)) is True
    assert asyncio.run(shop.links.delete(used.id)) is False
    assert unused.id not in shop.book.links
    assert not shop.book.links[used.id].fields.active
    with pytest.raises(Gone):
        shop.pay(used)


# ------------------------------------------------------------------ the payer's


def _life(request: Any) -> float:
    assert request.expires_at is not None
    return float((request.expires_at - datetime.now(UTC)).total_seconds())


def test_a_fixed_amount(shop: Shop) -> None:
    link = shop.make(
        title="Coffee",
        description="a long text nobody needs on the wallet",
        amount=3 * XMR,
        callback_url="https://shop.example/cb",
        return_url="https://shop.example/thanks",
        expires_in=600,
    )
    request, reused = shop.pay(link, typed="999")  # a typed amount is ignored
    assert not reused
    assert (request.amount, request.description) == (3 * XMR, "Coffee")
    assert request.callback_url == "https://shop.example/cb"
    assert request.return_url == "https://shop.example/thanks"
    assert 595 < _life(request) <= 600
    # The request records its link: in the columns the store gets, and in the counts.
    assert shop.pool.taken[-1]["link_id"] == link.id and request.link == link.id
    assert shop.book.made_by[request.address] == link.id
    assert asyncio.run(shop.links.get(link.id)).uses == 1


def test_a_fiat_price(shop: Shop) -> None:
    link = shop.make(price={"amount": "19.99", "currency": "EUR"}, expires_in=600)
    request, _ = shop.pay(link)
    assert request.amount == piconero_for(Price(Decimal("19.99"), "EUR"), RATE)
    assert request.price is not None and request.price.amount == "19.99"
    assert 595 < _life(request) <= 600


def test_an_open_amount_in_xmr(shop: Shop) -> None:
    link = shop.make(min_amount=XMR // 10)
    request, _ = shop.pay(link, typed=" 0.25 ")
    assert request.amount == XMR // 4 and request.price is None
    assert 3590 < _life(request) <= 3600
    with pytest.raises(InvalidInput, match=r"at least 0\.1 XMR"):
        shop.pay(link, typed="0.099999999999")
    assert len(shop.book.requests) == 1


@pytest.mark.parametrize(
    "typed",
    [
        None,
        "",
        "  ",
        "0",
        "0.0",
        "1,5",
        "-1",
        "+1",
        "1e3",
        ".5",
        "5.",
        "0.0000000000001",
        "1 000",
        "\u0661",  # an Arabic-Indic one: int() would take it
        "10000000",
        "NaN",
    ],
)
def test_a_bad_typed_amount_makes_nothing(shop: Shop, typed: str | None) -> None:
    link = shop.make()
    with pytest.raises(InvalidInput):
        shop.pay(link, typed=typed)
    assert shop.book.requests == {} and shop.pool.taken == []


def test_parse_xmr_is_exact() -> None:
    assert parse_xmr("0.000000000001") == 1
    assert parse_xmr("1") == XMR
    assert parse_xmr("0.3") == 3 * XMR // 10
    assert parse_xmr("9223372.036854775807") == MAX_AMOUNT
    with pytest.raises(InvalidInput, match="more XMR"):
        parse_xmr("9223372.036854775808")


def test_an_open_amount_in_fiat(shop: Shop) -> None:
    link = shop.make(currency="eur", min_amount=XMR // 100, expires_in=300)
    assert link.fields.currency == "EUR"
    request, _ = shop.pay(link, typed="15.00")
    assert request.amount == XMR // 10 and request.price.currency == "EUR"
    assert 295 < _life(request) <= 300
    for typed, message in (
        ("15.001", "at most 2 decimals"),
        ("15,00", "point"),
        ("1.00", "at least"),
    ):
        with pytest.raises(InvalidInput, match=message):
            shop.pay(link, typed=typed)
    assert len(shop.book.requests) == 1


def test_an_inactive_link_makes_nothing(shop: Shop) -> None:
    link = shop.make(amount=5, active=False)
    with pytest.raises(Gone, match="not taking payments"):
        shop.pay(link)
    assert shop.book.requests == {}


def test_max_uses(shop: Shop) -> None:
    link = shop.make(amount=5, max_uses=2)
    first, _ = shop.pay(link)
    shop.pay(link)
    with pytest.raises(Gone):
        shop.pay(link)
    assert len(shop.book.requests) == 2
    # A browser going back to its open request still finds it.
    again, reused = shop.pay(link, reuse=first.address)
    assert reused and again.address == first.address


def test_max_uses_holds_under_concurrent_payers(shop: Shop) -> None:
    link = shop.make(amount=5, max_uses=3)
    stale = asyncio.run(shop.links.find(link.slug))  # uses 0, as every payer read it

    async def payers() -> list[Any]:
        return await asyncio.gather(
            *(shop.links.pay(stale, None, None) for _ in range(20)), return_exceptions=True
        )

    answers = asyncio.run(payers())
    assert sum(isinstance(a, tuple) for a in answers) == 3
    assert all(isinstance(a, Gone) for a in answers if not isinstance(a, tuple))
    assert len(shop.book.requests) == 3


def test_the_same_browser_goes_back_to_its_open_request(shop: Shop) -> None:
    link = shop.make(amount=5)
    first, reused = shop.pay(link)
    again, reused_again = shop.pay(link, reuse=first.address)
    assert (reused, reused_again) == (False, True)
    assert again.address == first.address and len(shop.book.requests) == 1


def test_no_reuse_of_a_paid_expired_funded_or_foreign_request(shop: Shop) -> None:
    link, other_link = shop.make(amount=5), shop.make(amount=5)
    other_store = build(shop.book, "bikes")
    theirs = other_store.make(amount=5)
    made = [shop.pay(link)[0] for _ in range(3)]
    paid, expired, funded = made
    shop.book.requests[paid.address] = replace(paid, status="paid")
    past = datetime.now(UTC) - timedelta(seconds=1)
    shop.book.requests[expired.address] = replace(expired, expires_at=past)
    shop.book.received[funded.address] = 1
    foreign = shop.pay(other_link)[0]
    foreign_store = other_store.pay(theirs)[0]
    for address in (
        paid.address,
        expired.address,
        funded.address,
        foreign.address,
        foreign_store.address,
        "8" + "9" * 94,
        "not an address!",
    ):
        before = len(shop.book.requests)
        request, reused = shop.pay(link, reuse=address)
        assert not reused and request.address != address
        assert len(shop.book.requests) == before + 1


def test_the_url_guard_checks_the_links_urls_again_at_pay(shop: Shop) -> None:
    link = shop.make(amount=5, callback_url="https://shop.example/cb")
    # The name now points inside (DNS changed): the request is refused, nothing made.
    shop.guard.refused = {"https://shop.example/cb"}
    with pytest.raises(InvalidInput, match="callback_url"):
        shop.pay(link)
    assert shop.book.requests == {}


def test_a_link_of_another_store_is_not_paid_here(shop: Shop) -> None:
    theirs = build(shop.book, "bikes").make(amount=5)
    with pytest.raises(ValueError, match="bikes"):
        asyncio.run(shop.links.pay(theirs, None, None))
    assert shop.book.requests == {}


def test_prune_unpaid_keeps_requests_with_money(shop: Shop) -> None:
    link = shop.make(amount=5)
    old, funded, fresh = (shop.pay(link)[0] for _ in range(3))
    past = datetime.now(UTC) - timedelta(hours=2)
    for request in (old, funded):
        shop.book.requests[request.address] = replace(request, expires_at=past)
    shop.book.received[funded.address] = 1
    repo = FakeLinkStore(shop.book)
    assert asyncio.run(repo.prune_unpaid(datetime.now(UTC) - timedelta(hours=1), 100)) == 1
    assert set(shop.book.requests) == {funded.address, fresh.address}


# ------------------------------------------------------------------ the JSON shapes


def test_link_id_is_a_column_only_of_a_links_request() -> None:
    assert "link_id" not in request_columns(NewPaymentRequest(amount=5))
    assert request_columns(NewPaymentRequest(amount=5, link_id="ln_1"))["link_id"] == "ln_1"


def test_without_a_pool_the_wallet_path_records_the_link_too() -> None:
    class LinkedStore(FakePaymentStore):
        async def create(self, *, link_id: str | None = None, **values: Any) -> Any:
            made = await super().create(**values)
            self.requests[made.address] = replace(made, link=link_id)
            return self.requests[made.address]

    book = LinkBook()
    store = LinkedStore(requests=book.requests)
    requests = PaymentRequests(FakeWallet(), store, FakeOutbox(), Guard())
    links = Links(FakeLinkStore(book), requests, Guard())
    link = asyncio.run(links.create(LinkFields(title="Coffee", amount=5)))
    request, _ = asyncio.run(links.pay(link, None, None))
    assert request.link == link.id and request.amount == 5
    # An API request passes no link_id: stores without the column still take it.
    plain = asyncio.run(requests.create(NewPaymentRequest(amount=7)))
    assert plain.link is None


def test_link_in_the_json_only_when_a_link_made_the_request() -> None:
    base = {
        "address": "8abc",
        "amount": 5,
        "description": "x",
        "created_at": datetime(2026, 11, 25, tzinfo=UTC),
        "expires_at": None,
        "underpay_tolerance": 0,
        "status": "waiting",
        "price": None,
    }
    plain = cast(Any, SimpleNamespace(**base))
    linked = cast(Any, SimpleNamespace(**base, link="ln_0123456789abcdef"))
    assert "link" not in record_json(plain) and "link" not in created_json(plain)
    assert record_json(linked)["link"] == created_json(linked)["link"] == "ln_0123456789abcdef"
    event = cast(
        Any,
        SimpleNamespace(
            kind="request.expired",
            transfer=None,
            status=SimpleNamespace(value="expired"),
            coverage=SimpleNamespace(total=0, unlocked=0, expected=5),
        ),
    )
    assert "link" not in callback_json(plain, "8abc", event, 1)
    assert callback_json(linked, "8abc", event, 1)["link"] == "ln_0123456789abcdef"
