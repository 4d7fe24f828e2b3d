"""A PostgreSQL session advisory lock kept from one call to the next.

``Database.sync_leadership`` takes its lock around each tick and lets it go. The
exchange rates' leader keeps its lock instead, on a connection of its own, for as long
as it lives: were the lock let go between refreshes, each process would take it in turn
and the sources would be asked once per process again. PostgreSQL releases a session
lock when its connection ends, which is how another process takes over from a leader
that died. The leader writes through that same connection, so a process that lost it
can no longer write as the leader.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import Database, translated_errors
from xmrgate.domain.errors import DatabaseUnavailable, XmrgateError

log = logging.getLogger(__name__)


class HeldLock:
    """One session advisory lock (``key``), held until :meth:`release` or until its
    connection dies."""

    def __init__(self, db: Database, key: int) -> None:
        self._db, self._key = db, key
        self._conn: AsyncConnection | None = None

    @property
    def held(self) -> bool:
        """True while this object believes it holds the lock (its connection may have
        died since; :meth:`hold` finds out)."""
        return self._conn is not None

    async def hold(self) -> bool:
        """True when this process holds the lock now.

        A held lock's connection must still answer; one that does not is dropped and the
        lock is tried again on a new connection. A free lock is taken. Raises our errors
        (``DatabaseUnavailable``) when the database cannot be asked.
        """
        if self._conn is not None:
            try:
                async with self.transaction() as conn:
                    await conn.execute(text("SELECT 1"))
                return True
            except XmrgateError as exc:
                log.warning("lost the connection holding lock %#x: %s", self._key, exc.message)
        with translated_errors():
            conn = await self._db.engine.connect()
        got: bool | None = None
        try:
            with translated_errors():
                query = text(f"SELECT pg_try_advisory_lock({self._key})")
                got = bool((await conn.execute(query)).scalar())
                await conn.commit()
        finally:
            if got:
                self._conn = conn
            else:
                # Refused: the connection holds nothing and goes back to the pool. No
                # answer: the session may hold the lock all the same, so it is closed.
                await _discard(conn, pooled=got is False)
        return bool(got)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A transaction on the lock's own connection: it commits only while the lock is
        held. Raises ``DatabaseUnavailable`` when the lock is not held; any failure drops
        the connection, and the lock with it (another process may then take it)."""
        conn = self._conn
        if conn is None:
            raise DatabaseUnavailable(f"advisory lock {self._key:#x} is not held here")
        try:
            with translated_errors():
                async with conn.begin():
                    yield conn
        except BaseException:
            self._conn = None
            await _discard(conn)
            raise

    async def release(self) -> None:
        """Let the lock go at once (a shutdown): the next process need not wait for this
        one's connection to end. Never raises: a failed unlock discards the connection,
        which releases the lock all the same."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        unlocked = False
        try:
            with translated_errors():
                await conn.execute(text(f"SELECT pg_advisory_unlock({self._key})"))
                await conn.commit()
            unlocked = True
        except XmrgateError as exc:
            log.warning("could not unlock %#x (its connection is closed): %s", self._key, exc)
        finally:
            await _discard(conn, pooled=unlocked)


async def _discard(conn: AsyncConnection, *, pooled: bool = False) -> None:
    """Close ``conn``: back to the pool when it holds no lock (``pooled``), else for good,
    since a session lock left on a pooled connection would outlive its holder. Never
    raises: a connection that cannot even be closed is gone already."""
    with contextlib.suppress(Exception):
        if not pooled:
            await conn.invalidate()
        await conn.close()
