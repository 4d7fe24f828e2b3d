"""Use cases of invoices (docs/invoices.md) with in-memory fakes: creating a request with expiry and
tolerance, and the list and feed's refusals and paging."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.fakes import AllowAll, FakeOutbox, FakePaymentStore, FakeWallet
from xmrgate.core.invoices import (
    FeedEvent,
    Invoices,
    ListQuery,
    decode_cursor,
    encode_cursor,
)
from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.records import PaymentRequest

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def make_requests(wallet: FakeWallet, store: FakePaymentStore) -> PaymentRequests:
    return PaymentRequests(wallet, store, FakeOutbox(), AllowAll())  # type: ignore[arg-type]


def request(n: int) -> PaymentRequest:
    return PaymentRequest(
        id=n,
        address=f"8{n:094d}",
        subaddr_index=n,
        amount=5,
        description="",
        callback_url=None,
        return_url=None,
        created_at=NOW - timedelta(seconds=n),
        created_height=None,
    )


class Listing:
    """Rows newest first, honouring the cursor and limit like the SQL does."""

    def __init__(self, count: int) -> None:
        self.rows = [request(n) for n in range(1, count + 1)]

    async def page(self, query: ListQuery, now: datetime) -> list[PaymentRequest]:
        rows = self.rows
        if query.after_key is not None:
            at, ident = query.after_key
            rows = [r for r in rows if (r.created_at, r.id) < (at, ident)]
        return rows[: query.limit + 1]

    async def after(self, seq: int, limit: int) -> list[FeedEvent]:
        return [FeedEvent(s, "8x", "transfer.pool", "{}") for s in range(seq + 1, seq + 1 + limit)]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"amount": 5, "underpay_tolerance": 6}, "underpay_tolerance"),
        ({"amount": 5, "underpay_tolerance": -1}, "underpay_tolerance"),
        ({"amount": 5, "expires_in": 0}, "expires_in"),
        ({"amount": 5, "expires_in": 2_592_001}, "expires_in"),
    ],
)
def test_create_refuses_bad_terms(fields: dict[str, int], message: str) -> None:
    """The use case refuses what the schema refuses too (InvalidInput, a 400)."""
    wallet, store = FakeWallet(), FakePaymentStore()
    with pytest.raises(InvalidInput, match=message):
        asyncio.run(make_requests(wallet, store).create(NewPaymentRequest(**fields)))
    assert store.requests == {}, "nothing recorded for a refused request"
    assert wallet.next_index == FakeWallet().next_index, "no subaddress spent on it"


def test_create_records_expiry_tolerance_and_status() -> None:
    """expires_at = now + expires_in; the first status; amount fully tolerated: complete."""
    store = FakePaymentStore()
    requests = make_requests(FakeWallet(), store)
    before = datetime.now(UTC)
    made = asyncio.run(
        requests.create(NewPaymentRequest(amount=5, expires_in=60, underpay_tolerance=2))
    )
    assert made.expires_at is not None
    assert timedelta(seconds=59) < made.expires_at - before < timedelta(seconds=61)
    assert (made.underpay_tolerance, made.status) == (2, "waiting")
    free = asyncio.run(requests.create(NewPaymentRequest(amount=5, underpay_tolerance=5)))
    assert (free.expires_at, free.status) == (None, "complete")


def test_list_pages_with_cursor() -> None:
    """next_cursor until the last page; pages do not overlap and miss nothing."""
    invoices = Invoices(Listing(7), Listing(0))
    seen: list[int] = []
    query = ListQuery(limit=3)
    while True:
        page = asyncio.run(invoices.find(query))
        seen += [r.id for r in page.requests]
        if page.next_cursor is None:
            break
        query = ListQuery(limit=3, after_key=decode_cursor(page.next_cursor))
    assert seen == list(range(1, 8))


@pytest.mark.parametrize(
    "query",
    [
        ListQuery(limit=0),
        ListQuery(limit=501),
        ListQuery(created_after=NOW, created_before=NOW),
    ],
)
def test_list_refusals(query: ListQuery) -> None:
    with pytest.raises(InvalidInput):
        asyncio.run(Invoices(Listing(1), Listing(0)).find(query))


@pytest.mark.parametrize("cursor", ["", "x", "MTIz", "LTEuLTE", "!!"])
def test_foreign_cursors_are_refused(cursor: str) -> None:
    with pytest.raises(InvalidInput):
        decode_cursor(cursor)


def test_cursor_round_trips_to_the_microsecond() -> None:
    at = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    assert decode_cursor(encode_cursor(at, 42)) == (at, 42)


def test_feed_refusals_and_pass_through() -> None:
    invoices = Invoices(Listing(0), Listing(0))
    with pytest.raises(InvalidInput):
        asyncio.run(invoices.events(-1, 10))
    for limit in (0, 501):
        with pytest.raises(InvalidInput):
            asyncio.run(invoices.events(0, limit))
    assert [e.seq for e in asyncio.run(invoices.events(10, 2))] == [11, 12]
