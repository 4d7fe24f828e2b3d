"""One wallet's failed sync ticks in a row (``core.sync_health.SyncHealthStore``)."""

from __future__ import annotations

from sqlalchemy import delete, insert, select, update

from xmrgate.adapters.store.db import Database, as_utc, utcnow
from xmrgate.adapters.store.tables import stores, sync_health
from xmrgate.core.sync_health import SyncTrouble


class SqlSyncHealth:
    """The ``sync_health`` row of one wallet (``sync_id``: its ``sync_state`` id)."""

    def __init__(self, db: Database, sync_id: int) -> None:
        self._db = db
        self._sync_id = sync_id

    async def failed(self, error: str) -> None:
        """One more failed tick: count it on the row, or make the row."""
        now = utcnow()
        row = sync_health.c.sync_id == self._sync_id
        async with self._db.write() as conn:
            counted = await conn.execute(
                update(sync_health)
                .where(row)
                .values(failures=sync_health.c.failures + 1, last_error=error, updated_at=now)
            )
            if counted.rowcount == 0:
                await conn.execute(
                    insert(sync_health).values(
                        sync_id=self._sync_id,
                        failures=1,
                        last_error=error,
                        failing_since=now,
                        updated_at=now,
                    )
                )

    async def recovered(self) -> None:
        """A tick ran: the wallet is not failing."""
        async with self._db.write() as conn:
            await conn.execute(delete(sync_health).where(sync_health.c.sync_id == self._sync_id))


MAIN_WALLET_NAME = "the main wallet"


def wallet_name(store_id: str | None) -> str:
    """How /health names a wallet: the main one, or a store's own."""
    return MAIN_WALLET_NAME if store_id is None else f"the wallet of store '{store_id}'"


class SqlSyncTroubles:
    """The failing wallets a /health names: one wallet's (``sync_id``), or every one."""

    def __init__(self, db: Database, sync_id: int | None = None) -> None:
        self._db = db
        self._sync_id = sync_id

    async def troubles(self) -> list[SyncTrouble]:
        """The wallets with failed ticks in a row, most failures first (one read)."""
        query = select(
            sync_health.c.failures,
            sync_health.c.last_error,
            sync_health.c.failing_since,
            stores.c.id,
        ).select_from(sync_health.outerjoin(stores, stores.c.wallet_no == sync_health.c.sync_id))
        if self._sync_id is not None:
            query = query.where(sync_health.c.sync_id == self._sync_id)
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(query)).all()
        found = [
            SyncTrouble(
                wallet=wallet_name(None if store is None else str(store)),
                failures=int(failures),
                error=str(error),
                since=as_utc(since),
            )
            for failures, error, since, store in rows
        ]
        return sorted(found, key=lambda t: -t.failures)
