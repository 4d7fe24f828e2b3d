"""Fixtures of the store tests: a fresh database of each backend, and a way to use it.

PostgreSQL is the real server of ``XMRGATE_TEST_PG`` (default: local, user postgres);
when it cannot be reached the tests fail rather than skip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from testsupport.postgres import TEST_ADMIN_URL, create_pg_database, drop_pg_database
from xmrgate.adapters.store.db import Database
from xmrgate.config import postgres_async_url

Scenario = Callable[[Database], Awaitable[Any]]


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The SQLAlchemy URL of an empty database: a new SQLite file or PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'store.sqlite3'}"
        return
    try:
        url = create_pg_database()
    except (OSError, asyncpg.PostgresError) as exc:
        pytest.fail(f"PostgreSQL at {TEST_ADMIN_URL} is unreachable: {exc!r}")
    try:
        yield postgres_async_url(url)
    finally:
        drop_pg_database(url)


@pytest.fixture
def on_database(database_url: str) -> Callable[..., Any]:
    """``on_database(scenario, **options)``: run ``scenario(db)`` on the migrated database.

    ``db`` is ``Database(database_url, **options)``, migrated the way the product does
    it and disposed of afterwards; the scenario's result is returned.
    """

    def run(scenario: Scenario, **options: Any) -> Any:
        async def main() -> Any:
            db = Database(database_url, **options)
            try:
                await db.migrate()
                return await scenario(db)
            finally:
                await db.dispose()

        return asyncio.run(main())

    return run
