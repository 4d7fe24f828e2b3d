"""``GET stores``, ``GET stores/{storeId}`` and the store's payment methods (§2.5, §2.6, §4).

The Greenfield store id is our store id, the default store's (``default``) included.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request

from xmrgate.core.store_gateways import StoreGateways
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.payment_methods import parse_payment_method
from xmrgate.domain.greenfield.permissions import MODIFY_STORE, VIEW_STORE, grants
from xmrgate.web.greenfield import PREFIX
from xmrgate.web.greenfield.access import StoreAccess, caller, require_permission, store_row
from xmrgate.web.greenfield.auth import granted_permissions
from xmrgate.web.greenfield.errors import KindNotFound, MissingPermission
from xmrgate.web.greenfield.store_data import legacy_on_chain, payment_method, store_data

router = APIRouter(prefix=PREFIX, include_in_schema=False)
ViewStore = Annotated[StoreAccess, require_permission(VIEW_STORE)]


@router.get("/stores")
async def list_stores(request: Request) -> list[dict[str, Any]]:
    """Every store whose settings the key may see (a store key: its own), default first.

    A key that may see none is refused (403 naming the permission) rather than answered
    ``[]``: WooCommerce takes an empty list for a key that does not work, and says so.
    """
    key = caller(request)
    granted = granted_permissions(key)
    stores: StoreGateways = request.app.state.stores
    rate_lock: int = request.app.state.rate_lock
    seen = []
    for gateway in stores.built():
        store = store_row(stores, gateway.store_id)
        if store is not None and grants(granted, VIEW_STORE, store.id):
            seen.append(store_data(store, gateway, rate_lock))
    if not seen:
        raise MissingPermission(VIEW_STORE)
    return seen


@router.get("/stores/{storeId}")
async def get_store(access: ViewStore, request: Request) -> dict[str, Any]:
    """One store."""
    return store_data(access.store, access.gateway, request.app.state.rate_lock)


@router.get("/stores/{storeId}/payment-methods")
async def list_payment_methods(
    access: ViewStore,
    onlyEnabled: bool = False,  # BTCPay's query names
    includeConfig: bool = False,
) -> list[dict[str, Any]]:
    """``[{"enabled", "paymentMethodId": "XMR-CHAIN"}]``; ``config`` only with
    ``includeConfig=true``, which needs the store's settings permission (as in BTCPay)."""
    if includeConfig:
        access.require(MODIFY_STORE)
    if onlyEnabled and not access.store.enabled:
        return []
    return [payment_method(access.store, includeConfig)]


@router.get("/stores/{storeId}/payment-methods/OnChain")
async def legacy_on_chain_methods(access: ViewStore) -> list[dict[str, Any]]:
    """BTCPay 1.x's on-chain list (PrestaShop asks it at every checkout): Monero's item."""
    return [legacy_on_chain(access.store)]


@router.get("/stores/{storeId}/payment-methods/OnChain/{cryptoCode}")
async def legacy_on_chain_method(access: ViewStore, cryptoCode: str) -> dict[str, Any]:
    """BTCPay 1.x's on-chain method of one coin: ``XMR`` only."""
    if cryptoCode.upper() != "XMR":
        raise KindNotFound("paymentmethod")
    return legacy_on_chain(access.store)


@router.get("/stores/{storeId}/payment-methods/LightningNetwork")
async def legacy_lightning_methods(access: ViewStore) -> list[dict[str, Any]]:
    """BTCPay 1.x's Lightning list: none here, but a 200 (a refusal makes PrestaShop hide
    the whole payment option)."""
    return []


@router.get("/stores/{storeId}/payment-methods/{paymentMethodId}")
async def get_payment_method(
    access: ViewStore,
    paymentMethodId: str,
    includeConfig: bool = False,
) -> dict[str, Any]:
    """One method by any spelling BTCPay parses (``XMR``, ``XMR_CHAIN``, ...); another
    is 404 ``paymentmethod-not-found``."""
    try:
        parse_payment_method(paymentMethodId)
    except FieldError:
        raise KindNotFound("paymentmethod") from None
    if includeConfig:
        access.require(MODIFY_STORE)
    return payment_method(access.store, includeConfig)
