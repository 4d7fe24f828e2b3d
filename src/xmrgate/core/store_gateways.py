"""The Gateway of every store, built by one factory, the default store's included.

Each store (``domain/stores.py``) gets a Gateway built once, when its row is first read,
on its own account of the main wallet (or its own wallet) and on repositories bound to
it (``runtime/store_units.py`` builds them). The default store's row always exists
(migration 0008), so its Gateway is built at once, before the first read: the web
layer needs it before the database is even migrated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from xmrgate.core.gateway import Gateway
from xmrgate.core.store_directory import StoreDirectory
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.errors import Conflict, NotFound, XmrgateError
from xmrgate.domain.stores import DEFAULT_STORE, DEFAULT_STORE_NAME, Store

log = logging.getLogger(__name__)

# How often the tables are read again for changes made by other processes.
RELOAD_EVERY = 5.0

# The default store as migration 0008 makes it: account 0 of the main wallet. Its
# editable fields (secret, defaults) are read from ``StoreDirectory`` when used.
DEFAULT_STORE_ROW = Store(id=DEFAULT_STORE, name=DEFAULT_STORE_NAME, account_index=0)


class StoreGateways:
    """The stores of this gateway, each with its Gateway; reloaded from the database."""

    def __init__(
        self,
        directory: StoreDirectory,
        build: Callable[[Store], Gateway],
        *,
        account_address: Callable[[int], Awaitable[str]] | None = None,
    ) -> None:
        """``build`` makes a store's Gateway; ``account_address`` asks the wallet for an
        account's base address (None: never asked)."""
        self.directory = directory
        self._build = build
        self._account_address = account_address
        self.default = build(DEFAULT_STORE_ROW)
        self._gateways: dict[str, Gateway] = {DEFAULT_STORE: self.default}

    @property
    def operator_keys(self) -> list[ApiKey]:
        """The configured keys (``--api-key``): empty on an open (loopback) gateway."""
        return self.directory.operator_keys

    def keys(self) -> list[ApiKey]:
        """Every key that may call the API: the configured ones and the stores' live ones."""
        return self.directory.keys()

    def address_of(self, store_id: str) -> str | None:
        """The base address of the store's account, once known (None until then)."""
        return self.directory.address_of(store_id)

    def store(self, store_id: str) -> Store | None:
        """The store row as last read."""
        return self.directory.store(store_id)

    async def load(self) -> None:
        """Read the stores and their keys; build the Gateway of each new store."""
        for store in await self.directory.load():
            if store.id not in self._gateways:
                self._gateways[store.id] = self._build(store)

    async def changed(self) -> None:
        """A change was made through this process: read it at once (and the new
        store's address: the wallet has just answered for it)."""
        await self.load()
        await self._learn_addresses()

    async def _learn_addresses(self) -> None:
        if self._account_address is not None:
            await self.directory.learn_addresses(self._account_address)

    def built(self) -> list[Gateway]:
        """Every store's Gateway built so far (the default store's first)."""
        return list(self._gateways.values())

    def gateway(self, store_id: str, *, writes: bool) -> Gateway:
        """The Gateway of ``store_id``; NotFound for an unknown store, Conflict for a write
        to a disabled one (its history stays readable)."""
        gateway = self._gateways.get(store_id)
        store = self.directory.store(store_id)
        if gateway is None or (store is None and store_id != DEFAULT_STORE):
            raise NotFound(f"no store '{store_id}'")
        if writes and store is not None and not store.enabled:
            raise Conflict(f"store '{store_id}' is disabled")
        return gateway

    async def run(self, stop: asyncio.Event, every: float = RELOAD_EVERY) -> None:
        """Read the tables again every ``every`` seconds until ``stop``."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=every)
            if stop.is_set():
                return
            try:
                await self.load()
            except XmrgateError as exc:
                log.warning("stores: reading the stores failed: %s", exc.message)
            await self._learn_addresses()
