"""The database handle: engine, migrations, write transactions, health probe.

Both backends run the same SQL. SQLite allows one writer at a time, so write
transactions in this process queue on an asyncio lock instead of failing with
"database is locked"; PostgreSQL needs no such lock.

This is where SQLAlchemy and driver errors become ours (``_translated``):
every way into the database (``write``, ``read``, ``migrate``, ``sync_leadership``)
runs through it, so the query modules never see a SQLAlchemy exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, event, text
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from xmrgate.adapters.store.schema_revision import at_newest
from xmrgate.domain.errors import (
    AlreadyExists,
    DatabaseFault,
    DatabaseUnavailable,
    InvalidInput,
    MissingReference,
    XmrgateError,
)

log = logging.getLogger(__name__)

# Arbitrary but fixed keys of PostgreSQL advisory locks.
MIGRATION_LOCK_KEY = 0x786D7267_0001
SYNC_LOCK_KEY = 0x786D7267_0002
# The exchange rates' leader; sync keys all end in 0002, so none is this.
RATES_LOCK_KEY = 0x786D7267_0003

# How each backend names what went wrong: PostgreSQL SQLSTATEs, SQLite error names.
_PG_UNIQUE, _PG_FOREIGN_KEY = "23505", "23503"
_PG_DATA_EXCEPTION = "22"  # the class: a value the column cannot hold (NUL, too long)
_SQLITE_UNIQUE = ("SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE")
_SQLITE_FOREIGN_KEY = "SQLITE_CONSTRAINT_FOREIGNKEY"


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; every datetime we store is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _broken_constraint(exc: IntegrityError) -> XmrgateError:
    """Our error for a write that broke a constraint, by the kind of constraint."""
    cause = exc.orig
    sqlstate = getattr(cause, "sqlstate", None)  # asyncpg
    name = getattr(cause, "sqlite_errorname", None)  # sqlite3
    if sqlstate == _PG_UNIQUE or name in _SQLITE_UNIQUE:
        return AlreadyExists("a row with the same key is already stored")
    if sqlstate == _PG_FOREIGN_KEY or name == _SQLITE_FOREIGN_KEY:
        return MissingReference("the row this refers to does not exist (any more)")
    # NOT NULL or CHECK: our code wrote a row the schema forbids.
    log.error("the database refused a row", exc_info=exc)
    return DatabaseFault("the database refused a row")


def _ours(exc: SQLAlchemyError | OSError, *, writing: bool) -> XmrgateError:
    """The xmrgate error that says in our words what ``exc`` means."""
    if isinstance(exc, PoolTimeout):
        # Every pooled connection is busy (not a DBAPIError): an overload, not a bug.
        return DatabaseUnavailable("database busy: no connection became free in time")
    if isinstance(exc, IntegrityError):
        return _broken_constraint(exc)
    if isinstance(exc, DataError) or (
        isinstance(exc, DBAPIError)
        and str(getattr(exc.orig, "sqlstate", "")).startswith(_PG_DATA_EXCEPTION)
    ):
        # The value cannot be stored (e.g. NUL in PostgreSQL text, which asyncpg
        # reports as a plain DBAPIError): the client's input, not an outage.
        verb = "store" if writing else "look up"
        return InvalidInput(f"the database cannot {verb} a value given (e.g. text with a NUL)")
    if isinstance(exc, (DBAPIError, OSError)):
        # Refused or broken connections, server errors, timeouts of the driver.
        return DatabaseUnavailable("database unavailable")
    # Not from the database at all (a misused API, an unexpected result shape).
    log.error("database access failed", exc_info=exc)
    return DatabaseFault("database access failed")


@contextlib.contextmanager
def _translated(*, writing: bool = True) -> Iterator[None]:
    """Raise SQLAlchemy and driver errors of the block as ours, chained to the cause.

    ``OSError`` counts too: asyncpg raises it unwrapped when it cannot connect.
    """
    try:
        yield
    except (SQLAlchemyError, OSError) as exc:
        raise _ours(exc, writing=writing) from exc


def translated_errors() -> contextlib.AbstractContextManager[None]:
    """``_translated`` for a module of this package that holds a connection of its own
    (``held_lock.py``): SQLAlchemy and driver errors of the block become ours."""
    return _translated(writing=True)


class Database:
    """An async engine plus the knowledge of which backend it talks to.

    ``pool_size``, ``max_overflow``, ``pool_timeout``: the connection pool (PostgreSQL
    defaults to 20 + 20 connections and 5 s; SQLite files to SQLAlchemy's defaults).
    """

    def __init__(
        self,
        url: str,
        *,
        echo: bool = False,
        pool_size: int | None = None,
        max_overflow: int | None = None,
        pool_timeout: float | None = None,
    ) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any] = {"echo": echo}
        if self.is_sqlite:
            path = url.split("///", 1)[1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": 30}
        else:
            kwargs.update(
                # Enough for a busy read path: overflow connections are closed on
                # return, and opening PostgreSQL sessions is costly.
                pool_size=20,
                max_overflow=20,
                pool_timeout=5,
                # Fail fast when PostgreSQL is down instead of hanging a request.
                connect_args={"timeout": 5, "command_timeout": 30},
            )
        pool = {"pool_size": pool_size, "max_overflow": max_overflow, "pool_timeout": pool_timeout}
        kwargs.update({key: value for key, value in pool.items() if value is not None})
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self._write_lock = asyncio.Lock() if self.is_sqlite else None

    async def dispose(self) -> None:
        """Close every pooled connection."""
        await self.engine.dispose()

    @contextlib.asynccontextmanager
    async def write(self, *, single_statement: bool = False) -> AsyncIterator[AsyncConnection]:
        """A write transaction: committed on success, rolled back on any exception.

        ``single_statement``: the caller runs exactly one statement, which is atomic on
        its own; autocommit saves the BEGIN/COMMIT round trips on a hot path.
        """
        lock = self._write_lock or contextlib.nullcontext()
        async with lock:
            with _translated(writing=True):
                if single_statement:
                    async with self.engine.connect() as conn:
                        await conn.execution_options(isolation_level="AUTOCOMMIT")
                        yield conn
                    return
                async with self.engine.begin() as conn:
                    yield conn

    @contextlib.asynccontextmanager
    async def read(self, *, autocommit: bool = False) -> AsyncIterator[AsyncConnection]:
        """A read-only connection (its implicit transaction is rolled back at the end).

        ``autocommit``: no transaction at all, for single-statement reads where the
        BEGIN/ROLLBACK round trips would cost more than the query.
        """
        with _translated(writing=False):
            async with self.engine.connect() as conn:
                if autocommit:
                    await conn.execution_options(isolation_level="AUTOCOMMIT")
                yield conn

    async def ping(self) -> bool:
        """True when the database answers a trivial query."""
        try:
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            return True
        except Exception:  # any failure means "down" to the health check
            log.debug("database ping failed", exc_info=True)
            return False

    async def schema_current(self) -> bool:
        """True when the schema is at the newest revision (read without Alembic)."""
        with _translated(writing=False):
            async with self.engine.connect() as conn:
                return await conn.run_sync(at_newest)

    async def migrate(self) -> None:
        """Bring the schema to the newest revision; safe to run from several processes.

        Alembic is imported only when there is something to do (schema_upgrade.py).
        """
        if await self.schema_current():
            return
        from xmrgate.adapters.store.schema_upgrade import upgrade_to_head

        with _translated():
            if self.is_sqlite:
                await self._migrate_sqlite(upgrade_to_head)
                return
            async with self.engine.begin() as conn:
                await conn.execute(text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"))
                await conn.run_sync(upgrade_to_head)

    async def _migrate_sqlite(self, upgrade: Callable[[Connection], None]) -> None:
        """SQLite's documented way to alter tables (https://sqlite.org/lang_altertable.html).

        A revision that rebuilds a table (copy, drop, rename) needs foreign keys off:
        with them on, DROP TABLE deletes the rows first and that cascades to the
        children (``events`` -> ``callback_tries``). The pragma is ignored inside a
        transaction, so it is turned off before one BEGIN IMMEDIATE (which also takes
        the file's write lock and makes the DDL part of the transaction). A reference
        the revisions left dangling (``PRAGMA foreign_key_check``) rolls it all back,
        and the connection goes back to the pool with foreign keys on (or is
        discarded). Nothing of this when the schema is current (checked again under
        the write lock: another process may have migrated since ``migrate`` looked).
        """
        async with self.engine.connect() as conn:
            if await conn.run_sync(at_newest):
                return
            await conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            try:
                await conn.exec_driver_sql("BEGIN IMMEDIATE")
                try:
                    before = await conn.run_sync(_broken_references)
                    await conn.run_sync(upgrade)
                    broken = await conn.run_sync(_broken_references) - before
                    if broken:
                        log.error("the migration broke foreign keys: %s", sorted(broken))
                        raise DatabaseFault("the migration broke foreign keys; rolled back")
                except BaseException:
                    await conn.rollback()
                    raise
                await conn.commit()
            finally:
                await _foreign_keys_on(conn)

    @contextlib.asynccontextmanager
    async def sync_leadership(self, wallet: int = 1) -> AsyncIterator[bool]:
        """Yield True when this process may run the sync tick of ``wallet`` now (1: the
        main wallet; a store's own wallet: its ``wallet_no``; one lock each).

        PostgreSQL: a session advisory lock held for the tick, so of several gateway
        processes sharing a database only one ticks at a time. SQLite: one process
        owns the file, so always True.
        """
        if self.is_sqlite:
            yield True
            return
        # Only the lock's own statements are translated, not the caller's block.
        with _translated():
            conn = await self.engine.connect()
        try:
            with _translated():
                key = SYNC_LOCK_KEY + (wallet - 1) * 0x1_0000_0000
                query = text(f"SELECT pg_try_advisory_lock({key})")
                got = bool((await conn.execute(query)).scalar())
                await conn.commit()
            try:
                yield got
            finally:
                if got:
                    with _translated():
                        await conn.execute(text(f"SELECT pg_advisory_unlock({key})"))
                        await conn.commit()
        finally:
            with _translated():
                await conn.close()


async def migrate_database(url: str) -> None:
    """Bring the schema at ``url`` to the newest revision with a Database of its own."""
    db = Database(url)
    try:
        await db.migrate()
    finally:
        await db.dispose()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets the API read while the sync tick writes; foreign keys make
    # DELETE /receive cascade to transfers and events.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _broken_references(connection: Connection) -> set[tuple[Any, ...]]:
    """SQLite: the rows whose foreign key points nowhere (table, rowid, parent, key)."""
    return {tuple(row) for row in connection.exec_driver_sql("PRAGMA foreign_key_check")}


async def _foreign_keys_on(conn: AsyncConnection) -> None:
    """Turn SQLite's foreign keys back on, outside any transaction; verify it.

    A connection where that did not work is discarded rather than pooled.
    """
    try:
        await conn.rollback()  # a failed COMMIT may leave the transaction open
        await conn.exec_driver_sql("PRAGMA foreign_keys=ON")
        enabled = (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar()
        await conn.rollback()
    except BaseException:
        await conn.invalidate()
        raise
    if enabled != 1:
        await conn.invalidate()
        raise DatabaseFault("could not turn SQLite's foreign keys back on")
