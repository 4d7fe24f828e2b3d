"""The database handle: engine, migrations, write transactions, health probe.

Both backends run the same SQL. SQLite allows one writer at a time, so write
transactions in this process queue on an asyncio lock instead of failing with
"database is locked"; PostgreSQL needs no such lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, event, text
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from xmrgate.errors import DatabaseUnavailable, InvalidInput

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Arbitrary but fixed keys of PostgreSQL advisory locks.
MIGRATION_LOCK_KEY = 0x786D7267_0001
SYNC_LOCK_KEY = 0x786D7267_0002


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; every datetime we store is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class Database:
    """An async engine plus the knowledge of which backend it talks to."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
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
            try:
                if single_statement:
                    async with self.engine.connect() as conn:
                        await conn.execution_options(isolation_level="AUTOCOMMIT")
                        yield conn
                    return
                async with self.engine.begin() as conn:
                    yield conn
            except DataError as exc:
                # The value cannot be stored (e.g. NUL in PostgreSQL text): the
                # client's input, not an outage.
                raise InvalidInput("a value in the request cannot be stored") from exc
            except (OperationalError, DBAPIError, OSError) as exc:
                if isinstance(exc, IntegrityError):
                    raise
                raise DatabaseUnavailable("database unavailable") from exc

    @contextlib.asynccontextmanager
    async def read(self, *, autocommit: bool = False) -> AsyncIterator[AsyncConnection]:
        """A read-only connection (its implicit transaction is rolled back at the end).

        ``autocommit``: no transaction at all, for single-statement reads where the
        BEGIN/ROLLBACK round trips would cost more than the query.
        """
        try:
            async with self.engine.connect() as conn:
                if autocommit:
                    await conn.execution_options(isolation_level="AUTOCOMMIT")
                yield conn
        except DataError as exc:
            raise InvalidInput("a value in the request cannot be looked up") from exc
        except (OperationalError, DBAPIError, OSError) as exc:
            raise DatabaseUnavailable("database unavailable") from exc

    async def ping(self) -> bool:
        """True when the database answers a trivial query."""
        try:
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            return True
        except Exception:  # any failure means "down" to the health check
            log.debug("database ping failed", exc_info=True)
            return False

    async def migrate(self) -> None:
        """Bring the schema to the newest revision; safe to run from several processes."""
        async with self.engine.begin() as conn:
            if not self.is_sqlite:
                await conn.execute(text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"))
            await conn.run_sync(_upgrade_to_head)

    @contextlib.asynccontextmanager
    async def sync_leadership(self) -> AsyncIterator[bool]:
        """Yield True when this process may run the sync tick now.

        PostgreSQL: a session advisory lock held for the tick, so of several gateway
        processes sharing a database only one ticks at a time. SQLite: one process
        owns the file, so always True.
        """
        if self.is_sqlite:
            yield True
            return
        async with self.engine.connect() as conn:
            got = bool(
                (await conn.execute(text(f"SELECT pg_try_advisory_lock({SYNC_LOCK_KEY})"))).scalar()
            )
            await conn.commit()
            try:
                yield got
            finally:
                if got:
                    await conn.execute(text(f"SELECT pg_advisory_unlock({SYNC_LOCK_KEY})"))
                    await conn.commit()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets the API read while the sync tick writes; foreign keys make
    # DELETE /receive cascade to transfers and events.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _upgrade_to_head(connection: Connection) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")
