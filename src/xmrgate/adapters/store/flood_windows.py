"""The public pages' flood limits counted in the database (implements
``core.limit_ports.WindowCounter``).

Counted in each process's memory, ``--workers 4`` allowed four times the limit; here
every process and host on one PostgreSQL counts in the same row. One row per (limiter,
key) holds a window, opened by the first attempt and closing ``window`` seconds later,
and the attempts counted in it. Each attempt is ONE statement, ``INSERT ... ON CONFLICT
DO UPDATE ... RETURNING``: the conflicting row is locked and re-read, so concurrent
attempts from any process count one after another and each sees the others' counts.

- A closed window is reopened by the attempt that finds it closed (count 1, a new end).
- An attempt over the limit is refused and waits until the window closes; it is counted
  only up to ``limit + 1``, so refusals never extend the wait.
- Rows whose window closed are swept (at most once a minute per process, after an
  attempt's answer is known; a failed sweep is only logged).

The window is fixed from its first attempt, where the in-memory limiter (SQLite, one
process) slides: both allow ``limit`` attempts at once and then nothing until the first
of them is ``window`` seconds old, but a burst at the very end of one window and another
at the start of the next can here make up to twice the limit within ``window`` seconds.
Times are the process's clock (UTC); hosts sharing a database keep their clocks in step
(NTP), as they must for request expiry anyway.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import case, delete
from sqlalchemy.dialects import postgresql, sqlite

from xmrgate.adapters.store.db import Database, as_utc, utcnow
from xmrgate.adapters.store.tables import flood_windows
from xmrgate.domain.errors import XmrgateError

log = logging.getLogger(__name__)

#: Seconds between two sweeps of closed windows by one process.
SWEEP_EVERY = 60.0
# The key column's width: keys are addresses, /64 networks, digests, link ids.
_KEY_LENGTH = 128
_W = flood_windows.c


class SqlFloodWindows:
    """Attempts per (limiter, key) in fixed windows, for the whole cluster."""

    def __init__(
        self,
        db: Database,
        *,
        clock: Callable[[], datetime] = utcnow,
        sweep_every: float = SWEEP_EVERY,
    ) -> None:
        self._db = db
        self._clock = clock
        self._sweep_every = sweep_every
        self._last_sweep = time.monotonic()
        dialect = sqlite if db.is_sqlite else postgresql
        self._insert = dialect.insert

    async def hit(self, limiter: str, key: str, limit: int, window: float) -> int:
        """Count an attempt: 0 when within ``limit`` in the key's window, else the
        seconds until that window closes (>= 1). DatabaseUnavailable when it cannot."""
        if limit < 1 or window <= 0:
            raise ValueError("limit and window must be positive")
        now = self._clock()
        insert = self._insert(flood_windows).values(
            limiter=limiter,
            key=key[:_KEY_LENGTH],
            ends_at=now + timedelta(seconds=window),
            hits=1,
        )
        closed = _W.ends_at <= now
        statement = insert.on_conflict_do_update(
            index_elements=[_W.limiter, _W.key],
            set_={
                "ends_at": case((closed, insert.excluded.ends_at), else_=_W.ends_at),
                "hits": case((closed, 1), (_W.hits > limit, _W.hits), else_=_W.hits + 1),
            },
        ).returning(_W.ends_at, _W.hits)
        async with self._db.write(single_statement=True) as conn:
            ends_at, hits = (await conn.execute(statement)).one()
        await self._sweep_now_and_then(now)
        if hits <= limit:
            return 0
        return max(1, math.ceil((as_utc(ends_at) - now).total_seconds()))

    async def sweep(self, now: datetime | None = None) -> int:
        """Delete the rows whose window closed; how many."""
        async with self._db.write(single_statement=True) as conn:
            swept = await conn.execute(
                delete(flood_windows).where(_W.ends_at <= (now or self._clock()))
            )
        return int(swept.rowcount or 0)

    async def _sweep_now_and_then(self, now: datetime) -> None:
        if time.monotonic() - self._last_sweep < self._sweep_every:
            return
        self._last_sweep = time.monotonic()
        try:
            await self.sweep(now)
        except XmrgateError:
            # The attempt was counted and answered; the next sweep takes these rows.
            log.warning("sweeping the closed flood-limit windows failed", exc_info=True)
