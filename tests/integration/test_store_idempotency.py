"""IdempotencyStore against real SQLite and PostgreSQL: claims, expiry and purge."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.gateway import create_pg_database, drop_pg_database
from xmrgate.config import postgres_async_url
from xmrgate.store.db import Database
from xmrgate.store.idempotency import IdempotencyStore

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated database of each backend."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'idem.sqlite3'}"
        return
    url = create_pg_database()
    try:
        yield postgres_async_url(url)
    finally:
        drop_pg_database(url)


def test_claim_complete_expire_purge(database_url: str) -> None:
    """A key replays until it expires; then it can be claimed anew and purge removes it."""

    async def scenario() -> None:
        db = Database(database_url)
        await db.migrate()
        try:
            store = IdempotencyStore(db, ttl=0.5)
            assert await store.claim("receive", "k1", "h1") is None
            running = await store.claim("receive", "k1", "h1")
            assert running is not None and running.state == "running"
            await store.complete("receive", "k1", 200, '{"ok": true}')
            done = await store.claim("receive", "k1", "h1")
            assert done is not None and done.status == 200 and done.body == '{"ok": true}'
            await asyncio.sleep(0.7)
            assert await store.claim("receive", "k1", "h2") is None  # expired: free again
            assert await store.claim("transfer", "k2", "h") is None
            await asyncio.sleep(0.7)
            assert await store.purge_expired() == 2
            assert await store.purge_expired() == 0
        finally:
            await db.dispose()

    asyncio.run(scenario())
