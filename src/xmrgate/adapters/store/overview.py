"""The database's facts for the overview and the metrics, in ONE statement.

A UNION ALL of small aggregates, each row ``(kind, key, value)``: the synced height,
callback events by status (pending, failed), payment requests by the status the sync
tick recorded, open unmatched receipts (count and amount), and the size of the address
pool; indexes answer the counts. Built
once; run on an autocommit connection like the other hot reads.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Select,
    String,
    cast,
    func,
    literal,
    select,
    union_all,
)

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.outbox import FAILED, PENDING
from xmrgate.adapters.store.payments import SYNC_STATE_ID
from xmrgate.adapters.store.tables import (
    address_pool,
    events,
    payment_requests,
    sync_state,
    unmatched_receipts,
)
from xmrgate.core.overview import StoreBreakdown, StoreFacts
from xmrgate.domain.ledger import TransferState
from xmrgate.domain.unmatched import ReceiptStatus

_SYNCED = "synced_height"
_CALLBACKS = "callbacks"
_REQUESTS = "requests"
_POOL = "address_pool"
_UNMATCHED = "unmatched"
_UNMATCHED_AMOUNT = "unmatched_amount"
# Open receipts whose money did not vanish (a reorg, a double spend).
_OPEN_RECEIPTS = (unmatched_receipts.c.status == ReceiptStatus.OPEN.value) & (
    unmatched_receipts.c.state != TransferState.GONE.value
)


def _row(kind: str, store: Any, key: Any, value: Any) -> list[Any]:
    """Typed columns: PostgreSQL must know each column's type in a UNION."""
    return [
        cast(literal(kind), String).label("kind"),
        cast(store, String).label("store"),
        cast(key, String).label("key"),
        cast(value, BigInteger).label("value"),
    ]


# Counted by store (the store label of /metrics); the totals are their sums.
_PARTS: list[Select[Any]] = [
    # Every wallet's synced height, keyed by its sync_state row (the main wallet's is
    # SYNC_STATE_ID; a store on its own wallet has its own row).
    select(*_row(_SYNCED, literal(""), sync_state.c.id, sync_state.c.wallet_height)),
    select(*_row(_CALLBACKS, events.c.store_id, events.c.status, func.count()))
    .where(events.c.status.in_([PENDING, FAILED]))
    .group_by(events.c.store_id, events.c.status),
    # The status the sync tick records (domain/invoice.py).
    select(
        *_row(_REQUESTS, payment_requests.c.store_id, payment_requests.c.status, func.count())
    ).group_by(payment_requests.c.store_id, payment_requests.c.status),
    select(*_row(_UNMATCHED, unmatched_receipts.c.store_id, literal(""), func.count()))
    .where(_OPEN_RECEIPTS)
    .group_by(unmatched_receipts.c.store_id),
    select(
        *_row(
            _UNMATCHED_AMOUNT,
            unmatched_receipts.c.store_id,
            literal(""),
            func.sum(unmatched_receipts.c.amount),
        )
    )
    .where(_OPEN_RECEIPTS)
    .group_by(unmatched_receipts.c.store_id),
]
FACTS_QUERY = union_all(*_PARTS)
FACTS_QUERY_WITH_POOL = union_all(
    *_PARTS,
    select(*_row(_POOL, address_pool.c.store_id, literal(""), func.count())).group_by(
        address_pool.c.store_id
    ),
)


class OverviewStore:
    """Reads the facts of ``core.overview.StoreFacts``."""

    def __init__(self, db: Database, *, with_pool: bool = True) -> None:
        """``with_pool`` False (``--address-pool-size 0``): no pool size is reported."""
        self._db = db
        self._query = FACTS_QUERY_WITH_POOL if with_pool else FACTS_QUERY

    async def facts(self) -> StoreFacts:
        """One statement on an autocommit connection."""
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(self._query)).all()
        synced: dict[int, int] = {}
        callbacks: dict[tuple[str, str], int] = {}
        requests: dict[tuple[str, str], int] = {}
        pool: dict[str, int] | None = {} if self._query is FACTS_QUERY_WITH_POOL else None
        unmatched: dict[str, tuple[int, int]] = {}
        for kind, store, key, value in rows:
            if kind == _SYNCED:
                synced[int(key)] = int(value)
            elif kind == _CALLBACKS:
                callbacks[(store, key)] = int(value)
            elif kind == _REQUESTS:
                requests[(store, key)] = int(value)
            elif kind == _POOL and pool is not None:
                pool[store] = int(value)
            elif kind == _UNMATCHED:
                unmatched[store] = (int(value), unmatched.get(store, (0, 0))[1])
            elif kind == _UNMATCHED_AMOUNT:
                unmatched[store] = (unmatched.get(store, (0, 0))[0], int(value))
        totals: dict[str, int] = {}
        for (_store, status), count in requests.items():
            totals[status] = totals.get(status, 0) + count
        return StoreFacts(
            synced_height=synced.get(SYNC_STATE_ID),
            callbacks_pending=sum(n for (_s, k), n in callbacks.items() if k == PENDING),
            callbacks_failed=sum(n for (_s, k), n in callbacks.items() if k == FAILED),
            requests_by_status=totals,
            address_pool=None if pool is None else sum(pool.values()),
            by_store=StoreBreakdown(
                requests=requests,
                callbacks=callbacks,
                pool=pool or {},
                unmatched=unmatched,
                synced=synced,
            ),
        )
