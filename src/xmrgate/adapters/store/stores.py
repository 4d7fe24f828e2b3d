"""Stores and their API keys (implements ``core.stores.StoreRepository``).

A key is kept as the hex of its SHA-256 digest, its scopes joined with ``+``
(``read+receive``), a shop plugin's Greenfield permission names joined with spaces;
revoking sets ``revoked_at`` and never deletes the row, so the payout journal's
``store-key:<id>`` keeps naming a known key.
"""

from __future__ import annotations

from sqlalchemy import RowMapping, func, insert, select, update

from xmrgate.adapters.store.db import Database, as_utc, utcnow
from xmrgate.adapters.store.tables import store_keys, stores
from xmrgate.domain.errors import AlreadyExists, NotFound
from xmrgate.domain.stores import EDITABLE, OwnWallet, Store, StoreKey, key_label


def _own_wallet(row: RowMapping) -> OwnWallet | None:
    if row["rpc_address"] is None:
        return None
    return OwnWallet(
        rpc_address=row["rpc_address"],
        primary_address=row["primary_address"],
        wallet_no=int(row["wallet_no"]),
        rpc_username=row["rpc_username"],
        rpc_password=row["rpc_password"],
    )


def _store(row: RowMapping) -> Store:
    return Store(
        own_wallet=_own_wallet(row),
        id=row["id"],
        name=row["name"],
        # A store on its own wallet uses that wallet's account 0 (NULL here: the column
        # is unique among the main wallet's accounts).
        account_index=int(row["account_index"] or 0),
        enabled=bool(row["enabled"]),
        callback_secret=row["callback_secret"],
        accent=row["accent"],
        default_expires_in=row["default_expires_in"],
        default_underpay_tolerance=row["default_underpay_tolerance"],
        pos_confirmations=int(row["pos_confirmations"]),
        speed_policy=row["speed_policy"],
        created_at=as_utc(row["created_at"]),
    )


def _key(row: RowMapping) -> StoreKey:
    return StoreKey(
        id=row["id"],
        store_id=row["store_id"],
        digest=bytes.fromhex(row["digest"]),
        scopes=frozenset(s for s in str(row["scopes"]).split("+") if s),
        created_at=as_utc(row["created_at"]),
        revoked=row["revoked_at"] is not None,
        label=key_label(row["id"]),
        permissions=None if row["permissions"] is None else tuple(row["permissions"].split()),
    )


class SqlStores:
    """The ``stores`` and ``store_keys`` tables."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def all(self) -> list[Store]:
        """Every store, by account (the default store, account 0, first)."""
        async with self._db.read() as conn:
            rows = await conn.execute(
                select(stores).order_by(stores.c.account_index.is_(None), stores.c.account_index)
            )
            return [_store(r) for r in rows.mappings()]

    async def get(self, store_id: str) -> Store | None:
        """One store, or None."""
        async with self._db.read() as conn:
            row = (
                (await conn.execute(select(stores).where(stores.c.id == store_id)))
                .mappings()
                .first()
            )
        return None if row is None else _store(row)

    async def insert(self, store: Store) -> Store:
        """Store a new store; AlreadyExists naming what is taken (its id or its account)."""
        own = store.own_wallet
        values = {
            "id": store.id,
            "account_index": None if own is not None else store.account_index,
            "created_at": store.created_at or utcnow(),
            **{name: getattr(store, name) for name in EDITABLE},
        }
        if own is not None:
            values.update(
                rpc_address=own.rpc_address,
                rpc_username=own.rpc_username,
                rpc_password=own.rpc_password,
                primary_address=own.primary_address,
            )
        try:
            async with self._db.write() as conn:
                if own is not None:
                    # Its sync_state row and advisory lock: the main wallet's is 1.
                    highest = (await conn.execute(select(func.max(stores.c.wallet_no)))).scalar()
                    values["wallet_no"] = max(int(highest or 1), 1) + 1
                await conn.execute(insert(stores).values(**values))
        except AlreadyExists:
            # The transaction is over (PostgreSQL aborts it): look in a new one.
            if await self.get(store.id) is not None:
                raise AlreadyExists(f"a store '{store.id}' already exists") from None
            if own is not None:
                raise AlreadyExists(
                    f"the wallet {own.primary_address} already belongs to a store"
                ) from None
            raise AlreadyExists(
                f"account {store.account_index} of the main wallet already belongs to a store"
            ) from None
        stored = await self.get(store.id)
        if stored is None:  # deleted between the two statements: nothing deletes stores
            raise NotFound(f"no store '{store.id}'")
        return stored

    async def update(self, store: Store) -> Store:
        """Write the editable fields of ``store``; the row as stored (NotFound if none)."""
        async with self._db.write() as conn:
            await conn.execute(
                update(stores)
                .where(stores.c.id == store.id)
                .values(**{name: getattr(store, name) for name in EDITABLE})
            )
            row = (
                (await conn.execute(select(stores).where(stores.c.id == store.id)))
                .mappings()
                .first()
            )
        if row is None:
            raise NotFound(f"no store '{store.id}'")
        return _store(row)

    async def add_key(self, key: StoreKey) -> None:
        """Store a key's digest and scopes (MissingReference when its store is gone)."""
        async with self._db.write() as conn:
            await conn.execute(
                insert(store_keys).values(
                    id=key.id,
                    store_id=key.store_id,
                    digest=key.digest.hex(),
                    scopes="+".join(sorted(key.scopes)),
                    created_at=key.created_at or utcnow(),
                    revoked_at=utcnow() if key.revoked else None,
                    permissions=None if key.permissions is None else " ".join(key.permissions),
                )
            )

    async def keys(self, store_id: str) -> list[StoreKey]:
        """The keys of a store, revoked ones included, oldest first."""
        async with self._db.read() as conn:
            rows = await conn.execute(
                select(store_keys)
                .where(store_keys.c.store_id == store_id)
                .order_by(store_keys.c.created_at, store_keys.c.id)
            )
            return [_key(r) for r in rows.mappings()]

    async def revoke_key(self, store_id: str, key_id: str) -> bool:
        """Revoke that store's key (a revoked one keeps its first ``revoked_at``).

        False when the store has no key of that id (another store's key included).
        """
        mine = (store_keys.c.id == key_id) & (store_keys.c.store_id == store_id)
        async with self._db.write() as conn:
            await conn.execute(
                update(store_keys)
                .where(mine & store_keys.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
            found = (await conn.execute(select(store_keys.c.id).where(mine))).first()
        return found is not None

    async def active_keys(self) -> list[StoreKey]:
        """Keys that may call the API: not revoked, of enabled stores."""
        query = (
            select(store_keys)
            .join(stores, stores.c.id == store_keys.c.store_id)
            .where(store_keys.c.revoked_at.is_(None), stores.c.enabled)
            .order_by(store_keys.c.created_at, store_keys.c.id)
        )
        async with self._db.read() as conn:
            rows = await conn.execute(query)
            return [_key(r) for r in rows.mappings()]
