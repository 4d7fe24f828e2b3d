"""The read cache's change feed on PostgreSQL: every write that changes a
``GET /receive`` answer, made on any connection, empties the cache; creating a
request does not; a lost LISTEN connection switches the cache off until it is back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import asyncpg
import pytest

from testsupport.migrated import MigratedTemplates
from xmrgate.adapters.store import change_feed
from xmrgate.adapters.store.change_feed import ChangeFeed
from xmrgate.core.read_cache import StatusCache

INSERT_REQUEST = (
    "INSERT INTO payment_requests (address, subaddr_index, amount, description, "
    "created_at, created_height) VALUES ($1, $2, 1, '', now(), 1) RETURNING id"
)
INSERT_TRANSFER = (
    "INSERT INTO transfers (tx_hash, subaddr_index, request_id, amount, fee, height, "
    "timestamp, unlock_time, double_spend_seen, state, updated_at) "
    "VALUES ('aa', 1, $1, 1, 0, 5, 0, 0, false, 'locked', now())"
)


@pytest.fixture
def pg_url(migrated_templates: MigratedTemplates) -> Iterator[str]:
    """A fresh PostgreSQL database migrated by the product (libpq URL): a copy of the
    migrated template (``testsupport/migrated.py``)."""
    url = migrated_templates.postgresql_copy()
    try:
        yield url
    finally:
        migrated_templates.drop_postgresql(url)


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


Scenario = Callable[[StatusCache, asyncpg.Connection], Awaitable[Any]]


class RecordingFeed(ChangeFeed):
    """The change feed, noting the payload of each notification it takes, in order."""

    def __init__(self, url: str, cache: StatusCache, payloads: list[str]) -> None:
        super().__init__(url, cache)
        self._payloads = payloads

    def _changed(self, *args: Any) -> None:
        self._payloads.append(args[-1])  # asyncpg: (connection, pid, channel, payload)
        super()._changed(*args)


def _with_feed(
    url: str,
    scenario: Scenario,
    feed: Callable[[str, StatusCache], ChangeFeed] = ChangeFeed,
) -> Any:
    async def main() -> Any:
        cache = StatusCache()
        stop = asyncio.Event()
        listening = asyncio.create_task(feed(url, cache).run(stop))
        writer = await asyncpg.connect(url)
        try:
            assert await _until(lambda: cache.enabled), "the feed never started listening"
            return await scenario(cache, writer)
        finally:
            await writer.close()
            stop.set()
            await asyncio.wait_for(listening, 5)

    return asyncio.run(main())


async def _announced(cache: StatusCache, write: Awaitable[Any]) -> bool:
    before = cache.generation
    await write
    return await _until(lambda: cache.generation != before, timeout=2.0)


def test_writes_that_change_answers_are_announced(pg_url: str) -> None:
    async def scenario(cache: StatusCache, db: asyncpg.Connection) -> dict[str, bool]:
        request_id = await db.fetchval(INSERT_REQUEST, "8addr1", 1)
        return {
            "transfer inserted": await _announced(cache, db.execute(INSERT_TRANSFER, request_id)),
            "transfer updated": await _announced(
                cache, db.execute("UPDATE transfers SET state = 'unlocked'")
            ),
            "height moved": await _announced(
                cache,
                db.execute(
                    "INSERT INTO sync_state (id, wallet_height, updated_at) VALUES (1, 9, now())"
                ),
            ),
            "request updated": await _announced(
                cache, db.execute("UPDATE payment_requests SET status = 'expired'")
            ),
            "request deleted": await _announced(
                cache, db.execute("DELETE FROM payment_requests WHERE id = $1", request_id)
            ),
        }

    assert _with_feed(pg_url, scenario) == dict.fromkeys(
        [
            "transfer inserted",
            "transfer updated",
            "height moved",
            "request updated",
            "request deleted",
        ],
        True,
    )


def test_creating_a_request_keeps_the_cache(pg_url: str) -> None:
    """Unknown addresses are never cached, so a new request needs no announcement.

    A notification of the test's own follows the insert: PostgreSQL delivers them in the
    order their transactions committed, so once the feed took that one, an announcement
    of the insert would have come before it (no wait of 2 s for one that never comes)."""
    payloads: list[str] = []

    async def scenario(cache: StatusCache, db: asyncpg.Connection) -> list[str]:
        before = cache.generation
        await db.fetchval(INSERT_REQUEST, "8addr2", 2)
        await db.execute("SELECT pg_notify('xmrgate_reads_changed', 'after the insert')")
        assert await _until(lambda: bool(payloads)), "the feed took no notification"
        assert cache.generation == before + len(payloads)  # each one empties the cache
        return payloads

    def feed(url: str, cache: StatusCache) -> ChangeFeed:
        return RecordingFeed(url, cache, payloads)

    assert _with_feed(pg_url, scenario, feed) == ["after the insert"]


def test_lost_connection_switches_the_cache_off_until_back(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The feed pauses this long before it connects again: 1 s in the product, all of it
    # waited here; what is tested is that the cache is off meanwhile and on once back.
    monkeypatch.setattr(change_feed, "RECONNECT_AFTER", 0.1)

    async def scenario(cache: StatusCache, db: asyncpg.Connection) -> tuple[bool, bool]:
        await db.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        went_off = await _until(lambda: not cache.enabled, timeout=2.0)
        came_back = await _until(lambda: cache.enabled, timeout=5.0)
        return went_off, came_back

    assert _with_feed(pg_url, scenario) == (True, True)
