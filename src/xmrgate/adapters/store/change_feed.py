"""PostgreSQL LISTEN for writes to the tables ``GET /receive`` reads (``core/read_cache.py``).

Migration 0006 puts statement-level triggers on ``payment_requests`` (update, delete),
``transfers`` and ``sync_state`` that ``pg_notify`` the channel below at commit, so any
writer (this process, another worker, another host, a manual fix in psql) empties
every process's cache. This listener holds one connection of its own, outside the
pool; when it is lost the cache is switched off until the connection is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg

from xmrgate.core.read_cache import StatusCache

log = logging.getLogger(__name__)

CHANNEL = "xmrgate_reads_changed"
#: Pause before connecting again after the connection was lost or refused.
RECONNECT_AFTER = 1.0


class ChangeFeed:
    """Keeps ``cache`` in step with the database while connected, off otherwise."""

    def __init__(self, url: str, cache: StatusCache) -> None:
        """``url``: a libpq-style PostgreSQL URL (``postgresql://...``)."""
        self._url = url
        self._cache = cache

    def _changed(self, *_args: Any) -> None:
        self._cache.changed()

    async def run(self, stop: asyncio.Event) -> None:
        """Listen until ``stop``; reconnect whenever the connection drops."""
        while not stop.is_set():
            try:
                await self._listen(stop)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("read cache off: cannot LISTEN (%s)", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=RECONNECT_AFTER)

    async def _listen(self, stop: asyncio.Event) -> None:
        """One connection: cache on while it lasts, off when it ends."""
        lost = asyncio.Event()
        conn = await asyncpg.connect(self._url)
        try:
            conn.add_termination_listener(lambda _conn: lost.set())
            await conn.add_listener(CHANNEL, self._changed)
            # Whatever was written before we listened is unknown: start empty.
            self._cache.enable(True)
            await _first(stop, lost)
            if lost.is_set():
                log.warning("read cache off: lost the LISTEN connection; reconnecting")
        finally:
            self._cache.enable(False)
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)


async def _first(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
