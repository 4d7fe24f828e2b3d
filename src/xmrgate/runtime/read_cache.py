"""Wiring of the read cache: on PostgreSQL, ``GET /receive`` is answered from memory.

``core/read_cache.py`` holds the cache, ``adapters/store/change_feed.py`` empties it on
every write the database announces. SQLite has no NOTIFY (and one process): no cache.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from xmrgate.adapters.store.change_feed import ChangeFeed
from xmrgate.config import Settings
from xmrgate.core.ports import PaymentRepository
from xmrgate.core.read_cache import CachedPayments, StatusCache


@dataclass
class ReadCache:
    """The payment repository the use cases get, and the feed that keeps it true."""

    repository: PaymentRepository
    cache: StatusCache | None = None
    feed: ChangeFeed | None = None

    @classmethod
    def build(cls, settings: Settings, store: PaymentRepository) -> ReadCache:
        """Cached on PostgreSQL, the store itself on SQLite."""
        if not settings.postgresql:
            return cls(store)
        cache = StatusCache()
        return cls(CachedPayments(store, cache), cache, ChangeFeed(settings.postgresql, cache))

    def for_store(self, store: PaymentRepository, store_id: str | None) -> PaymentRepository:
        """``store`` (one store's, or every store's when None) behind the shared cache."""
        if self.cache is None:
            return store
        return CachedPayments(store, self.cache, store_id=store_id)

    def forget(self) -> None:
        """Forget every cached answer now (this process wrote; the NOTIFY comes later)."""
        if self.cache is not None:
            self.cache.changed()

    async def run(self, stop: asyncio.Event) -> None:
        """Listen for changes until ``stop`` (returns at once without a feed)."""
        if self.feed is not None:
            await self.feed.run(stop)
