"""Migration 0019 on SQLite and PostgreSQL: a store's default speed policy
(``stores.speed_policy``), ``MediumSpeed`` for the rows the migration found (what their
Greenfield invoices needed before), kept as BTCPay's name; the downgrade drops it."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import command
from sqlalchemy import Connection, inspect, text

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.schema_upgrade import alembic_config
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.domain.stores import DEFAULT_STORE, Store


def test_speed_policy_default_round_trip_and_update(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[Store | None, Store, Store, Store, list[Any]]:
        repo = SqlStores(db)
        default = await repo.get(DEFAULT_STORE)
        plain = await repo.insert(Store(id="plain", name="Plain", account_index=1))
        slow = await repo.insert(
            Store(id="slow", name="Slow", account_index=2, speed_policy="LowSpeed")
        )
        changed = await repo.update(slow.with_changes(speed_policy="HighSpeed"))
        async with db.read() as conn:
            query = text("SELECT id, speed_policy FROM stores ORDER BY id")
            stored = [tuple(r) for r in await conn.execute(query)]
        return default, plain, slow, changed, stored

    default, plain, slow, changed, stored = on_database(scenario)
    # The row 0008 inserted gets the server default: its invoices keep needing 1.
    assert default is not None and default.speed_policy == "MediumSpeed"
    assert plain.speed_policy == "MediumSpeed"
    assert slow.speed_policy == "LowSpeed"
    assert changed.speed_policy == "HighSpeed"
    assert changed.public()["speed_policy"] == "HighSpeed"
    # Kept as BTCPay's name, plain text.
    assert stored == [("default", "MediumSpeed"), ("plain", "MediumSpeed"), ("slow", "HighSpeed")]


def _at_0018_with_a_store(conn: Connection) -> None:
    if conn.dialect.name == "sqlite":  # as Database.migrate() does (0007 rebuilds events)
        conn.exec_driver_sql("PRAGMA foreign_keys = OFF")
    command.upgrade(alembic_config(conn), "0018")
    conn.execute(
        text(
            "INSERT INTO stores (id, name, account_index, enabled, created_at)"
            " VALUES ('old', 'Old shop', 7, true, :t)"
        ),
        {"t": utcnow()},
    )


def _columns(conn: Connection) -> list[str]:
    return [column["name"] for column in inspect(conn).get_columns("stores")]


def test_upgrade_gives_existing_stores_medium_speed_and_downgrade_drops_it(
    database_url: str,
) -> None:
    async def main() -> dict[str, Any]:
        db = Database(database_url)
        try:
            async with db.engine.begin() as conn:
                await conn.run_sync(_at_0018_with_a_store)
            await db.migrate()
            got: dict[str, Any] = {"up": await SqlStores(db).all()}
            async with db.engine.begin() as conn:
                await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0018"))
                got["columns"] = await conn.run_sync(_columns)
                got["rows"] = [
                    tuple(r) for r in await conn.execute(text("SELECT id FROM stores ORDER BY id"))
                ]
            await db.migrate()  # and up again, as the next start does
            got["again"] = await SqlStores(db).get("old")
            return got
        finally:
            await db.dispose()

    got = asyncio.run(main())
    assert {s.id: s.speed_policy for s in got["up"]} == {
        "default": "MediumSpeed",
        "old": "MediumSpeed",
    }
    assert "speed_policy" not in got["columns"] and "pos_confirmations" in got["columns"]
    assert got["rows"] == [("default",), ("old",)]
    assert got["again"] is not None and got["again"].speed_policy == "MediumSpeed"
