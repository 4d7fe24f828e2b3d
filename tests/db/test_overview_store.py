"""The overview's facts in one statement: synced height, callbacks pending and failed,
payment requests by their recorded status, the address pool."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, update

from tests.db.support import new_receipt
from tests.db.test_retention import _event
from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.overview import OverviewStore
from xmrgate.adapters.store.payments import SYNC_STATE_ID, PaymentStore
from xmrgate.adapters.store.tables import (
    events,
    payment_requests,
    sync_state,
)
from xmrgate.core.overview import REQUEST_STATUSES, StoreBreakdown, StoreFacts

# The status recorded for each request (the sync tick writes it; here we do).
STATUSES = ["waiting", "waiting", "partial", "paid", "complete", "complete", "complete"]
STATUSES += ["expired", "paid_late"]


async def _fill(db: Database) -> None:
    store = PaymentStore(db)
    for index, status in enumerate(STATUSES, start=1):
        request = await store.create(
            address=f"8Addr{index}",
            subaddr_index=index,
            amount=100,
            description="",
            callback_url="https://shop.example/cb",
            return_url=None,
        )
        async with db.write() as conn:
            await conn.execute(
                update(payment_requests)
                .where(payment_requests.c.id == request.id)
                .values(status=status)
            )
    async with db.write() as conn:
        await insert_events(conn, [_event(1, n) for n in range(1, 7)])
        for n, status in [(1, "delivered"), (2, "failed"), (3, "failed")]:
            await conn.execute(
                update(events).where(events.c.id == _event(1, n)["id"]).values(status=status)
            )
        await conn.execute(
            insert(sync_state).values(id=SYNC_STATE_ID, wallet_height=1234, updated_at=utcnow())
        )
    await SqlAddressPool(db).add([(f"8Pool{i}", 100 + i) for i in range(7)])
    # Unmatched receipts: two open ones count (10 + 20); dismissed or gone do not.
    receipts = [(10, "open", "confirmed"), (20, "open", "pool")]
    receipts += [(40, "dismissed", "unlocked"), (80, "open", "gone")]
    for n, (amount, status, state) in enumerate(receipts):
        await new_receipt(db, 50 + n, amount, state=state, status=status)


def test_facts_count_what_the_database_holds(on_database: Any) -> None:
    """Every figure of an empty database, then of a filled one, in one read each."""

    async def scenario(db: Database) -> tuple[StoreFacts, StoreFacts, StoreFacts]:
        empty = await OverviewStore(db).facts()
        await _fill(db)
        with_pool = await OverviewStore(db).facts()
        return empty, with_pool, await OverviewStore(db, with_pool=False).facts()

    empty, facts, no_pool = on_database(scenario)
    assert empty == StoreFacts(None, 0, 0, {}, 0, StoreBreakdown())
    assert empty.requests() == dict.fromkeys(REQUEST_STATUSES, 0)
    want = {s: STATUSES.count(s) for s in set(STATUSES)}
    assert facts.requests_by_status == want
    assert set(want) == set(REQUEST_STATUSES)  # every status the tick records
    assert facts.synced_height == 1234
    assert (facts.callbacks_pending, facts.callbacks_failed) == (3, 2)
    assert facts.address_pool == 7
    # The same by store (every row here is the default store's).
    assert facts.by_store is not None
    assert facts.by_store.requests == {("default", s): n for s, n in want.items()}
    assert facts.by_store.callbacks == {("default", "pending"): 3, ("default", "failed"): 2}
    assert facts.by_store.pool == {"default": 7}
    assert facts.by_store.unmatched == {"default": (2, 30)}
    assert no_pool.address_pool is None
    assert no_pool.requests_by_status == want
