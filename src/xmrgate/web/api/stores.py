"""``/stores``: the operator manages stores and their API keys (the ``admin`` scope).

Thin routes over ``core.stores.StoreAdmin``: the bodies are typed here (unknown fields
are refused, 400), every rule about their values is the use case's. A store key is
answered once, when created; afterwards only its id and scopes are listed.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr

from xmrgate.domain.stores import DEFAULT_POS_CONFIRMATIONS, DEFAULT_STORE_SPEED_POLICY
from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep, StoreAdminDep

router = APIRouter()
ADMIN = [require("admin")]


class StoreCreate(BaseModel):
    """Body of ``POST /stores``."""

    model_config = ConfigDict(extra="forbid")

    id: StrictStr
    name: StrictStr | None = None
    # {"account": "new"}: a new account of the main wallet; or the store's own wallet-rpc:
    # {"rpc_address": URL, "rpc_username"?: USER, "rpc_password"?: PASSWORD}.
    wallet: dict[str, Any]
    callback_secret: StrictStr | None = None
    accent: StrictStr | None = None
    default_expires_in: StrictInt | None = None
    default_underpay_tolerance: StrictInt | None = None
    # The fewest confirmations its POS screens wait for.
    pos_confirmations: StrictInt = DEFAULT_POS_CONFIRMATIONS
    # The speed policy of its Greenfield invoices made without one (BTCPay's names).
    speed_policy: StrictStr = DEFAULT_STORE_SPEED_POLICY


class StorePatch(BaseModel):
    """Body of ``PATCH /stores/{id}``: the fields given are changed, null clears."""

    model_config = ConfigDict(extra="forbid")

    name: StrictStr | None = None
    enabled: StrictBool | None = None
    callback_secret: StrictStr | None = None
    accent: StrictStr | None = None
    default_expires_in: StrictInt | None = None
    default_underpay_tolerance: StrictInt | None = None
    pos_confirmations: StrictInt | None = None
    speed_policy: StrictStr | None = None


class KeyCreate(BaseModel):
    """Body of ``POST /stores/{id}/keys`` (optional: no body means the default scopes).

    ``permissions``: Greenfield permission names instead of scopes (a shop plugin's
    key): the key reports exactly these, and gets the scopes they map to.
    """

    model_config = ConfigDict(extra="forbid")

    scopes: list[StrictStr] | None = None
    permissions: list[StrictStr] | None = None


@router.post("/stores", dependencies=ADMIN)
async def create_store(body: StoreCreate, admin: StoreAdminDep) -> dict[str, Any]:
    """Create a store (a new account of the main wallet, or its own wallet-rpc); 409 when
    the id is taken or the wallet is already the main one or another store's."""
    store = await admin.create(
        body.id,
        body.name,
        body.wallet,
        callback_secret=body.callback_secret,
        accent=body.accent,
        default_expires_in=body.default_expires_in,
        default_underpay_tolerance=body.default_underpay_tolerance,
        pos_confirmations=body.pos_confirmations,
        speed_policy=body.speed_policy,
    )
    return store.public()


@router.get("/stores", dependencies=ADMIN)
async def list_stores(admin: StoreAdminDep) -> dict[str, Any]:
    """Every store, the default one first."""
    return {"stores": [store.public() for store in await admin.list()]}


@router.get("/stores/{store_id}", dependencies=ADMIN)
async def get_store(store_id: str, admin: StoreAdminDep) -> dict[str, Any]:
    """One store (never its callback secret: only whether one is set)."""
    return (await admin.get(store_id)).public()


@router.patch("/stores/{store_id}", dependencies=ADMIN)
async def update_store(store_id: str, body: StorePatch, admin: StoreAdminDep) -> dict[str, Any]:
    """Change a store's name, state, callback secret, accent, invoice defaults, the
    confirmations its POS screens wait for or its Greenfield invoices' speed policy."""
    changes = body.model_dump(exclude_unset=True)
    return (await admin.update(store_id, **changes)).public()


@router.post("/stores/{store_id}/keys", dependencies=ADMIN)
async def create_key(
    store_id: str,
    admin: StoreAdminDep,
    response: Response,
    body: Annotated[KeyCreate | None, Body()] = None,
) -> dict[str, Any]:
    """A new API key of the store: the key is in this answer only, keep it."""
    key, token = await admin.create_key(
        store_id,
        None if body is None else body.scopes,
        permissions=None if body is None else body.permissions,
    )
    response.headers["Cache-Control"] = "no-store"
    answer: dict[str, Any] = {"id": key.id, "store": key.store_id, "scopes": sorted(key.scopes)}
    if key.permissions is not None:
        answer["permissions"] = list(key.permissions)
    answer["key"] = token
    return answer


@router.get("/stores/{store_id}/keys", dependencies=ADMIN)
async def list_keys(store_id: str, admin: StoreAdminDep) -> dict[str, Any]:
    """The store's keys (ids, scopes, revoked or not; never the keys themselves)."""
    keys = await admin.list_keys(store_id)
    return {"keys": [key.public() for key in keys]}


@router.delete("/stores/{store_id}/keys/{key_id}", dependencies=ADMIN)
async def revoke_key(store_id: str, key_id: str, admin: StoreAdminDep) -> dict[str, Any]:
    """Revoke a key of the store at once; 404 when the store has no such key."""
    await admin.revoke_key(store_id, key_id)
    return {"id": key_id, "revoked": True}


@router.get("/store", dependencies=[require("read")])
async def own_store(gateway: GatewayDep, admin: StoreAdminDep) -> dict[str, Any]:
    """The store the caller acts on (a store key's own, or the one its header names):
    what any key with ``read`` may know of it, never its wallet or secrets."""
    store = await admin.get(gateway.store_id)
    shown = store.public()
    return {name: shown[name] for name in ("id", "name", "enabled", "accent")}
