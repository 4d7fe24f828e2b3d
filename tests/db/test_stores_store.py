"""``SqlStores`` on SQLite and PostgreSQL: stores, their keys as digests, revocation."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.tables import store_keys
from xmrgate.domain.errors import AlreadyExists, MissingReference, NotFound
from xmrgate.domain.stores import DEFAULT_STORE, Store, StoreKey

CREATED = datetime(2026, 11, 23, 12, 0, 0, 123456, tzinfo=UTC)


def shop(store_id: str = "shop", account: int = 1, **fields: Any) -> Store:
    return Store(id=store_id, name=f"Shop {store_id}", account_index=account, **fields)


def key(key_id: str, store_id: str = "shop", token: str = "", scopes: str = "read") -> StoreKey:
    return StoreKey(
        id=key_id,
        store_id=store_id,
        digest=hashlib.sha256((token or key_id).encode()).digest(),
        scopes=frozenset(scopes.split("+")),
        created_at=CREATED,
    )


def test_the_migration_leaves_the_default_store(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[list[Store], Store | None, Store | None]:
        repo = SqlStores(db)
        return await repo.all(), await repo.get(DEFAULT_STORE), await repo.get("nope")

    [only], default, missing = on_database(scenario)
    assert only == default and missing is None
    assert (only.id, only.account_index, only.enabled) == (DEFAULT_STORE, 0, True)
    assert only.created_at is not None and only.created_at.tzinfo is not None


def test_a_store_round_trips_with_every_field(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[Store, Store | None, list[Store]]:
        repo = SqlStores(db)
        inserted = await repo.insert(
            shop(
                account=7,
                enabled=False,
                callback_secret="s" * 256,
                accent="#a1b2c3",
                default_expires_in=2_592_000,
                default_underpay_tolerance=2**63 - 1,
                created_at=CREATED,
            )
        )
        await repo.insert(shop("zz-early", account=3))
        return inserted, await repo.get("shop"), await repo.all()

    inserted, read, listed = on_database(scenario)
    assert inserted == read
    assert read == shop(
        account=7,
        enabled=False,
        callback_secret="s" * 256,
        accent="#a1b2c3",
        default_expires_in=2_592_000,
        default_underpay_tolerance=2**63 - 1,
        created_at=CREATED,
    )
    assert [s.id for s in listed] == [DEFAULT_STORE, "zz-early", "shop"]  # by account


def test_a_taken_id_or_account_is_already_exists_naming_it(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[str, str, list[Store]]:
        repo = SqlStores(db)
        await repo.insert(shop(account=1))
        with pytest.raises(AlreadyExists) as same_id:
            await repo.insert(shop(account=2))
        with pytest.raises(AlreadyExists) as same_account:
            await repo.insert(shop("other", account=1))
        return same_id.value.message, same_account.value.message, await repo.all()

    same_id, same_account, listed = on_database(scenario)
    assert same_id == "a store 'shop' already exists"
    assert "account 1" in same_account
    assert [(s.id, s.account_index) for s in listed] == [(DEFAULT_STORE, 0), ("shop", 1)]


def test_update_writes_the_editable_fields_only(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[Store, Store | None]:
        repo = SqlStores(db)
        original = await repo.insert(shop(callback_secret="s" * 16, created_at=CREATED))
        changed = original.with_changes(
            name="Renamed",
            enabled=False,
            callback_secret=None,
            accent="#ffffff",
            default_expires_in=60,
            default_underpay_tolerance=5,
            account_index=99,  # never written
            created_at=datetime(2000, 1, 1, tzinfo=UTC),  # never written
        )
        updated = await repo.update(changed)
        with pytest.raises(NotFound):
            await repo.update(shop("gone", account=50))
        return updated, await repo.get("shop")

    updated, read = on_database(scenario)
    assert updated == read
    assert read == shop(
        enabled=False,
        accent="#ffffff",
        default_expires_in=60,
        default_underpay_tolerance=5,
        created_at=CREATED,
    ).with_changes(name="Renamed")


def test_a_key_is_stored_as_a_hex_digest_with_joined_scopes(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[list[StoreKey], list[Any]]:
        repo = SqlStores(db)
        await repo.insert(shop())
        await repo.add_key(key("k1", token="xgs_secret-token", scopes="read+transfer+receive"))
        async with db.read() as conn:
            raw = list((await conn.execute(select(store_keys))).mappings())
        return await repo.keys("shop"), raw

    [read], [row] = on_database(scenario)
    digest = hashlib.sha256(b"xgs_secret-token").digest()
    assert row["digest"] == digest.hex() and len(row["digest"]) == 64
    assert row["scopes"] == "read+receive+transfer"
    assert "xgs_secret-token" not in repr(row)
    assert read == StoreKey(
        id="k1",
        store_id="shop",
        digest=digest,
        scopes=frozenset({"read", "receive", "transfer"}),
        created_at=CREATED,
        label="store-key:k1",
    )


def test_key_clashes_and_missing_stores(on_database: Any) -> None:
    async def scenario(db: Database) -> list[str]:
        repo = SqlStores(db)
        await repo.insert(shop())
        await repo.add_key(key("k1", token="t1"))
        with pytest.raises(AlreadyExists):
            await repo.add_key(key("k1", token="t2"))  # same id
        with pytest.raises(AlreadyExists):
            await repo.add_key(key("k2", token="t1"))  # same digest
        with pytest.raises(MissingReference):
            await repo.add_key(key("k3", store_id="nope"))
        return [k.id for k in await repo.keys("shop")] + [k.id for k in await repo.keys("nope")]

    assert on_database(scenario) == ["k1"]


def test_revoke_only_the_stores_own_key_and_keep_the_first_time(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        repo = SqlStores(db)
        await repo.insert(shop())
        await repo.insert(shop("other", account=2))
        await repo.add_key(key("mine"))
        await repo.add_key(key("theirs", store_id="other"))
        result: dict[str, Any] = {
            "wrong store": await repo.revoke_key("shop", "theirs"),
            "unknown": await repo.revoke_key("shop", "nope"),
            "first": await repo.revoke_key("shop", "mine"),
        }
        async with db.read() as conn:
            query = select(store_keys.c.revoked_at).where(store_keys.c.id == "mine")
            first_time = (await conn.execute(query)).scalar()
        result["again"] = await repo.revoke_key("shop", "mine")
        async with db.read() as conn:
            result["same time"] = (await conn.execute(query)).scalar() == first_time
        result["first time"] = first_time
        result["shop"] = [(k.id, k.revoked) for k in await repo.keys("shop")]
        result["other"] = [(k.id, k.revoked) for k in await repo.keys("other")]
        return result

    result = on_database(scenario)
    assert result["wrong store"] is False and result["unknown"] is False
    assert result["first"] is True and result["again"] is True
    assert result["first time"] is not None and result["same time"] is True
    assert result["shop"] == [("mine", True)]
    assert result["other"] == [("theirs", False)]


def test_active_keys_leave_out_revoked_keys_and_disabled_stores(on_database: Any) -> None:
    async def scenario(db: Database) -> list[list[str]]:
        repo = SqlStores(db)
        on = await repo.insert(shop("on", account=1))
        off = await repo.insert(shop("off", account=2))
        for key_id, store_id in (("a", "on"), ("b", "on"), ("c", "off")):
            await repo.add_key(key(key_id, store_id=store_id))
        await repo.revoke_key("on", "b")
        seen = [sorted(k.id for k in await repo.active_keys())]
        await repo.update(off.with_changes(enabled=False))
        seen.append(sorted(k.id for k in await repo.active_keys()))
        await repo.update(off.with_changes(enabled=True))
        await repo.update(on.with_changes(enabled=False))
        seen.append(sorted(k.id for k in await repo.active_keys()))
        return seen

    assert on_database(scenario) == [["a", "c"], ["a"], ["c"]]
