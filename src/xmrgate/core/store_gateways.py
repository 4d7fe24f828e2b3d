"""The Gateway of every store, and the keys and callback secrets that go with them.

Each store (``domain/stores.py``) gets a Gateway built once on its own account of the
main wallet and on repositories bound to it (``runtime/container.py`` builds them).
This registry reads the ``stores`` and ``store_keys`` tables at start, after each change
made through this process, and every few seconds (a change made by another process or
host sharing the database), and answers the web layer: which Gateway a caller acts on,
which keys exist, and each store's callback secret.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from xmrgate.core.gateway import Gateway
from xmrgate.core.payment_requests import StoreDefaults
from xmrgate.core.stores import StoreRepository
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.errors import Conflict, NotFound, XmrgateError
from xmrgate.domain.stores import DEFAULT_STORE, Store, key_label

log = logging.getLogger(__name__)

# How often the tables are read again for changes made by other processes.
RELOAD_EVERY = 5.0


class StoreGateways:
    """The stores of this gateway, each with its Gateway; reloaded from the database."""

    def __init__(
        self,
        repo: StoreRepository,
        default: Gateway,
        build: Callable[[Store], Gateway],
        *,
        operator_keys: list[ApiKey],
        default_secret: bytes | None,
        account_address: Callable[[int], Awaitable[str]] | None = None,
    ) -> None:
        # The base address of each store's account (``X-MoneroPay-Address`` to its keys),
        # asked in the background: a wallet that is down must not hold up a reload.
        self._account_address = account_address
        self._addresses: dict[str, str] = {}
        self._repo = repo
        self._build = build
        self.default = default
        self._operator_keys = list(operator_keys)
        self._default_secret = default_secret
        self._gateways: dict[str, Gateway] = {DEFAULT_STORE: default}
        self._stores: dict[str, Store] = {}
        self._keys: list[ApiKey] = list(operator_keys)

    @property
    def operator_keys(self) -> list[ApiKey]:
        """The configured keys (``--api-key``): empty on an open (loopback) gateway."""
        return self._operator_keys

    def keys(self) -> list[ApiKey]:
        """Every key that may call the API: the configured ones and the stores' live ones."""
        return self._keys

    async def load(self) -> None:
        """Read the stores and their keys; build the Gateway of each new store."""
        stores = {s.id: s for s in await self._repo.all()}
        live = await self._repo.active_keys()
        for store in stores.values():
            if store.id not in self._gateways:
                self._gateways[store.id] = self._build(store)
        self._stores = stores
        self._keys = self._operator_keys + [
            ApiKey(digest=k.digest, label=key_label(k.id), scopes=k.scopes, store=k.store_id)
            for k in live
            if k.store_id in stores and stores[k.store_id].enabled
        ]

    async def changed(self) -> None:
        """A change was made through this process: read it at once (and the new
        store's address: the wallet has just answered for it)."""
        await self.load()
        await self.learn_addresses()

    def address_of(self, store_id: str) -> str | None:
        """The base address of the store's account, once known (None until then)."""
        return self._addresses.get(store_id)

    async def learn_addresses(self) -> None:
        """Ask the wallet for the base address of each store's account not known yet."""
        if self._account_address is None:
            return
        for store in list(self._stores.values()):
            if store.id in self._addresses or store.id == DEFAULT_STORE:
                continue
            try:
                self._addresses[store.id] = await self._account_address(store.account_index)
            except XmrgateError as exc:
                log.debug("stores: the address of %s is not known yet: %s", store.id, exc)
                return

    def store(self, store_id: str) -> Store | None:
        """The store row as last read."""
        return self._stores.get(store_id)

    def built(self) -> list[Gateway]:
        """Every store's Gateway built so far (the default store's first)."""
        return list(self._gateways.values())

    def gateway(self, store_id: str, *, writes: bool) -> Gateway:
        """The Gateway of ``store_id``; NotFound for an unknown store, Conflict for a write
        to a disabled one (its history stays readable)."""
        gateway = self._gateways.get(store_id)
        store = self._stores.get(store_id)
        if gateway is None or (store is None and store_id != DEFAULT_STORE):
            raise NotFound(f"no store '{store_id}'")
        if writes and store is not None and not store.enabled:
            raise Conflict(f"store '{store_id}' is disabled")
        return gateway

    def defaults(self, store_id: str) -> StoreDefaults:
        """The store's invoice defaults as last read (none for an unknown store)."""
        store = self._stores.get(store_id)
        if store is None:
            return StoreDefaults()
        return StoreDefaults(store.default_expires_in, store.default_underpay_tolerance)

    def secret_of(self, store_id: str) -> bytes | None:
        """The secret that signs ``store_id``'s callbacks (None: unsigned).

        The default store uses its own secret if one was set, else ``--callback-secret``.
        """
        store = self._stores.get(store_id)
        if store is not None and store.callback_secret:
            return store.callback_secret.encode()
        return self._default_secret if store_id == DEFAULT_STORE else None

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
            await self.learn_addresses()
