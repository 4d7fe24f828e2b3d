"""The cluster's exchange-rate answers in the database (``core.rate_sharing.RateAnswers``).

PostgreSQL: the process holding the rates' advisory lock (``RATES_LOCK_KEY``, kept on a
connection of its own: ``held_lock.py``) leads; it writes ``rate_answers`` through that
connection, so a process that lost the lock cannot write. Every process reads the table.
SQLite: one process owns the file, so it always leads and writes like any other store.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlalchemy import delete, insert, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import RATES_LOCK_KEY, Database, as_utc
from xmrgate.adapters.store.held_lock import HeldLock
from xmrgate.adapters.store.tables import rate_answers
from xmrgate.core.rate_sharing import SharedAnswer
from xmrgate.domain.errors import DatabaseFault
from xmrgate.domain.fiat import plain

#: The longest error text stored: a source's reason is short, but it quotes the source.
MAX_ERROR = 1000


class SqlRateAnswers:
    """Leadership of the rates and the stored answers of one database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = None if db.is_sqlite else HeldLock(db, RATES_LOCK_KEY)

    async def lead(self) -> bool:
        """True when this process leads now (SQLite: always)."""
        return True if self._lock is None else await self._lock.hold()

    async def store(self, answers: Sequence[SharedAnswer]) -> None:
        """Replace the rows of these (source, currency) pairs, in one transaction (a
        reader sees the old rows or the new ones, never a mix)."""
        if not answers:
            return
        if self._lock is None:
            async with self._db.write() as conn:
                await _replace(conn, answers)
        else:
            async with self._lock.transaction() as conn:
                await _replace(conn, answers)

    async def load(self) -> list[SharedAnswer]:
        """Every stored answer."""
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(select(rate_answers))).mappings().all()
        return [_answer(row) for row in rows]

    async def release(self) -> None:
        """Give up the lead at once (shutdown)."""
        if self._lock is not None:
            await self._lock.release()


async def _replace(conn: AsyncConnection, answers: Sequence[SharedAnswer]) -> None:
    keys = [(a.source, a.currency) for a in answers]
    await conn.execute(
        delete(rate_answers).where(tuple_(rate_answers.c.source, rate_answers.c.currency).in_(keys))
    )
    await conn.execute(insert(rate_answers), [_row(a) for a in answers])


def _row(answer: SharedAnswer) -> dict[str, Any]:
    error = answer.error
    if error is not None:
        # PostgreSQL text cannot hold NUL; the reason may quote what a source sent.
        error = error.replace("\x00", "\ufffd")[:MAX_ERROR]
    return {
        "source": answer.source,
        "currency": answer.currency,
        "rate": None if answer.value is None else plain(answer.value),
        "answered_at": answer.at,
        "error": error,
        "checked_at": answer.checked_at,
        "misses": answer.misses,
    }


def _answer(row: Any) -> SharedAnswer:
    try:
        value = None if row["rate"] is None else Decimal(row["rate"])
    except InvalidOperation as exc:  # only this module writes the column
        raise DatabaseFault(f"a stored rate is not a number: {row['rate']!r}") from exc
    at = row["answered_at"]
    return SharedAnswer(
        source=row["source"],
        currency=row["currency"],
        value=value,
        at=None if at is None else as_utc(at),
        error=row["error"],
        checked_at=as_utc(row["checked_at"]),
        misses=int(row["misses"]),
    )
