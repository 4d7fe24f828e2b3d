"""``GET /receive/:address`` from memory until the database says its answer changed.

The answer is a pure function of the stored state (the request, its transfers, the
synced height) and of the clock (expiry, computed per request from what is cached).
That state changes only when a write touches those tables: the sync tick, a deletion.
On PostgreSQL, triggers on those tables send a NOTIFY on every write, in whatever
process or host makes it (``adapters/store/change_feed.py``); each process listens and
forgets everything it cached. While the listener is not connected, the cache is off:
reads go to the database.

A read that raced a write cannot poison the cache: it is kept only if no change was
announced between the moment the read began and the moment it ended (``generation``).
"""

from __future__ import annotations

from datetime import datetime

from xmrgate.core.ports import PaymentRepository
from xmrgate.domain.fiat import Quote
from xmrgate.domain.greenfield.invoice_row import InvoiceRow
from xmrgate.domain.records import PaymentRequest, PaymentStatus

#: Requests kept at most (the oldest entry is dropped first).
MAX_ENTRIES = 20_000


class StatusCache:
    """Cached ``PaymentStatus`` by address, emptied on every announced change."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: dict[str, PaymentStatus] = {}
        self._max = max_entries
        #: Bumped by every announced change; a read keeps its result only if unchanged.
        self.generation = 0
        #: False until the change feed listens (and whenever it lost its connection).
        self.enabled = False
        self.hits = 0
        self.misses = 0

    def get(self, address: str) -> PaymentStatus | None:
        """The cached answer, if any (None also while disabled)."""
        if not self.enabled:
            return None
        found = self._entries.get(address)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, address: str, status: PaymentStatus, generation: int) -> None:
        """Keep ``status``, read since ``generation``, unless a change came meanwhile."""
        if not self.enabled or generation != self.generation:
            return
        if len(self._entries) >= self._max:
            del self._entries[next(iter(self._entries))]
        self._entries[address] = status

    def changed(self) -> None:
        """Something was written: forget everything."""
        self.generation += 1
        self._entries.clear()

    def enable(self, on: bool) -> None:
        """Start (the feed listens) or stop (it lost its connection) caching."""
        self.changed()
        self.enabled = on


class CachedPayments:
    """A ``PaymentRepository`` whose ``status`` is answered from a ``StatusCache``."""

    def __init__(
        self, store: PaymentRepository, cache: StatusCache, *, store_id: str | None = None
    ) -> None:
        self._store = store
        self._cache = cache
        # The cache is shared by every store (an address is unique across them); a
        # store's repository must not answer another store's cached request.
        self._store_id = store_id

    async def status(self, address: str) -> PaymentStatus | None:
        """From the cache, else from the store (kept when nothing changed meanwhile).

        Unknown addresses are not cached: a request created a moment later must be found.
        """
        found = self._cache.get(address)
        if found is not None:
            if self._store_id is not None and found.request.store_id != self._store_id:
                return None
            return found
        generation = self._cache.generation
        found = await self._store.status(address)
        if found is not None:
            self._cache.put(address, found, generation)
        return found

    async def delete(self, address: str) -> bool:
        """Delete, then forget at once in this process (others hear the NOTIFY)."""
        try:
            return await self._store.delete(address)
        finally:
            self._cache.changed()

    async def create(
        self,
        *,
        address: str,
        subaddr_index: int,
        amount: int,
        description: str,
        callback_url: str | None,
        return_url: str | None,
        expires_at: datetime | None = None,
        underpay_tolerance: int = 0,
        status: str = "waiting",
        price: Quote | None = None,
        link_id: str | None = None,
        greenfield: InvoiceRow | None = None,
        idempotency_ref: str | None = None,
    ) -> PaymentRequest:
        """Insert (new requests are never cached before they exist)."""
        return await self._store.create(
            address=address,
            subaddr_index=subaddr_index,
            amount=amount,
            description=description,
            callback_url=callback_url,
            return_url=return_url,
            expires_at=expires_at,
            underpay_tolerance=underpay_tolerance,
            status=status,
            price=price,
            link_id=link_id,
            greenfield=greenfield,
            idempotency_ref=idempotency_ref,
        )

    async def highest_subaddr_index(self) -> int:
        """The highest subaddress index any request uses."""
        return await self._store.highest_subaddr_index()

    async def get(self, address: str) -> PaymentRequest | None:
        """One request by address (not cached: rarely read)."""
        return await self._store.get(address)

    async def by_idempotency_ref(self, ref: str) -> PaymentRequest | None:
        """The request made under a claim's reference (not cached: a dead claim's only)."""
        return await self._store.by_idempotency_ref(ref)
