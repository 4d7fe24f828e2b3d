"""Which store each account of the main wallet belongs to (the sync tick's map), and
the highest subaddress index handed out in each account (the lookahead's check)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.tables import address_pool, payment_requests, stores


async def store_accounts(conn: AsyncConnection) -> dict[int, str]:
    """Account index of the main wallet -> store id, disabled stores included (their
    payments still count); stores on their own wallet are not the main wallet's."""
    rows = await conn.execute(
        select(stores.c.account_index, stores.c.id).where(stores.c.account_index.is_not(None))
    )
    return {int(account): str(store) for account, store in rows}


async def own_wallet_stores(conn: AsyncConnection) -> list[str]:
    """The stores on a wallet-rpc of their own."""
    rows = await conn.execute(select(stores.c.id).where(stores.c.rpc_address.is_not(None)))
    return [str(store) for (store,) in rows]


class SqlStoreAccounts:
    """The accounts the stores use, and the highest index handed out in each."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def accounts(self) -> list[int]:
        """Every store's account (before each tick: one small read)."""
        async with self._db.read(autocommit=True) as conn:
            return sorted((await store_accounts(conn)).keys())

    async def highest_by_account(self) -> dict[int, int]:
        """Account -> the highest subaddress index in use or pooled in it (0: none).

        Only the stores on accounts of the main wallet: a store on a wallet-rpc of its
        own has no account of it (its ``account_index`` is NULL) and its lookahead is its
        own wallet's check. One statement; each max is read from the (store_id,
        subaddr_index) keys.
        """
        in_requests = (
            select(func.max(payment_requests.c.subaddr_index))
            .where(payment_requests.c.store_id == stores.c.id)
            .scalar_subquery()
        )
        in_pool = (
            select(func.max(address_pool.c.subaddr_index))
            .where(address_pool.c.store_id == stores.c.id)
            .scalar_subquery()
        )
        async with self._db.read(autocommit=True) as conn:
            rows = await conn.execute(
                select(stores.c.account_index, in_requests, in_pool).where(
                    stores.c.account_index.is_not(None)
                )
            )
            return {int(a): max(int(r or 0), int(p or 0)) for a, r, p in rows}
