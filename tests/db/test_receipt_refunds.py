"""Refunds of unmatched receipts in SQL, both databases: the money reserved in
``unmatched_receipts.refunded`` (never more than the receipt, not under 20 concurrent
creates either), nothing from a receipt still in the pool or gone, freed again by a cancel,
an expiry and a smaller send; events in the feed without a callback; another store's
receipt not found."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from tests.db.support import new_receipt
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.listing import SqlListing
from xmrgate.adapters.store.refunds import SqlRefundStore
from xmrgate.adapters.store.tables import events, unmatched_receipts
from xmrgate.domain.errors import NotFound
from xmrgate.domain.refunds import (
    NewRefund,
    Refund,
    RefundStatus,
    RefundTooLarge,
    new_claim_token,
    new_refund_id,
    token_digest,
)
from xmrgate.domain.stores import DEFAULT_STORE

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
DAY = timedelta(days=1)


async def _receipt(db: Database, index: int, amount: int, state: str = "confirmed") -> int:
    return await new_receipt(db, index, amount, state=state)


def _new(receipt_id: int, amount: int, *, life: timedelta = DAY) -> NewRefund:
    return NewRefund(
        id=new_refund_id(),
        request_id=None,
        receipt_id=receipt_id,
        amount=amount,
        reason="paid the wrong address",
        token_digest=token_digest(new_claim_token()),
        created_at=NOW,
        expires_at=NOW + life,
    )


async def _refunded(db: Database, receipt_id: int) -> int:
    async with db.read() as conn:
        query = select(unmatched_receipts.c.refunded).where(unmatched_receipts.c.id == receipt_id)
        return int((await conn.execute(query)).scalar_one())


def test_concurrent_refunds_of_a_receipt_reserve_only_what_fits(on_database: Any) -> None:
    """20 creates at once for a receipt that 7 fit: 7 win, the rest RefundTooLarge."""

    async def scenario(db: Database) -> tuple[list[Any], int, int]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        receipt = await _receipt(db, 1, 5000)
        results = await asyncio.gather(
            *(repo.create(_new(receipt, 700), NOW) for _ in range(20)), return_exceptions=True
        )
        stored = await repo.for_receipt(receipt)
        return results, await _refunded(db, receipt), sum(r.amount for r in stored)

    results, refunded, stored = on_database(scenario)
    winners = [r for r in results if isinstance(r, Refund)]
    losers = [r for r in results if isinstance(r, RefundTooLarge)]
    assert len(winners) == 7 and len(losers) == 13, results
    assert refunded == stored == 4900
    assert {(w.request_id, w.request_address) for w in winners} == {(None, "8Lost1")}


def test_a_receipt_not_mined_or_gone_gives_nothing_back(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        for index, state in ((2, "pool"), (3, "gone")):
            receipt = await _receipt(db, index, 900, state)
            assert await repo.refundable_receipt(receipt) == (receipt, 0, 0)
            try:
                await repo.create(_new(receipt, 1), NOW)
                raise AssertionError(f"a {state} receipt was refunded")
            except RefundTooLarge as exc:
                assert "received 0 piconero" in exc.message
            assert await _refunded(db, receipt) == 0

    on_database(scenario)


def test_cancel_expiry_and_a_smaller_send_free_the_receipts_money(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        receipt = await _receipt(db, 4, 1000)
        cancelled = await repo.create(_new(receipt, 600), NOW)
        assert await _refunded(db, receipt) == 600
        assert await repo.cancel(cancelled.id, NOW) is not None
        assert await _refunded(db, receipt) == 0

        lapsing = await repo.create(_new(receipt, 700, life=timedelta(minutes=1)), NOW)
        assert await repo.expire_due(NOW + timedelta(minutes=2)) == 1
        assert (await repo.get(lapsing.id)).status is RefundStatus.EXPIRED  # type: ignore[union-attr]
        assert await _refunded(db, receipt) == 0

        sent = await repo.create(_new(receipt, 1000), NOW)
        claimed = await repo.claim(sent.id, "4Customer", NOW)
        assert claimed is not None and claimed.receipt_id == receipt
        started = await repo.start_sending(sent.id, amount=800)
        assert started is not None and started.amount == 800
        assert await _refunded(db, receipt) == 800
        # Sending already: a second send moves nothing.
        assert await repo.start_sending(sent.id, amount=1001) is None
        assert await _refunded(db, receipt) == 800

    on_database(scenario)


def test_a_receipts_refund_events_are_in_the_feed_without_a_callback(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        receipt = await _receipt(db, 5, 1000)
        made = await repo.create(_new(receipt, 400), NOW)
        await repo.claim(made.id, "4Customer", NOW)
        async with db.read() as conn:
            rows = (await conn.execute(select(events))).mappings().all()
        assert [(r["kind"], r["receipt_id"], r["request_id"], r["callback_url"]) for r in rows] == [
            ("refund.claimed", receipt, None, None)
        ]
        [fed] = await SqlListing(db, DEFAULT_STORE).after(0, 10)
        assert fed.address == "8Lost5"
        body = json.loads(fed.payload)
        assert body["refund"]["unmatched_id"] == receipt and body["address"] == "8Lost5"

    on_database(scenario)


def test_another_stores_receipt_is_not_found(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        receipt = await _receipt(db, 6, 1000)
        other = SqlRefundStore(db, "shop")
        assert await other.refundable_receipt(receipt) is None
        try:
            await other.create(_new(receipt, 1), NOW)
            raise AssertionError("another store reserved a receipt's money")
        except NotFound:
            pass
        assert await _refunded(db, receipt) == 0
        assert await other.for_receipt(receipt) == []

    on_database(scenario)
