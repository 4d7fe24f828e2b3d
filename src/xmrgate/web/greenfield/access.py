"""``require_permission``: the dependency of every route under ``/api/v1/stores/{storeId}``.

The key was authenticated by ``ApiKeyGate`` (no Greenfield route is reached without one).
Here its permissions are checked against the store of the path *before* the store is
looked up, as BTCPay authorizes before it reads: a store key (its permissions limited to
its store) gets 403 on any other store's path, existing or not, so it cannot learn which
store ids exist; an operator key (permissions on every store) gets 404 for an unknown one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import Depends, Request

from xmrgate.core.gateway import Gateway
from xmrgate.core.store_gateways import DEFAULT_STORE_ROW, StoreGateways
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.errors import NotFound, Unauthorized
from xmrgate.domain.greenfield.permissions import Permission, grants
from xmrgate.domain.stores import DEFAULT_STORE, Store
from xmrgate.web.greenfield.auth import granted_permissions
from xmrgate.web.greenfield.errors import NO_KEY, KindNotFound, MissingPermission

_READS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class StoreAccess:
    """What a store-scoped route acts on: the store, its Gateway, the caller's key and
    the permissions it holds (a route may check a second one, e.g. ``includeConfig``)."""

    store: Store
    gateway: Gateway
    key: ApiKey
    granted: tuple[Permission, ...]

    def allows(self, policy: str) -> bool:
        """Whether the key also holds ``policy`` on this store."""
        return grants(self.granted, policy, self.store.id)

    def require(self, policy: str) -> None:
        """403 ``missing-permission`` unless the key holds ``policy`` on this store."""
        if not self.allows(policy):
            raise MissingPermission(policy)


def caller(request: Request) -> ApiKey:
    """The key ``ApiKeyGate`` attached (401 if none: a route mounted outside the gate)."""
    key: ApiKey | None = getattr(request.state, "api_key_record", None)
    if key is None:
        raise Unauthorized(NO_KEY)
    return key


def store_row(stores: StoreGateways, store_id: str) -> Store | None:
    """The store as last read; the default store always exists (migration 0008), even
    before its row was first read."""
    found = stores.store(store_id)
    if found is None and store_id == DEFAULT_STORE:
        return DEFAULT_STORE_ROW
    return found


def require_permission(policy: str) -> Any:
    """A dependency answering the ``StoreAccess`` of ``{storeId}`` when the caller's key
    holds ``policy`` there: 403 ``missing-permission`` otherwise, 404 ``store-not-found``
    for an unknown store. A write to a disabled store is refused by its Gateway (400)."""

    async def check(request: Request, storeId: str) -> StoreAccess:
        key = caller(request)
        granted = granted_permissions(key)
        if not grants(granted, policy, storeId):
            raise MissingPermission(policy)
        stores: StoreGateways = request.app.state.stores
        try:
            gateway = stores.gateway(storeId, writes=request.method not in _READS)
        except NotFound:
            raise KindNotFound("store") from None
        store = store_row(stores, storeId)
        if store is None:  # built but gone from the last read: as unknown
            raise KindNotFound("store")
        return StoreAccess(store=store, gateway=gateway, key=key, granted=granted)

    return Depends(check)
