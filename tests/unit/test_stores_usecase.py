"""Store administration with fakes: every refusal creates nothing, keys are shown once.

"Nothing created": no account asked of the wallet, no row or key, no ``changed()``.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from xmrgate.core.stores import StoreAdmin
from xmrgate.domain.errors import (
    AlreadyExists,
    Conflict,
    InvalidInput,
    NotFound,
    WalletUnavailable,
    XmrgateError,
)
from xmrgate.domain.stores import DEFAULT_STORE, Store, StoreKey

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
NEW = {"account": "new"}
SECRET = "s" * 16


@dataclass
class FakeStores:
    """The store repository in memory; starts with the default store, like a migration."""

    stores: dict[str, Store] = field(
        default_factory=lambda: {
            DEFAULT_STORE: Store(id=DEFAULT_STORE, name="Default store", account_index=0)
        }
    )
    keys_by_id: dict[str, StoreKey] = field(default_factory=dict)

    async def all(self) -> list[Store]:
        return sorted(self.stores.values(), key=lambda s: s.account_index)

    async def get(self, store_id: str) -> Store | None:
        return self.stores.get(store_id)

    async def insert(self, store: Store) -> Store:
        if store.id in self.stores:
            raise AlreadyExists(f"a store '{store.id}' already exists")
        self.stores[store.id] = store
        return store

    async def update(self, store: Store) -> Store:
        if store.id not in self.stores:
            raise NotFound(f"no store '{store.id}'")
        self.stores[store.id] = store
        return store

    async def add_key(self, key: StoreKey) -> None:
        self.keys_by_id[key.id] = key

    async def keys(self, store_id: str) -> list[StoreKey]:
        return [k for k in self.keys_by_id.values() if k.store_id == store_id]

    async def revoke_key(self, store_id: str, key_id: str) -> bool:
        key = self.keys_by_id.get(key_id)
        if key is None or key.store_id != store_id:
            return False
        self.keys_by_id[key_id] = replace(key, revoked=True)
        return True

    async def active_keys(self) -> list[StoreKey]:
        return [
            k for k in self.keys_by_id.values() if not k.revoked and self.stores[k.store_id].enabled
        ]


@dataclass
class FakeAccounts:
    """The main wallet's create_account: numbers accounts from 1, or fails."""

    error: XmrgateError | None = None
    labels: list[str] = field(default_factory=list)

    async def create_account(self, label: str) -> int:
        if self.error is not None:
            raise self.error
        self.labels.append(label)
        return len(self.labels)


@dataclass
class Setup:
    repo: FakeStores
    accounts: FakeAccounts
    admin: StoreAdmin
    changes: list[int]


def setup(error: XmrgateError | None = None) -> Setup:
    repo, accounts, changes = FakeStores(), FakeAccounts(error=error), []

    async def changed() -> None:
        changes.append(1)

    admin = StoreAdmin(repo, accounts, changed, clock=lambda: NOW)
    return Setup(repo, accounts, admin, changes)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def assert_nothing_created(s: Setup) -> None:
    assert s.accounts.labels == []
    assert list(s.repo.stores) == [DEFAULT_STORE]
    assert s.repo.keys_by_id == {}
    assert s.changes == []


def test_create_makes_an_account_then_the_row() -> None:
    """The account is labelled with the id, the row records it, changed() follows."""
    s = setup()
    store = run(
        s.admin.create(
            "shop-2",
            None,
            NEW,
            callback_secret=SECRET,
            accent="#AbCdEf",
            default_expires_in=3600,
            default_underpay_tolerance=0,
        )
    )
    assert s.accounts.labels == ["xmrgate store shop-2"]
    assert store == s.repo.stores["shop-2"]
    assert (store.name, store.account_index, store.enabled) == ("shop-2", 1, True)
    assert (store.callback_secret, store.accent) == (SECRET, "#abcdef")
    assert (store.default_expires_in, store.default_underpay_tolerance) == (3600, 0)
    assert store.created_at == NOW
    assert s.changes == [1]
    assert store.public()["wallet"] == {"account": 1}
    assert store.public()["callback_secret_set"] is True
    assert run(s.admin.create("shop", "  My shop ", NEW)).name == "My shop"  # stripped


BAD_CREATE: dict[str, dict[str, Any]] = {
    "id upper case": {"id": "Shop"},
    "id empty": {"id": ""},
    "id with a slash": {"id": "a/b"},
    "id trailing hyphen": {"id": "shop-"},
    "id too long": {"id": "a" * 33},
    "id not a string": {"id": 7},
    "name blank": {"name": "   "},
    "name too long": {"name": "n" * 101},
    "name with a NUL": {"name": "a\x00b"},
    "name with a newline": {"name": "a\nb"},
    "name not a string": {"name": 5},
    "wallet empty": {"wallet": {}},
    "wallet an account number": {"wallet": {"account": 3}},
    "wallet with more": {"wallet": {"account": "new", "label": "x"}},
    "wallet a string": {"wallet": "new"},
    "wallet none": {"wallet": None},
    "accent short": {"accent": "#abc"},
    "accent a name": {"accent": "red"},
    "accent not hex": {"accent": "#12345g"},
    "expires zero": {"default_expires_in": 0},
    "expires over 30 days": {"default_expires_in": 2_592_001},
    "expires a bool": {"default_expires_in": True},
    "expires a string": {"default_expires_in": "60"},
    "tolerance negative": {"default_underpay_tolerance": -1},
    "tolerance over bigint": {"default_underpay_tolerance": 2**63},
    "tolerance a float": {"default_underpay_tolerance": 1.5},
    "secret too short": {"callback_secret": "s" * 15},
    "secret too long": {"callback_secret": "s" * 257},
    "secret with a NUL": {"callback_secret": "s" * 16 + "\x00"},
    "secret not a string": {"callback_secret": 12345678901234567},
}


@pytest.mark.parametrize("bad", BAD_CREATE.values(), ids=list(BAD_CREATE))
def test_bad_input_creates_nothing(bad: dict[str, Any]) -> None:
    """Each bad value is a 400 before the wallet or the repository is touched."""
    s = setup()
    fields: dict[str, Any] = {"id": "shop", "name": None, "wallet": NEW, **bad}
    with pytest.raises(InvalidInput):
        run(s.admin.create(**fields))
    assert_nothing_created(s)


def test_the_limits_themselves_are_accepted() -> None:
    """The edges of every range pass (so the refusals above are about the edges)."""
    s = setup()
    store = run(
        s.admin.create(
            "a",
            "n" * 100,
            NEW,
            callback_secret="s" * 256,
            default_expires_in=2_592_000,
            default_underpay_tolerance=2**63 - 1,
        )
    )
    assert store.default_expires_in == 2_592_000
    assert run(s.admin.create("b" * 32, "x", NEW, default_expires_in=1)).account_index == 2


def test_an_own_wallet_store_without_a_probe_is_refused() -> None:
    """``xmrgate store add`` with --wallet-rpc before it could reach one: nothing made."""
    s = setup()
    wallet = {"rpc_address": "http://127.0.0.1:18083/json_rpc", "rpc_username": "u"}
    with pytest.raises(InvalidInput, match="cannot reach a store's own wallet-rpc"):
        run(s.admin.create("shop", None, wallet))
    assert_nothing_created(s)


def test_a_duplicate_id_is_409_before_the_wallet_is_asked() -> None:
    s = setup()
    first = run(s.admin.create("shop", "First", NEW))
    with pytest.raises(AlreadyExists) as refused:
        run(s.admin.create("shop", "Second", NEW))
    assert "shop" in refused.value.message
    assert s.accounts.labels == ["xmrgate store shop"]  # one account: the first store's
    assert s.repo.stores["shop"] == first
    assert s.changes == [1]


def test_the_default_id_is_taken() -> None:
    s = setup()
    with pytest.raises(AlreadyExists):
        run(s.admin.create(DEFAULT_STORE, None, NEW))
    assert_nothing_created(s)


def test_a_failing_wallet_creates_no_row() -> None:
    s = setup(error=WalletUnavailable("wallet-rpc unreachable", request_sent=False))
    with pytest.raises(WalletUnavailable):
        run(s.admin.create("shop", None, NEW))
    assert_nothing_created(s)


def test_get_and_list() -> None:
    s = setup()
    run(s.admin.create("shop", None, NEW))
    assert run(s.admin.get("shop")).account_index == 1
    assert [st.id for st in run(s.admin.list())] == [DEFAULT_STORE, "shop"]
    for missing in ("nope", "Not A Slug", ""):
        with pytest.raises(NotFound) as refused:
            run(s.admin.get(missing))
        assert refused.value.message == f"no store '{missing}'"


def test_update_changes_only_what_is_given() -> None:
    s = setup()
    run(s.admin.create("shop", "Shop", NEW, callback_secret=SECRET, accent="#000000"))
    updated = run(s.admin.update("shop", name=" New name ", default_expires_in=60))
    assert (updated.name, updated.default_expires_in) == ("New name", 60)
    assert (updated.callback_secret, updated.accent, updated.account_index) == (
        SECRET,
        "#000000",
        1,
    )
    assert s.repo.stores["shop"] == updated
    assert s.changes == [1, 1]


def test_update_with_none_clears_the_optional_fields() -> None:
    s = setup()
    run(s.admin.create("shop", None, NEW, callback_secret=SECRET, accent="#000000"))
    cleared = run(
        s.admin.update(
            "shop",
            callback_secret=None,
            accent=None,
            default_expires_in=None,
            default_underpay_tolerance=None,
        )
    )
    assert (cleared.callback_secret, cleared.accent) == (None, None)
    assert cleared.public()["callback_secret_set"] is False


def test_a_store_can_be_disabled_and_enabled_but_not_the_default() -> None:
    s = setup()
    run(s.admin.create("shop", None, NEW))
    assert run(s.admin.update("shop", enabled=False)).enabled is False
    assert run(s.admin.update("shop", enabled=True)).enabled is True
    with pytest.raises(InvalidInput, match="default store cannot be disabled"):
        run(s.admin.update(DEFAULT_STORE, enabled=False))
    assert s.repo.stores[DEFAULT_STORE].enabled is True
    # Everything else of the default store may change.
    assert run(s.admin.update(DEFAULT_STORE, name="Main")).name == "Main"


BAD_UPDATE: dict[str, dict[str, Any]] = {
    "unknown field": {"account_index": 5},
    "the id": {"id": "other"},
    "name cleared": {"name": None},
    "name blank": {"name": " "},
    "enabled null": {"enabled": None},
    "enabled a string": {"enabled": "yes"},
    "secret too short": {"callback_secret": "short"},
    "accent bad": {"accent": "blue"},
    "expires zero": {"default_expires_in": 0},
    "tolerance negative": {"default_underpay_tolerance": -5},
    "one good one bad": {"name": "Fine", "accent": "#xyzxyz"},
}


@pytest.mark.parametrize("bad", BAD_UPDATE.values(), ids=list(BAD_UPDATE))
def test_bad_updates_change_nothing(bad: dict[str, Any]) -> None:
    s = setup()
    before = run(s.admin.create("shop", "Shop", NEW))
    with pytest.raises(InvalidInput):
        run(s.admin.update("shop", **bad))
    assert s.repo.stores["shop"] == before
    assert s.changes == [1]


def test_update_of_a_missing_store_is_404_and_empty_update_writes_nothing() -> None:
    s = setup()
    with pytest.raises(NotFound):
        run(s.admin.update("nope", name="x"))
    before = run(s.admin.create("shop", None, NEW))
    assert run(s.admin.update("shop")) == before
    assert s.changes == [1]


def test_a_key_is_shown_once_and_only_its_digest_is_kept() -> None:
    s = setup()
    run(s.admin.create("shop", None, NEW))
    key, token = run(s.admin.create_key("shop", None))
    assert token.startswith("xgs_") and len(token) > 40
    assert key.digest == hashlib.sha256(token.encode()).digest()
    assert key.scopes == {"read", "receive", "transfer"}
    assert len(key.id) == 16 and int(key.id, 16) >= 0
    assert (key.label, key.created_at) == (f"store-key:{key.id}", NOW)
    [stored] = s.repo.keys_by_id.values()
    assert stored == key
    assert token not in repr(stored)
    listed = [k.public() for k in run(s.admin.list_keys("shop"))]
    assert listed == [key.public()]
    assert token not in repr(listed) and "key" not in listed[0]
    assert s.changes == [1, 1]
    other, other_token = run(s.admin.create_key("shop", ["read"]))
    assert other.id != key.id and other_token != token and other.scopes == {"read"}


BAD_KEYS: dict[str, Any] = {
    "the admin scope": ["read", "admin"],
    "an unknown scope": ["write"],
    "not a list": "read",
    "not strings": [1],
}


@pytest.mark.parametrize("scopes", BAD_KEYS.values(), ids=list(BAD_KEYS))
def test_bad_scopes_create_no_key(scopes: Any) -> None:
    s = setup()
    with pytest.raises(InvalidInput):
        run(s.admin.create_key(DEFAULT_STORE, scopes))
    assert_nothing_created(s)


def test_no_key_for_a_missing_or_disabled_store() -> None:
    s = setup()
    with pytest.raises(NotFound):
        run(s.admin.create_key("nope", None))
    run(s.admin.create("shop", None, NEW))
    run(s.admin.update("shop", enabled=False))
    with pytest.raises(Conflict, match="disabled"):
        run(s.admin.create_key("shop", None))
    assert s.repo.keys_by_id == {}
    with pytest.raises(NotFound):
        run(s.admin.list_keys("nope"))


def test_revoking_a_key_of_another_store_is_404() -> None:
    s = setup()
    run(s.admin.create("shop", None, NEW))
    run(s.admin.create("other", None, NEW))
    mine, _ = run(s.admin.create_key("shop", None))
    theirs, _ = run(s.admin.create_key("other", None))
    writes = len(s.changes)
    with pytest.raises(NotFound, match="no key"):
        run(s.admin.revoke_key("shop", theirs.id))
    with pytest.raises(NotFound):
        run(s.admin.revoke_key("shop", "0" * 16))
    with pytest.raises(NotFound):
        run(s.admin.revoke_key("nope", mine.id))
    assert len(s.changes) == writes
    assert {k.id for k in run(s.repo.active_keys())} == {mine.id, theirs.id}
    run(s.admin.revoke_key("shop", mine.id))
    assert len(s.changes) == writes + 1
    assert [k.id for k in run(s.repo.active_keys())] == [theirs.id]
    assert [k.revoked for k in run(s.admin.list_keys("shop"))] == [True]
