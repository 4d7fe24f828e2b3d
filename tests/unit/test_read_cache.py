"""The read cache of GET /receive (``core/read_cache.py``) with the in-memory store.

Answers come from memory only while the change feed listens, are forgotten on every
announced change and on a local delete, are not kept when a change was announced
while they were read, and unknown addresses are never cached.
"""

from __future__ import annotations

import asyncio

from tests.unit.fakes import FakePaymentStore
from xmrgate.core.read_cache import CachedPayments, StatusCache
from xmrgate.domain.records import PaymentStatus

ADDRESS = "8" + "A" * 94


class CountingStore(FakePaymentStore):
    """The fake store, counting ``status`` reads; ``during_read`` runs inside a read."""

    reads: int = 0
    during_read: object = None

    async def status(self, address: str) -> PaymentStatus | None:
        self.reads += 1
        if callable(self.during_read):
            self.during_read()
        return await super().status(address)


def _setup(*, enabled: bool = True) -> tuple[CachedPayments, CountingStore, StatusCache]:
    store = CountingStore()
    cache = StatusCache()
    cache.enable(enabled)
    cached = CachedPayments(store, cache)

    async def create() -> None:
        await cached.create(
            address=ADDRESS,
            subaddr_index=1,
            amount=5,
            description="",
            callback_url=None,
            return_url=None,
        )

    asyncio.run(create())
    return cached, store, cache


def _read(cached: CachedPayments, times: int = 1) -> PaymentStatus | None:
    async def go() -> PaymentStatus | None:
        found = None
        for _ in range(times):
            found = await cached.status(ADDRESS)
        return found

    return asyncio.run(go())


def test_second_read_comes_from_memory() -> None:
    cached, store, _cache = _setup()
    assert _read(cached, 3) is not None
    assert store.reads == 1


def test_disabled_cache_reads_the_store_every_time() -> None:
    """While the feed is not listening, nothing is cached."""
    cached, store, _cache = _setup(enabled=False)
    _read(cached, 3)
    assert store.reads == 3


def test_announced_change_is_read_again() -> None:
    cached, store, cache = _setup()
    _read(cached)
    store.transfers[ADDRESS] = ["a transfer"]
    cache.changed()
    found = _read(cached)
    assert store.reads == 2
    assert found is not None and found.transfers == ["a transfer"]


def test_change_during_a_read_is_not_kept() -> None:
    """A read that raced a write may hold the old state: it must not be cached."""
    cached, store, cache = _setup()
    store.during_read = cache.changed
    _read(cached)
    store.during_read = None
    _read(cached)
    assert store.reads == 2


def test_unknown_address_is_not_cached() -> None:
    cached, store, _cache = _setup()
    store.requests.clear()
    assert _read(cached, 2) is None
    assert store.reads == 2


def test_delete_forgets_at_once() -> None:
    cached, _store, _cache = _setup()
    _read(cached)

    async def delete() -> bool:
        return await cached.delete(ADDRESS)

    assert asyncio.run(delete())
    assert _read(cached) is None


def test_size_is_bounded() -> None:
    cache = StatusCache(max_entries=2)
    cache.enable(True)
    status = PaymentStatus(None, [], 1)  # type: ignore[arg-type]
    for address in ("a", "b", "c"):
        cache.put(address, status, cache.generation)
    assert [cache.get(a) is not None for a in ("a", "b", "c")] == [False, True, True]


def test_a_store_never_gets_another_stores_cached_answer() -> None:
    """Stores share one cache (addresses are unique across them): the checkout (every
    store) caches a default-store request; another store's repository must answer
    None for it, as its own SQL would, not the cached request."""
    everyone, _store, cache = _setup()
    assert _read(everyone) is not None  # cached now, as the checkout page would
    other = CachedPayments(CountingStore(), cache, store_id="shop-b")
    own = CachedPayments(CountingStore(), cache, store_id="default")
    assert asyncio.run(other.status(ADDRESS)) is None
    assert asyncio.run(own.status(ADDRESS)) is not None


def test_a_request_made_by_a_link_keeps_its_link_through_the_cache() -> None:
    """The wallet path (no pool) creates through the cache: the link must reach the store
    (PostgreSQL's repository is this cache; it once dropped the argument with a TypeError)."""
    cached, store, _cache = _setup()

    async def create() -> None:
        await cached.create(
            address="8" + "B" * 94,
            subaddr_index=7,
            amount=1,
            description="",
            callback_url=None,
            return_url=None,
            link_id="ln_0123456789abcdef",
        )

    asyncio.run(create())
    assert store.requests["8" + "B" * 94].link == "ln_0123456789abcdef"
