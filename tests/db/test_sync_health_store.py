"""``SqlSyncHealth`` and ``SqlSyncTroubles`` on SQLite and PostgreSQL: failed ticks in a
row counted per wallet, cleared by a tick that runs, and named for /health."""

from __future__ import annotations

from typing import Any

from tests.db.test_store_accounts import OWN_WALLET_STORE
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.payments import SYNC_STATE_ID
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.sync_health import SqlSyncHealth, SqlSyncTroubles
from xmrgate.core.sync_health import SyncTrouble


def test_failures_are_counted_per_wallet_named_and_cleared(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[list[SyncTrouble], ...]:
        await SqlStores(db).insert(OWN_WALLET_STORE)
        main, apart = SqlSyncHealth(db, SYNC_STATE_ID), SqlSyncHealth(db, 2)
        for n in range(4):
            await main.failed(f"TypeError: tick {n}")
        await apart.failed("wallet-rpc refused the connection")
        everyone = await SqlSyncTroubles(db).troubles()
        only_apart = await SqlSyncTroubles(db, 2).troubles()
        await main.recovered()
        await main.recovered()  # nothing to clear: no error
        after = await SqlSyncTroubles(db).troubles()
        return everyone, only_apart, after

    everyone, only_apart, after = on_database(scenario)
    assert [(t.wallet, t.failures, t.error) for t in everyone] == [
        ("the main wallet", 4, "TypeError: tick 3"),
        ("the wallet of store 'apart'", 1, "wallet-rpc refused the connection"),
    ]
    assert everyone[0].since.tzinfo is not None
    assert [t.wallet for t in only_apart] == ["the wallet of store 'apart'"]
    assert [t.wallet for t in after] == ["the wallet of store 'apart'"]
