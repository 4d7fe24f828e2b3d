"""Retention reads the whole transfer history at most once per process.

The orphan sweep (``DELETE FROM transfers WHERE request_id NOT IN (...)``) is a full
read of ``transfers``: 250 ms at 1M transfers on PostgreSQL (``bench/scale.py``), and
on SQLite the write lock is held meanwhile. Orphans only come from an older version
(the foreign key's cascade prevents new ones), so the sweep runs on the first pass
after a start; the hourly passes after it touch only events and idempotency keys.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, insert, select

from tests.db.support import new_request
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.retention import RetentionStore
from xmrgate.adapters.store.tables import transfers

DAY = 24 * 3600.0


def _transfer(tx: int, request_id: int) -> dict[str, Any]:
    return {
        "tx_hash": f"{tx:064x}",
        "subaddr_index": 1,
        "request_id": request_id,
        "amount": 1,
        "fee": 0,
        "height": 10,
        "timestamp": 0,
        "unlock_time": 0,
        "double_spend_seen": False,
        "state": "unlocked",
        "updated_at": utcnow(),
    }


async def _orphan(db: Database, tx: int, request_id: int) -> None:
    """A transfer of a request that does not exist, written with the foreign keys off."""
    async with db.engine.connect() as conn:
        if db.is_sqlite:
            await conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
        else:
            await conn.exec_driver_sql("SET session_replication_role = replica")
        await conn.execute(insert(transfers), [_transfer(tx, request_id)])
        await conn.commit()
        await conn.exec_driver_sql(
            "PRAGMA foreign_keys=ON" if db.is_sqlite else "RESET session_replication_role"
        )


def test_only_the_first_pass_of_a_process_reads_the_transfers(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        live = await new_request(db, 1)
        async with db.write() as conn:
            await conn.execute(insert(transfers), [_transfer(1, live.id)])
        await _orphan(db, 2, live.id + 99)
        statements: list[str] = []

        def seen(_c: Any, _cur: Any, statement: str, *_a: Any) -> None:
            statements.append(statement)

        event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
        store = RetentionStore(db, retention=90 * DAY)
        first = await store.prune()
        assert first.orphan_transfers == 1
        assert any("transfers" in s for s in statements), statements
        # An orphan written behind the store's back now waits for the next start.
        await _orphan(db, 3, live.id + 98)
        statements.clear()
        for _ in range(3):
            assert (await store.prune()).orphan_transfers == 0
        assert not any("transfers" in s for s in statements), statements
        event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
        restarted = await RetentionStore(db, retention=90 * DAY).prune()
        assert restarted.orphan_transfers == 1
        async with db.read() as conn:
            left = [r[0] for r in await conn.execute(select(transfers.c.tx_hash))]
        assert left == [f"{1:064x}"]

    on_database(scenario)
