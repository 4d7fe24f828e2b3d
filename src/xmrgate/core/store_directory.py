"""The stores as last read: their rows, their live keys, their callback secrets.

Built before anything that needs to know a store (the callback worker signs with a
store's secret, a request takes its store's defaults), so nothing is built around a
placeholder. ``core/store_gateways.py`` reads it again at start, after each change made
through this process, and every few seconds (a change made by another process or host
sharing the database).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from xmrgate.core.payment_requests import StoreDefaults
from xmrgate.core.stores import StoreRepository
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.errors import XmrgateError
from xmrgate.domain.greenfield.speed import SpeedPolicy, confirmations_for
from xmrgate.domain.stores import DEFAULT_STORE, Store, key_label

log = logging.getLogger(__name__)


class StoreDirectory:
    """The ``stores`` and ``store_keys`` tables as this process last read them."""

    def __init__(
        self,
        repo: StoreRepository,
        *,
        operator_keys: list[ApiKey],
        default_secret: bytes | None,
    ) -> None:
        """``default_secret`` (``--callback-secret``) signs the default store's callbacks
        unless it has one of its own."""
        self._repo = repo
        self._operator_keys = list(operator_keys)
        self._default_secret = default_secret
        self._addresses: dict[str, str] = {}
        self._stores: dict[str, Store] = {}
        self._keys: list[ApiKey] = list(operator_keys)

    @property
    def operator_keys(self) -> list[ApiKey]:
        """The configured keys (``--api-key``): empty on an open (loopback) gateway."""
        return self._operator_keys

    def keys(self) -> list[ApiKey]:
        """Every key that may call the API: the configured ones and the stores' live ones."""
        return self._keys

    async def load(self) -> list[Store]:
        """Read the stores and their keys; the stores read."""
        stores = {s.id: s for s in await self._repo.all()}
        live = await self._repo.active_keys()
        self._stores = stores
        self._keys = self._operator_keys + [
            ApiKey(
                digest=k.digest,
                label=key_label(k.id),
                scopes=k.scopes,
                store=k.store_id,
                # A shop plugin's key reports exactly these (api-keys/current).
                permissions=k.permissions,
            )
            for k in live
            if k.store_id in stores and stores[k.store_id].enabled
        ]
        return list(stores.values())

    def store(self, store_id: str) -> Store | None:
        """The store row as last read."""
        return self._stores.get(store_id)

    def defaults(self, store_id: str) -> StoreDefaults:
        """The store's invoice defaults as last read (none for an unknown store)."""
        store = self._stores.get(store_id)
        if store is None:
            return StoreDefaults()
        return StoreDefaults(store.default_expires_in, store.default_underpay_tolerance)

    def confirmations(self, store_id: str) -> int:
        """The confirmations of the store's default speed policy as last read: what a
        Greenfield invoice made now without one records (MediumSpeed's for a store not
        read yet, as before stores had a say)."""
        store = self._stores.get(store_id)
        return confirmations_for(None if store is None else SpeedPolicy(store.speed_policy))

    def secret_of(self, store_id: str) -> bytes | None:
        """The secret that signs ``store_id``'s callbacks (None: unsigned).

        The default store uses its own secret if one was set, else ``--callback-secret``.
        """
        store = self._stores.get(store_id)
        if store is not None and store.callback_secret:
            return store.callback_secret.encode()
        return self._default_secret if store_id == DEFAULT_STORE else None

    def address_of(self, store_id: str) -> str | None:
        """The base address of the store's account, once known (None until then)."""
        return self._addresses.get(store_id)

    async def learn_addresses(self, account_address: Callable[[int], Awaitable[str]]) -> None:
        """Ask the wallet (``account_address``) for the base address of each store's
        account not known yet (``X-MoneroPay-Address`` to a store's keys); in the
        background: a wallet that is down must not hold up a reload."""
        for store in list(self._stores.values()):
            if store.id in self._addresses or store.id == DEFAULT_STORE:
                continue
            try:
                self._addresses[store.id] = await account_address(store.account_index)
            except XmrgateError as exc:
                log.debug("stores: the address of %s is not known yet: %s", store.id, exc)
                return
