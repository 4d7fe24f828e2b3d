"""IdempotencyStore against real SQLite and PostgreSQL: claims, expiry and purge.

The store's clock is replaced by one the test moves forward, so expiry is exact: no
sleeping, and a slow machine cannot expire a key between two steps.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from xmrgate.adapters.store import idempotency
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.idempotency import IdempotencyStore

TTL = 60.0


class Clock:
    """A UTC clock that only moves when told."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The idempotency store's notion of "now", under the test's control."""
    fake = Clock()
    monkeypatch.setattr(idempotency, "utcnow", fake)
    return fake


def test_claim_complete_expire(on_database: Any, clock: Clock) -> None:
    """A key replays until it expires; then it can be claimed anew (deleting expired keys is
    the retention job's: tests/db/test_retention.py)."""

    async def scenario(db: Database) -> None:
        store = IdempotencyStore(db, ttl=TTL)
        assert await store.claim("receive", "k1", "h1") is None
        clock.advance(TTL - 1)
        running = await store.claim("receive", "k1", "h1")
        assert running is not None and running.state == "running"
        await store.complete("receive", "k1", 200, '{"ok": true}')
        done = await store.claim("receive", "k1", "h1")
        assert done is not None and done.status == 200 and done.body == '{"ok": true}'
        clock.advance(2)
        assert await store.claim("receive", "k1", "h2") is None  # expired: free again
        again = await store.claim("receive", "k1", "h2")
        assert again is not None and again.state == "running", "the new claim holds"

    on_database(scenario)


def test_release_frees_a_running_claim_only(on_database: Any, clock: Clock) -> None:
    """A released running claim can be claimed again at once; a completed one stays."""

    async def scenario(db: Database) -> None:
        store = IdempotencyStore(db, ttl=TTL)
        assert await store.claim("receive", "k1", "h1") is None
        await store.release("receive", "k1")
        assert await store.claim("receive", "k1", "h1") is None
        await store.complete("receive", "k1", 200, "{}")
        await store.release("receive", "k1")
        again = await store.claim("receive", "k1", "h1")
        assert again is not None and again.state == "done"

    on_database(scenario)


def test_a_lease_is_renewed_by_its_owner_and_taken_over_once_expired(
    on_database: Any, clock: Clock
) -> None:
    """One process at a time holds a running key: the owner while it renews, then the
    first process to take it over after the lease ran out (keeping its reference)."""

    async def scenario(db: Database) -> None:
        store = IdempotencyStore(db, ttl=TTL, lease=5)
        assert await store.claim("receive", "k", "h", owner="a", ref="ref-a") is None
        held = await store.claim("receive", "k", "h", owner="b", ref="ref-b")
        assert held is not None and held.owner == "a" and held.ref == "ref-a"
        assert held.lease_until is not None and held.lease_until > clock.now
        assert await store.take_over("receive", "k", "b") is None  # live lease
        clock.advance(4)
        assert await store.renew("receive", "k", "a")
        clock.advance(4)
        assert await store.take_over("receive", "k", "b") is None  # renewed: still live
        clock.advance(2)
        assert await store.take_over("receive", "k", "b") == "ref-a"
        assert not await store.renew("receive", "k", "a"), "a lost it"
        assert await store.take_over("receive", "k", "c") is None, "b holds it now"
        assert await store.renew("receive", "k", "b")
        await store.complete("receive", "k", 200, "{}")
        clock.advance(60)
        assert await store.take_over("receive", "k", "c") is None, "done: nothing to take"

    on_database(scenario)
