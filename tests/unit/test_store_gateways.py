"""``StoreGateways``: which Gateway a store's caller gets, which keys live, which secret.

In-memory store rows; the Gateways are stand-ins (the registry only hands them out).
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from xmrgate.core.gateway import Gateway
from xmrgate.core.store_directory import StoreDirectory
from xmrgate.core.store_gateways import StoreGateways
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.errors import Conflict, NotFound
from xmrgate.domain.stores import Store, StoreKey, key_digest

OPERATOR = ApiKey(digest=key_digest("operator-key-123456"), label="key:op", scopes=frozenset())


class Rows:
    """The stores and keys tables in memory."""

    def __init__(self) -> None:
        self.stores = [
            Store(id="default", name="Default", account_index=0, callback_secret=None),
            Store(id="shop-a", name="A", account_index=1, callback_secret="secret-of-shop-a!!"),
            Store(id="shop-off", name="Off", account_index=2, enabled=False),
        ]
        self.keys = [
            StoreKey(
                id="k1", store_id="shop-a", digest=key_digest("a-key"), scopes=frozenset({"read"})
            ),
            StoreKey(
                id="k2",
                store_id="shop-off",
                digest=key_digest("off-key"),
                scopes=frozenset({"read"}),
            ),
        ]

    async def all(self) -> list[Store]:
        return list(self.stores)

    async def active_keys(self) -> list[StoreKey]:
        return list(self.keys)


def _registry() -> tuple[StoreGateways, list[str]]:
    built: list[str] = []

    def build(store: Store) -> Gateway:
        built.append(store.id)
        return cast(Gateway, f"gateway of {store.id}")

    directory = StoreDirectory(
        cast(Any, Rows()), operator_keys=[OPERATOR], default_secret=b"the --callback-secret"
    )
    registry = StoreGateways(directory, build)
    asyncio.run(registry.load())
    return registry, built


def test_each_store_gets_its_own_gateway_built_once() -> None:
    registry, built = _registry()
    asyncio.run(registry.load())  # a reload builds nothing again
    # The default store's first, by the same factory, before any read.
    assert built == ["default", "shop-a", "shop-off"]
    assert cast(str, registry.gateway("shop-a", writes=True)) == "gateway of shop-a"
    assert cast(str, registry.gateway("default", writes=True)) == "gateway of default"
    assert registry.default is registry.gateway("default", writes=False)


def test_unknown_store_is_not_found_and_a_disabled_one_is_read_only() -> None:
    registry, _ = _registry()
    with pytest.raises(NotFound):
        registry.gateway("nope", writes=False)
    assert cast(str, registry.gateway("shop-off", writes=False)) == "gateway of shop-off"
    with pytest.raises(Conflict):
        registry.gateway("shop-off", writes=True)


def test_live_keys_are_the_operators_and_those_of_enabled_stores() -> None:
    registry, _ = _registry()
    keys = registry.keys()
    assert keys[0] is OPERATOR
    stores = {k.store for k in keys[1:]}
    assert stores == {"shop-a"}  # the disabled store's key no longer works
    assert keys[1].digest == key_digest("a-key") and keys[1].scopes == frozenset({"read"})


def test_callbacks_are_signed_with_each_stores_own_secret() -> None:
    registry, _ = _registry()
    assert registry.directory.secret_of("shop-a") == b"secret-of-shop-a!!"
    assert registry.directory.secret_of("default") == b"the --callback-secret"
    # A store without a secret of its own is never signed with the operator's.
    assert registry.directory.secret_of("shop-off") is None
