"""The sync tick's window query: the right subaddresses, and an index range, not a full read.

The bug (``bench/scale.py``): written as ``state = 'pool' OR (state != 'gone' AND
height >= start)``, the query read the whole ``ix_transfers_state_height`` index on
PostgreSQL and the whole ``transfers`` table on SQLite on every tick, a cost growing
with every transfer ever stored. Listing the mined states makes it one index range
per state on both backends.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, text

from tests.db.support import new_request
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.tables import transfers
from xmrgate.adapters.store.tick_rows import request_ids_in_window, window_statement

START = 5_000
OLD = 2_000  # unlocked transfers below the window (the stored history)


def _transfer(n: int, index: int, request_id: int, state: str, height: int) -> dict[str, Any]:
    return {
        "tx_hash": f"{n:064x}",
        "subaddr_index": index,
        "request_id": request_id,
        "amount": 1,
        "fee": 1,
        "height": height,
        "timestamp": 1_700_000_000,
        "unlock_time": 0,
        "double_spend_seen": False,
        "state": state,
        "updated_at": datetime.now(UTC),
    }


async def _seed(db: Database) -> dict[int, int]:
    """Subaddress n has one transfer in the state and at the height listed here; the
    request id of each subaddress index."""
    cases = [
        (1, "pool", 0),  # in the pool: always in the window
        (2, "confirmed", START),  # mined at the window's start
        (3, "unlocked", START + 7),  # mined above it
        (4, "gone", START + 3),  # gone: never
        (5, "confirmed", START - 1),  # below the window
        (6, "unlocked", 10),
    ]
    rows = []
    ids = {}
    for index, state, height in cases:
        request = await new_request(db, index)
        ids[request.id] = index
        rows.append(_transfer(index, index, request.id, state, height))
    history = await new_request(db, 100)
    rows += [_transfer(1000 + n, 100, history.id, "unlocked", n % START) for n in range(OLD)]
    async with db.write() as conn:
        await conn.execute(insert(transfers), rows)
    async with db.engine.connect() as conn:
        await (await conn.execution_options(isolation_level="AUTOCOMMIT")).execute(text("ANALYZE"))
    return ids


def test_window_holds_pool_and_mined_transfers_from_start(on_database: Any) -> None:
    async def scenario(db: Database) -> set[int]:
        index_of = await _seed(db)
        async with db.read() as conn:
            return {index_of[i] for i in await request_ids_in_window(conn, START)}

    assert on_database(scenario) == {1, 2, 3}


def test_window_query_is_an_index_range_not_a_full_read(on_database: Any) -> None:
    async def scenario(db: Database) -> list[str]:
        await _seed(db)
        compiled = window_statement(START).compile(
            db.engine, compile_kwargs={"literal_binds": True}
        )
        async with db.write() as conn:
            if db.is_sqlite:
                rows = await conn.execute(text(f"EXPLAIN QUERY PLAN {compiled}"))
                return [str(r[3]) for r in rows]
            # Even when a scan is made dear, the old form could only read the whole
            # index (its only condition on it was "height >= n", the second column).
            await conn.execute(text("SET LOCAL enable_seqscan = off"))
            return [str(r[0]) for r in await conn.execute(text(f"EXPLAIN {compiled}"))]

    plan = on_database(scenario)
    text_plan = "\n".join(plan)
    assert not any(line.startswith("SCAN transfers") for line in plan), text_plan  # SQLite
    assert "Seq Scan" not in text_plan, text_plan
    conditions = [line for line in plan if "Index Cond" in line or "USING INDEX" in line]
    assert conditions, text_plan
    for line in conditions:
        assert "state" in line, text_plan
