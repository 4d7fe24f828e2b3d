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

from testsupport.migrated import MigratedTemplates
from testsupport.postgres import TEST_ADMIN_URL, create_pg_database
from xmrgate.adapters.store.db import Database
from xmrgate.config import postgres_async_url

Scenario = Callable[[Database], Awaitable[Any]]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """The backend of the test's database: each test runs on both."""
    param: str = request.param
    return param


def _fresh_database(
    path: Path, backend: str, templates: MigratedTemplates, *, migrated: bool
) -> Iterator[str]:
    """The SQLAlchemy URL of a new database at ``path`` (SQLite) or on the test server:
    empty, or (``migrated``) a copy of that backend's migrated template. A PostgreSQL one
    is dropped in the background with the others (``testsupport/migrated.py``): a drop
    waited for here took 0.2-3 s (the server's checkpoint), 19 s on a busy server."""
    if backend == "sqlite":
        if migrated:
            yield templates.sqlite_copy(path)
        else:
            yield f"sqlite+aiosqlite:///{path}"
        return
    try:
        url = templates.postgresql_copy() if migrated else create_pg_database()
    except (OSError, asyncpg.PostgresError) as exc:
        pytest.fail(f"PostgreSQL at {TEST_ADMIN_URL} is unreachable: {exc!r}")
    try:
        yield postgres_async_url(url)
    finally:
        templates.drop_postgresql(url)


@pytest.fixture
def database_url(
    backend: str, tmp_path: Path, migrated_templates: MigratedTemplates
) -> Iterator[str]:
    """The SQLAlchemy URL of an empty database: a new SQLite file or PostgreSQL database
    (for the tests of the migrations themselves)."""
    yield from _fresh_database(
        tmp_path / "store.sqlite3", backend, migrated_templates, migrated=False
    )


@pytest.fixture
def migrated_database_url(
    backend: str, tmp_path: Path, migrated_templates: MigratedTemplates
) -> Iterator[str]:
    """The SQLAlchemy URL of a new database holding exactly what ``Database.migrate()``
    leaves in an empty one: a copy of this process's migrated template of the backend."""
    yield from _fresh_database(
        tmp_path / "store.sqlite3", backend, migrated_templates, migrated=True
    )


@pytest.fixture
def on_database(migrated_database_url: str) -> Callable[..., Any]:
    """``on_database(scenario, **options)``: run ``scenario(db)`` on a migrated database.

    ``db`` is ``Database(url, **options)`` on a fresh copy of the migrated template
    (``migrated_database_url``); ``migrate()`` runs on it first, as at every start of the
    product (there is nothing left to do), and ``db`` is disposed of afterwards; the
    scenario's result is returned.
    """

    def run(scenario: Scenario, **options: Any) -> Any:
        async def main() -> Any:
            db = Database(migrated_database_url, **options)
            try:
                await db.migrate()
                return await scenario(db)
            finally:
                await db.dispose()

        return asyncio.run(main())

    return run
