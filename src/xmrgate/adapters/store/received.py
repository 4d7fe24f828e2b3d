"""Daily sums of received XMR for the dashboard's chart, in ONE indexed statement.

Mined transfers (``confirmed`` or ``unlocked``: pool transfers may still vanish, gone
ones did) with a block time in the window, grouped by day in the caller's time zone.
``ix_transfers_state_timestamp`` (migration 0005) makes the window one range scan per
state: the statement reads the window's transfers only, however old the database.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, bindparam, func, select

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.tables import payment_requests, transfers
from xmrgate.core.received import SECONDS_PER_DAY
from xmrgate.domain.ledger import TransferState

MINED = (TransferState.CONFIRMED.value, TransferState.UNLOCKED.value)

_OFFSET = bindparam("utc_offset", type_=BigInteger)
# ``//`` is integer division on both backends (block times are positive: truncating is
# the floor).
_DAY = ((transfers.c.timestamp + _OFFSET) // SECONDS_PER_DAY).label("day")
DAILY_QUERY = (
    select(_DAY, func.sum(transfers.c.amount), func.count())
    .where(
        transfers.c.timestamp >= bindparam("since", type_=BigInteger),
        transfers.c.state.in_(MINED),
    )
    .group_by(_DAY)
)
# One store's: its requests' transfers.
STORE_DAILY_QUERY = DAILY_QUERY.join_from(
    transfers, payment_requests, payment_requests.c.id == transfers.c.request_id
).where(payment_requests.c.store_id == bindparam("store"))


class ReceivedStore:
    """Implements ``core.received.DailySums``."""

    def __init__(self, db: Database, store_id: str | None = None) -> None:
        self._db = db
        # None: every store's transfers (the operator's overview).
        self._store_id = store_id

    async def daily_sums(self, since: int, utc_offset: int) -> dict[int, tuple[int, int]]:
        """Day number -> (piconero, transfers), on an autocommit connection."""
        async with self._db.read(autocommit=True) as conn:
            values: dict[str, object] = {"since": since, "utc_offset": utc_offset}
            if self._store_id is None:
                rows = await conn.execute(DAILY_QUERY, values)
            else:
                rows = await conn.execute(STORE_DAILY_QUERY, {**values, "store": self._store_id})
            return {int(day): (int(total), int(count)) for day, total, count in rows}
