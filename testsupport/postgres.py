"""Throwaway PostgreSQL databases, each created under a name prefix and dropped by name.

The defaults are the tests' (server from ``XMRGATE_TEST_PG``, prefix ``xmrgate_test_``);
the benchmarks pass their own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import asyncpg

T = TypeVar("T")

#: A superuser connection to the server that holds the throwaway databases.
TEST_ADMIN_URL = os.environ.get("XMRGATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
#: Every test database's name starts with this, and only such databases are dropped.
TEST_PREFIX = "xmrgate_test_"


async def _execute(admin_url: str, statement: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def create_pg_database(
    admin_url: str = TEST_ADMIN_URL,
    prefix: str = TEST_PREFIX,
    *,
    template: str | None = None,
    session: AdminSession | None = None,
    tablespace: str | None = None,
) -> str:
    """Create a fresh database named ``<prefix><random>``; return its URL.

    ``template``: the URL of a database (with no session open) to copy instead of the
    server's empty ``template1``. It is copied file by file (``FILE_COPY``, each file
    synced by this statement) rather than through the WAL (PostgreSQL 15's default): a
    WAL copy leaves its 300 files for the next checkpoint to sync, and a run's copies
    alive at once made every checkpoint (each DROP DATABASE waits for one) sync 15,000
    files, 15-20 s each.

    ``session``: an :class:`AdminSession` (on its server, ``admin_url`` then unused) to
    run the statement on, instead of a connection of its own. ``tablespace``: where the
    database's files go instead of the server's default (``testsupport/pg_tablespace.py``).
    """
    name = f"{prefix}{os.urandom(5).hex()}"
    copy = f' TEMPLATE "{template.rsplit("/", 1)[1]}" STRATEGY FILE_COPY' if template else ""
    place = f' TABLESPACE "{tablespace}"' if tablespace else ""
    statement = f'CREATE DATABASE "{name}"{copy}{place}'
    if session is None:
        asyncio.run(_execute(admin_url, statement))
    else:
        admin_url = session.admin_url
        session.execute(statement)
    return admin_url.rsplit("/", 1)[0] + f"/{name}"


def _drop_statement(url: str, prefix: str) -> str:
    name = url.rsplit("/", 1)[1]
    if not name.startswith(prefix):
        raise ValueError(f"refusing to drop {name!r}: not made with prefix {prefix!r}")
    return f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'


def drop_pg_database(url: str, admin_url: str = TEST_ADMIN_URL, prefix: str = TEST_PREFIX) -> None:
    """Drop a database made by :func:`create_pg_database` (closing its sessions).

    Refuses any database whose name does not start with ``prefix``.
    """
    asyncio.run(_execute(admin_url, _drop_statement(url, prefix)))


class AdminSession:
    """Statements on the server's admin database, over connections kept open from one
    call to the next: at most ``size``, made when first needed, closed by :meth:`close`.

    Each new connection costs the server a backend process (7-15 ms of CPU, most of it in
    the kernel), and the store tests made about 290 of them in a ``make unit`` run, one per
    CREATE or DROP DATABASE. A session belongs to one thread: every call runs on its own
    event loop (``asyncio.Runner``), one call at a time."""

    def __init__(
        self, admin_url: str = TEST_ADMIN_URL, *, size: int = 1, name: str = "xmrgate-tests"
    ) -> None:
        self.admin_url = admin_url
        #: Its connections' ``application_name`` (``pg_stat_activity`` shows it).
        self.name = name
        self._size = size
        self._runner = asyncio.Runner()
        self._pool: asyncpg.Pool | None = None

    def execute(self, *statements: str) -> None:
        """Run ``statements`` at once, each on a connection of its own (``size`` at a
        time); every one runs to its end, and the first failure is raised then."""
        self._runner.run(self._execute(statements))

    def call(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """``work(connection)`` on one of the session's connections; what it gives."""
        return self._runner.run(self._call(work))

    async def _ready(self) -> asyncpg.Pool:
        if self._pool is None:
            # min_size 0: connections are made as needed; no lifetime: kept until close.
            self._pool = await asyncpg.create_pool(
                self.admin_url,
                min_size=0,
                max_size=self._size,
                max_inactive_connection_lifetime=0,
                server_settings={"application_name": self.name},
            )
        return self._pool

    async def _call(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        async with (await self._ready()).acquire() as conn:
            return await work(conn)

    async def _execute(self, statements: tuple[str, ...]) -> None:
        pool = await self._ready()
        done = await asyncio.gather(
            *(pool.execute(statement) for statement in statements), return_exceptions=True
        )
        failures = [outcome for outcome in done if isinstance(outcome, BaseException)]
        if failures:
            raise failures[0]

    def close(self) -> None:
        """Close the connections and the event loop (from the session's thread)."""
        try:
            if self._pool is not None:
                self._runner.run(self._pool.close())
                self._pool = None
        finally:
            self._runner.close()


def drop_pg_databases(urls: list[str], session: AdminSession, prefix: str = TEST_PREFIX) -> None:
    """Drop several databases made by :func:`create_pg_database` at once, each on a
    connection of ``session`` (as :func:`drop_pg_database`, which refuses the same names).

    PostgreSQL 15 ends each DROP DATABASE with a checkpoint of the whole server (0.2-3 s
    when other databases are busy); drops that run together share one: 8 took 0.07 s at
    once against 1.4-3.5 s one after the other."""
    session.execute(*(_drop_statement(url, prefix) for url in urls))


@contextmanager
def fresh_pg_database(admin_url: str = TEST_ADMIN_URL, prefix: str = TEST_PREFIX) -> Iterator[str]:
    """A new database for the ``with`` block, dropped afterwards however the block ends."""
    url = create_pg_database(admin_url, prefix)
    try:
        yield url
    finally:
        drop_pg_database(url, admin_url, prefix)
