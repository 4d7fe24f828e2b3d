"""The feed's ``seq`` is never handed out twice, on SQLite and PostgreSQL.

``GET /events?after=<seq>`` misses nothing only if a new event never gets the seq of
one that was deleted: on SQLite that takes AUTOINCREMENT (migration 0007), whose
table rebuild must keep every event, its seq and the ``callback_tries`` rows, which
``Database.migrate()`` ensures by running it with foreign keys off.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text, update

from tests.db.support import new_request
from xmrgate.adapters.store import schema_upgrade
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.listing import SqlListing
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.retention import RetentionStore
from xmrgate.adapters.store.schema_revision import MIGRATIONS_DIR
from xmrgate.adapters.store.schema_upgrade import alembic_config
from xmrgate.adapters.store.tables import events
from xmrgate.domain.errors import DatabaseFault

DAY = 24 * 3600.0


def _event(request_id: int, n: int, *, callback: bool = True) -> dict[str, Any]:
    """An event row as the sync tick hands it to ``insert_events``."""
    return {
        "id": f"00000000-0000-0000-0000-{n:012d}",
        "request_id": request_id,
        "kind": "transfer.confirmed",
        "tx_hash": f"{n:064x}",
        "callback_url": "https://shop.example/cb" if callback else None,
        "payload": "{}",
    }


async def _add(db: Database, rows: list[dict[str, Any]]) -> None:
    async with db.write() as conn:
        await insert_events(conn, rows)


async def _forget_newest(db: Database, how: str, request: Any, newest_id: str) -> None:
    """Delete the newest event: with its request (DELETE /receive) or by retention."""
    if how == "delete_request":
        assert await PaymentStore(db).delete(request.address)
        return
    async with db.write() as conn:
        await conn.execute(
            update(events)
            .where(events.c.id == newest_id)
            .values(status="delivered", created_at=utcnow() - timedelta(days=91))
        )
    pruned = await RetentionStore(db, retention=90 * DAY).prune()
    assert pruned.events == 1


@pytest.mark.parametrize("how", ["delete_request", "retention"])
def test_a_deleted_newest_seq_is_never_handed_out_again(on_database: Any, how: str) -> None:
    """Events of A and B; B's newest is deleted; the next event's seq is above every one
    handed out before, and the feed after the highest seen returns it."""

    async def scenario(db: Database) -> None:
        a, b = await new_request(db, 1, prefix="8Seq"), await new_request(db, 2, prefix="8Seq")
        await _add(db, [_event(a.id, 1), _event(b.id, 2, callback=False)])
        await _add(db, [_event(a.id, 3), _event(b.id, 4)])
        feed = SqlListing(db)
        seen = [f.seq for f in await feed.after(0, 100)]
        assert len(seen) == 4 and seen == sorted(seen)
        await _forget_newest(db, how, b, _event(b.id, 4)["id"])
        assert max(f.seq for f in await feed.after(0, 100)) < seen[-1]
        await _add(db, [_event(a.id, 5)])
        new = await feed.after(seen[-1], 100)
        assert len(new) == 1 and new[0].seq > max(seen)
        assert new[0].address == a.address

    on_database(scenario)


# What the tests put into a database at revision 0006: two requests, events with gaps
# in seq, callback tries of two of them.
_REQUESTS = [(1, "8Old1"), (2, "8Old2")]
_EVENTS = [(3, 1), (7, 1), (12, 2)]  # (seq, request id)
_TRIES = [(1, 7), (2, 12), (3, 12)]  # (id, event seq)


def _fill_0006(conn: Connection) -> None:
    """Bring an empty SQLite file to revision 0006 and store the rows above."""
    command.upgrade(alembic_config(conn), "0006")
    now = utcnow()
    for request_id, address in _REQUESTS:
        conn.execute(
            text(
                "INSERT INTO payment_requests (id, address, subaddr_index, amount, description,"
                " callback_url, created_at)"
                " VALUES (:i, :a, :i, 100, '', 'https://s.example/cb', :t)"
            ),
            {"i": request_id, "a": address, "t": now},
        )
    for seq, request_id in _EVENTS:
        conn.execute(
            text(
                "INSERT INTO events (seq, id, request_id, kind, tx_hash, callback_url, payload,"
                " status, attempts, created_at) VALUES (:s, :u, :r, 'transfer.pool', '',"
                " 'https://s.example/cb', '{}', 'pending', 1, :t)"
            ),
            {"s": seq, "u": f"uuid-{seq}", "r": request_id, "t": now},
        )
    for try_id, seq in _TRIES:
        conn.execute(
            text(
                "INSERT INTO callback_tries (id, event_seq, attempted_at, delivered, status_code)"
                " VALUES (:i, :s, :t, 0, 500)"
            ),
            {"i": try_id, "s": seq, "t": now},
        )


def _snapshot(conn: Connection) -> dict[str, Any]:
    """Every row of events and callback_tries, the indexes, and the schema's details."""

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in conn.exec_driver_sql(sql)]

    return {
        "events": rows("SELECT * FROM events ORDER BY seq"),
        "tries": rows("SELECT * FROM callback_tries ORDER BY id"),
        "indexes": rows(
            "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name"
        ),
        "events_ddl": conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE name = 'events'"
        ).scalar_one(),
        "sequence": rows("SELECT seq FROM sqlite_sequence WHERE name = 'events'")
        if conn.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'"
        ).first()
        else [],
        "revision": conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar(),
        "tables": rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"),
    }


async def _state(db: Database) -> tuple[dict[str, Any], int]:
    """The snapshot, and ``PRAGMA foreign_keys`` of a connection from the pool."""
    async with db.read() as conn:
        snapshot = await conn.run_sync(_snapshot)
        enabled = (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar()
    return snapshot, int(enabled or 0)


def _definitions(ddl: str) -> set[str]:
    """The columns and constraints of a CREATE TABLE (in any order), the primary key of
    seq written as a column constraint either way, AUTOINCREMENT left out."""
    body = ddl[ddl.index("(") + 1 : ddl.rindex(")")]
    # Split at the commas outside parentheses (a column SQLite's ADD COLUMN appended sits
    # on the line of the one before it).
    parts: set[str] = set()
    depth, start = 0, 0
    for i, char in enumerate(body + ","):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.add(" ".join(body[start:i].split()))
            start = i + 1
    parts -= {""}
    if "PRIMARY KEY (seq)" in parts:
        parts = (parts - {"PRIMARY KEY (seq)", "seq INTEGER NOT NULL"}) | {"seq PRIMARY KEY"}
    if "seq INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT" in parts:
        parts.remove("seq INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT")
        parts.add("seq PRIMARY KEY")
    return parts


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_upgrade_from_0006_keeps_events_seqs_and_callback_tries(database_url: str) -> None:
    """0006 -> head on a file with events and tries: every row and seq kept, AUTOINCREMENT
    on, foreign keys on again; then a deleted max seq is not handed out again."""

    async def main() -> None:
        db = Database(database_url, pool_size=1, max_overflow=0)
        try:
            async with db.engine.begin() as conn:
                await conn.run_sync(_fill_0006)
            before, _ = await _state(db)
            assert "AUTOINCREMENT" not in before["events_ddl"]
            await db.migrate()
            after, foreign_keys = await _state(db)
            assert foreign_keys == 1
            assert after["revision"] == ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
            assert "AUTOINCREMENT" in after["events_ddl"]
            # Revision 0008 appends the store (the default one) to every event, 0012 the
            # receipt (none: every old event is a request's), 0018 the Greenfield webhook
            # (none: every old event is a callback).
            assert [row[:-3] for row in after["events"]] == before["events"]
            assert {row[-3] for row in after["events"]} == {"default"}
            assert {row[-2] for row in after["events"]} == {None}
            assert {row[-1] for row in after["events"]} == {None}
            assert [row[0] for row in after["events"]] == [seq for seq, _ in _EVENTS]
            assert after["tries"] == before["tries"] and len(after["tries"]) == len(_TRIES)

            # The indexes of the two tables 0007 rebuilt, less those 0008 and 0012 add
            # (0008 rebuilds other tables, whose automatic index names change).
            def rebuilt_indexes(found: list[Any]) -> list[Any]:
                tables = ("events", "callback_tries")
                added = ("ix_events_store_seq", "ix_events_receipt_id", "ix_events_webhook_id")
                return [i for i in found if i[1] in tables and i[0] not in added]

            assert rebuilt_indexes(after["indexes"]) == rebuilt_indexes(before["indexes"])
            # The table was rebuilt with its constraints: only the seq column changed, and
            # what 0008 (store_id) and 0012 (request_id nullable, receipt_id) changed.
            rebuilt = _definitions(after["events_ddl"])
            assert "request_id INTEGER" in rebuilt
            assert "receipt_id INTEGER" in rebuilt
            assert (
                "CONSTRAINT fk_events_receipt FOREIGN KEY(receipt_id) REFERENCES"
                " unmatched_receipts (id) ON DELETE CASCADE"
            ) in rebuilt
            rebuilt -= {
                "webhook_id VARCHAR(32)",
                "store_id VARCHAR(32) DEFAULT 'default' NOT NULL",
                "request_id INTEGER",
                "receipt_id INTEGER",
                "CONSTRAINT fk_events_receipt FOREIGN KEY(receipt_id) REFERENCES"
                " unmatched_receipts (id) ON DELETE CASCADE",
            }
            assert rebuilt | {"request_id INTEGER NOT NULL"} == _definitions(before["events_ddl"])
            assert "FOREIGN KEY(request_id) REFERENCES payment_requests (id) ON DELETE CASCADE" in (
                _definitions(after["events_ddl"])
            )
            assert after["sequence"] == [(12,)]  # starts above the highest seq copied
            assert "_alembic_tmp_events" not in {t for (t,) in after["tables"]}
            # Foreign keys are on: deleting request 2 cascades to event 12 and its tries.
            assert await PaymentStore(db).delete("8Old2")
            left, _ = await _state(db)
            assert [row[0] for row in left["events"]] == [3, 7]
            assert [row[0] for row in left["tries"]] == [1]
            await _add(db, [_event(1, 13)])
            assert [f.seq for f in await SqlListing(db).after(7, 10)] == [13]
        finally:
            await db.dispose()

    asyncio.run(main())


def _raising_upgrade(conn: Connection) -> None:
    """The real upgrade, then a failure: all of it must be rolled back."""
    command.upgrade(alembic_config(conn), "head")
    raise RuntimeError("boom")


def _breaking_upgrade(conn: Connection) -> None:
    """The real upgrade, then a lost parent row (possible only with foreign keys off)."""
    command.upgrade(alembic_config(conn), "head")
    conn.exec_driver_sql("DELETE FROM events WHERE seq = 7")


@pytest.mark.parametrize(
    ("upgrade", "error"),
    [(_raising_upgrade, RuntimeError), (_breaking_upgrade, DatabaseFault)],
    ids=["raises", "breaks_a_reference"],
)
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_failed_sqlite_migration_is_rolled_back_with_foreign_keys_on_again(
    database_url: str, monkeypatch: pytest.MonkeyPatch, upgrade: Any, error: type[Exception]
) -> None:
    """An upgrade that fails or leaves a dangling reference changes nothing (DDL too),
    and the one pooled connection has foreign keys on again."""

    async def main() -> None:
        db = Database(database_url, pool_size=1, max_overflow=0)
        try:
            async with db.engine.begin() as conn:
                await conn.run_sync(_fill_0006)
            before, _ = await _state(db)
            monkeypatch.setattr(schema_upgrade, "upgrade_to_head", upgrade)
            with pytest.raises(error):
                await db.migrate()
            after, foreign_keys = await _state(db)
            assert foreign_keys == 1
            assert after == before
        finally:
            await db.dispose()

    asyncio.run(main())
