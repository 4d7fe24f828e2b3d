"""Request-scoped access to the process's use cases: the Gateway of the caller's store."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from xmrgate.core.gateway import Gateway
from xmrgate.core.store_gateways import StoreGateways
from xmrgate.core.stores import StoreAdmin
from xmrgate.domain.errors import Forbidden
from xmrgate.domain.stores import DEFAULT_STORE

# Operator keys (and callers of an open gateway) pick a store with this header.
STORE_HEADER = "x-xmrgate-store"
_READS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_gateway(request: Request) -> Gateway:
    """The Gateway of the caller's store (async: no thread-pool hop per request).

    A store key acts on its own store only; an operator key, or a caller of a gateway
    without keys, acts on the default store or the one ``X-Xmrgate-Store`` names.
    An unknown store is 404; a write to a disabled store is 409.
    """
    stores: StoreGateways = request.app.state.stores
    key = getattr(request.state, "api_key_record", None)
    wanted = request.headers.get(STORE_HEADER)
    if key is not None and key.store is not None:
        if wanted is not None and wanted != key.store:
            raise Forbidden("a store's API key acts on its own store only")
        store = key.store
    elif key is None and stores.operator_keys:
        # A keyless caller of a public path (/health) on a gateway with keys: the
        # default store, whatever the header says (store ids are nobody's business).
        store = DEFAULT_STORE
    else:
        store = wanted or DEFAULT_STORE
    chosen: Gateway = stores.gateway(store, writes=request.method not in _READS)
    return chosen


async def get_public_gateway(request: Request) -> Gateway:
    """The Gateway of the public pages: it finds a request by its address in any store."""
    gateway: Gateway = request.app.state.public_gateway
    return gateway


async def get_store_admin(request: Request) -> StoreAdmin:
    """The administration of stores (the ``admin`` scope's routes): not a store's part."""
    admin: StoreAdmin = request.app.state.store_admin
    return admin


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
StoreAdminDep = Annotated[StoreAdmin, Depends(get_store_admin)]
PublicGatewayDep = Annotated[Gateway, Depends(get_public_gateway)]
