"""Revision 0008 (stores): an existing database becomes the default store, nothing lost.

A database at revision 0007 with a request, its transfers, its events with a callback
try, a payout and a pooled subaddress is upgraded the way the product does it
(``Database.migrate()``). Every row is kept and belongs to ``default``; the foreign keys
still hold (on SQLite the rebuilt ``payment_requests`` must not cascade its transfers
away); and afterwards one transaction may pay the same minor index of two stores.
"""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import command
from sqlalchemy import Connection, insert, text

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.schema_upgrade import alembic_config
from xmrgate.adapters.store.tables import payment_requests, stores, transfers

TX = "ab" * 32


def _fill_0007(conn: Connection) -> None:
    if conn.dialect.name == "sqlite":  # as Database.migrate() does (0007 rebuilds events)
        conn.exec_driver_sql("PRAGMA foreign_keys = OFF")
    command.upgrade(alembic_config(conn), "0007")
    now = utcnow()
    conn.execute(
        text(
            "INSERT INTO payment_requests (address, subaddr_index, amount, description,"
            " created_at, status) VALUES ('8Old1', 3, 100, 'old', :t, 'waiting')"
        ),
        {"t": now},
    )
    for index, tx in enumerate([TX, "cd" * 32]):
        conn.execute(
            text(
                "INSERT INTO transfers (tx_hash, subaddr_index, request_id, amount, fee, height,"
                " timestamp, unlock_time, double_spend_seen, state, updated_at) VALUES"
                " (:tx, 3, 1, :a, 1, 10, 1700000000, 0, false, 'unlocked', :t)"
            ),
            {"tx": tx, "a": 40 + index, "t": now},
        )
    conn.execute(
        text(
            "INSERT INTO events (id, request_id, kind, tx_hash, callback_url, payload, status,"
            " attempts, created_at) VALUES ('e-1', 1, 'transfer.confirmed', :tx,"
            " 'https://s.example/cb', '{}', 'delivered', 1, :t)"
        ),
        {"tx": TX, "t": now},
    )
    seq = conn.execute(text("SELECT seq FROM events")).scalar_one()
    conn.execute(
        text(
            "INSERT INTO callback_tries (event_seq, attempted_at, delivered, status_code)"
            " VALUES (:s, :t, true, 200)"
        ),
        {"s": seq, "t": now},
    )
    conn.execute(
        text(
            "INSERT INTO payouts (state, destinations, amount, created_at, updated_at)"
            " VALUES ('sent', '[]', 5, :t, :t)"
        ),
        {"t": now},
    )
    conn.execute(
        text(
            "INSERT INTO address_pool (subaddr_index, address, created_at) VALUES (9, '8Pool9', :t)"
        ),
        {"t": now},
    )


def _rows(conn: Connection) -> dict[str, Any]:
    def all_of(sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in conn.exec_driver_sql(sql)]

    return {
        "requests": all_of("SELECT id, address, subaddr_index, store_id FROM payment_requests"),
        "transfers": all_of("SELECT tx_hash, request_id, amount FROM transfers ORDER BY amount"),
        "events": all_of("SELECT id, store_id FROM events"),
        "tries": all_of("SELECT status_code FROM callback_tries"),
        "payouts": all_of("SELECT amount, store_id FROM payouts"),
        "pool": all_of("SELECT subaddr_index, address, store_id FROM address_pool"),
        "stores": all_of("SELECT id, account_index, enabled FROM stores"),
    }


def test_an_existing_database_becomes_the_default_store(database_url: str) -> None:
    async def main() -> dict[str, Any]:
        db = Database(database_url)
        try:
            async with db.engine.begin() as conn:
                await conn.run_sync(_fill_0007)
            await db.migrate()
            async with db.read() as conn:
                found = await conn.run_sync(_rows)
            # After: a second store, and one transaction paying index 3 of both stores.
            async with db.write() as conn:
                await conn.execute(
                    insert(stores).values(
                        id="shop-b", name="B", account_index=1, enabled=True, created_at=utcnow()
                    )
                )
                other = (
                    await conn.execute(
                        insert(payment_requests)
                        .values(
                            address="8New1",
                            subaddr_index=3,
                            amount=1,
                            description="",
                            created_at=utcnow(),
                            store_id="shop-b",
                        )
                        .returning(payment_requests.c.id)
                    )
                ).scalar_one()
                await conn.execute(
                    insert(transfers).values(
                        tx_hash=TX,
                        subaddr_index=3,
                        request_id=other,
                        amount=7,
                        fee=1,
                        height=11,
                        timestamp=1_700_000_000,
                        unlock_time=0,
                        double_spend_seen=False,
                        state="confirmed",
                        updated_at=utcnow(),
                    )
                )
            async with db.read() as conn:
                found["shared_tx"] = (
                    await conn.execute(
                        text("SELECT count(*) FROM transfers WHERE tx_hash = :tx"), {"tx": TX}
                    )
                ).scalar_one()
            return found
        finally:
            await db.dispose()

    found = asyncio.run(main())
    assert found["stores"] == [("default", 0, True)]
    assert found["requests"] == [(1, "8Old1", 3, "default")]
    assert found["transfers"] == [(TX, 1, 40), ("cd" * 32, 1, 41)]
    assert found["events"] == [("e-1", "default")]
    assert found["tries"] == [(200,)]
    assert found["payouts"] == [(5, "default")]
    assert found["pool"] == [(9, "8Pool9", "default")]
    assert found["shared_tx"] == 2
