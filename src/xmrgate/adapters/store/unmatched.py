"""One store's unmatched receipts in SQL (implements ``core.unmatched.ReceiptRepository``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select, tuple_, update

from xmrgate.adapters.store import payments
from xmrgate.adapters.store.db import Database, as_utc
from xmrgate.adapters.store.tables import unmatched_receipts
from xmrgate.adapters.store.unmatched_rows import receipt_from_row
from xmrgate.core.unmatched import ReceiptTotals
from xmrgate.domain.ledger import TransferState
from xmrgate.domain.unmatched import ReceiptStatus, UnmatchedReceipt

_R = unmatched_receipts.c


class SqlUnmatched:
    """The receipts of ONE store: every read and write is scoped by it."""

    def __init__(self, db: Database, store_id: str) -> None:
        self._db = db
        self._store_id = store_id

    async def page(
        self, status: ReceiptStatus | None, limit: int, after: tuple[datetime, int] | None
    ) -> list[UnmatchedReceipt]:
        """Up to ``limit`` receipts newest first (``ix_unmatched_receipts_store_created``)."""
        statement = select(unmatched_receipts).where(_R.store_id == self._store_id)
        if status is not None:
            statement = statement.where(_R.status == status.value)
        if after is not None:
            statement = statement.where(tuple_(_R.created_at, _R.id) < tuple_(*after))
        statement = statement.order_by(_R.created_at.desc(), _R.id.desc()).limit(limit)
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(statement)).mappings().all()
        return [receipt_from_row(row) for row in rows]

    async def get(self, receipt_id: int) -> UnmatchedReceipt | None:
        """The store's receipt, or None."""
        async with self._db.read(autocommit=True) as conn:
            row = (
                (
                    await conn.execute(
                        select(unmatched_receipts).where(
                            _R.id == receipt_id, _R.store_id == self._store_id
                        )
                    )
                )
                .mappings()
                .first()
            )
        return None if row is None else receipt_from_row(row)

    async def dismiss(self, receipt_id: int, note: str, now: datetime) -> UnmatchedReceipt | None:
        """Open -> dismissed in one conditional UPDATE: of two racing dismissals one wins."""
        async with self._db.write() as conn:
            changed = await conn.execute(
                update(unmatched_receipts)
                .where(
                    _R.id == receipt_id,
                    _R.store_id == self._store_id,
                    _R.status == ReceiptStatus.OPEN.value,
                )
                .values(status=ReceiptStatus.DISMISSED.value, note=note, dismissed_at=now)
            )
            if changed.rowcount != 1:
                return None
            row = (
                (await conn.execute(select(unmatched_receipts).where(_R.id == receipt_id)))
                .mappings()
                .one()
            )
        return receipt_from_row(row)

    async def chain_height(self) -> int:
        """The main wallet's synced height (every wallet follows the same chain)."""
        async with self._db.read(autocommit=True) as conn:
            return await payments.chain_height(conn) or 0

    async def totals(self) -> ReceiptTotals:
        """Open receipts that are not gone: count, amount, the oldest's creation."""
        async with self._db.read(autocommit=True) as conn:
            row = (
                await conn.execute(
                    select(
                        func.count(), func.coalesce(func.sum(_R.amount), 0), func.min(_R.created_at)
                    ).where(
                        _R.store_id == self._store_id,
                        _R.status == ReceiptStatus.OPEN.value,
                        _R.state != TransferState.GONE.value,
                    )
                )
            ).one()
        return ReceiptTotals(
            count=int(row[0]), amount=int(row[1]), oldest=None if row[2] is None else as_utc(row[2])
        )
