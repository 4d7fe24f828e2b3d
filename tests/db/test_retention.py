"""Retention: finished callback events and expired idempotency keys go away, nothing else."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, insert, select, update

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.idempotency import IdempotencyStore
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.retention import RetentionStore
from xmrgate.adapters.store.tables import events, idempotency_keys, payment_requests, transfers
from xmrgate.config import Settings

DAY = 24 * 3600.0


def _event(request_id: int, n: int) -> dict[str, Any]:
    return {
        "id": f"00000000-0000-0000-0000-{n:012d}",
        "request_id": request_id,
        "kind": "transfer.confirmed",
        "tx_hash": f"{n:064x}",
        "callback_url": "https://shop.example/cb",
        "payload": "{}",
    }


async def _count(db: Database, table: Any) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar() or 0)


def test_prune_deletes_old_finished_events_and_expired_keys(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        request = await PaymentStore(db).create(
            address="8Abc",
            subaddr_index=1,
            amount=1,
            description="",
            callback_url="https://shop.example/cb",
            return_url=None,
        )
        async with db.write() as conn:
            await insert_events(conn, [_event(request.id, n) for n in range(1, 7)])
            old = utcnow() - timedelta(days=91)
            recent = utcnow() - timedelta(days=89)
            # 1: delivered long ago, 2: failed long ago, 3: pending long ago (kept),
            # 4: delivered recently (kept), 5-6: pending now (kept).
            for n, status, created in [
                (1, "delivered", old),
                (2, "failed", old),
                (3, "pending", old),
                (4, "delivered", recent),
            ]:
                await conn.execute(
                    update(events)
                    .where(events.c.id == _event(request.id, n)["id"])
                    .values(status=status, created_at=created)
                )
        keys = IdempotencyStore(db, ttl=60)
        await keys.claim("receive", "expired", "h")
        await keys.claim("receive", "live", "h")
        async with db.write() as conn:
            await conn.execute(
                update(idempotency_keys)
                .where(idempotency_keys.c.key == "expired")
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
        pruned = await RetentionStore(db, retention=90 * DAY).prune()
        assert (pruned.events, pruned.idempotency_keys) == (2, 1)
        async with db.read() as conn:
            left = {r[0] for r in await conn.execute(select(events.c.id))}
        assert left == {_event(request.id, n)["id"] for n in (3, 4, 5, 6)}
        assert await _count(db, idempotency_keys) == 1
        assert await _count(db, payment_requests) == 1
        again = await RetentionStore(db, retention=90 * DAY).prune()
        assert (again.events, again.idempotency_keys, again.orphan_transfers) == (0, 0, 0)

    on_database(scenario)


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
        "state": "confirmed",
        "updated_at": utcnow(),
    }


def test_prune_deletes_transfers_whose_request_is_gone(on_database: Any) -> None:
    """A transfer left without its request (an older version's delete, a manual edit:
    the foreign key's cascade prevents new ones) is pruned; a live request's stays."""

    async def scenario(db: Database) -> None:
        request = await PaymentStore(db).create(
            address="8Live",
            subaddr_index=1,
            amount=1,
            description="",
            callback_url=None,
            return_url=None,
        )
        # Write the orphan with the foreign key not enforced, as an older schema allowed.
        async with db.engine.connect() as conn:
            if db.is_sqlite:
                await conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            else:
                await conn.exec_driver_sql("SET session_replication_role = replica")
            await conn.execute(insert(transfers), [_transfer(1, request.id + 99)])
            await conn.commit()
            await conn.exec_driver_sql(
                "PRAGMA foreign_keys=ON" if db.is_sqlite else "RESET session_replication_role"
            )
        async with db.write() as conn:
            await conn.execute(insert(transfers), [_transfer(2, request.id)])
        pruned = await RetentionStore(db, retention=90 * DAY).prune()
        assert pruned.orphan_transfers == 1
        async with db.read() as conn:
            left = [r[0] for r in await conn.execute(select(transfers.c.tx_hash))]
        assert left == [f"{2:064x}"]

    on_database(scenario)


def test_the_default_retention_is_90_days() -> None:
    """--retention's default, the one the container hands to the store."""
    assert Settings(sqlite=":memory:").retention == 90 * DAY
