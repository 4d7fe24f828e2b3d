"""Invoices in the store, on SQLite and PostgreSQL: expiry recorded and announced once by
the sync tick, every event stored for the feed (callbacks only where a URL was given),
the list's filters and cursor, and the status of requests made before migration 0004."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import select, text, update

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.listing import SqlListing
from xmrgate.adapters.store.outbox import OutboxStore
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.schema_upgrade import alembic_config
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.adapters.store.tables import events, payment_requests
from xmrgate.core.invoices import Invoices, ListQuery, decode_cursor
from xmrgate.core.sync import SyncEngine
from xmrgate.domain.invoice import InvoiceStatus

HEIGHT = 500


class FakeWallet:
    """A wallet whose incoming transfers the test sets (``get_transfers`` entries)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    async def refresh(self) -> None:
        return None

    async def get_height(self) -> int:
        return HEIGHT

    async def incoming_transfers(self, min_height: int, max_height: int) -> list[dict[str, Any]]:
        return list(self.entries)


def pool_entry(index: int, amount: int, tx: str) -> dict[str, Any]:
    """A pool transfer to subaddress ``index`` as wallet-rpc lists it."""
    return {
        "txid": tx * 32,
        "subaddr_index": {"major": 0, "minor": index},
        "amount": amount,
        "fee": 1,
        "height": 0,
        "timestamp": int(datetime.now(UTC).timestamp()),
        "unlock_time": 0,
        "double_spend_seen": False,
        "type": "pool",
    }


async def make(
    db: Database, index: int, *, expires_at: datetime | None = None, callback: bool = False
) -> Any:
    return await PaymentStore(db).create(
        address=f"8Addr{index:05d}",
        subaddr_index=index,
        amount=100,
        description=f"order {index}",
        callback_url="https://shop.example/cb" if callback else None,
        return_url=None,
        expires_at=expires_at,
    )


async def stored_events(db: Database) -> list[Any]:
    async with db.read() as conn:
        return list((await conn.execute(select(events).order_by(events.c.seq))).mappings())


def engine(db: Database, wallet: FakeWallet) -> SyncEngine:
    return SyncEngine(SqlSyncStore(db), wallet, zero_conf=True, reorg_margin=10)


def test_expiry_is_recorded_and_announced_once(on_database: Any) -> None:
    """An open request past expires_at: status expired and one request.expired, once."""

    async def scenario(db: Database) -> None:
        past = utcnow() - timedelta(seconds=1)
        expiring = await make(db, 1, expires_at=past, callback=True)
        plain = await make(db, 2)  # no expires_in: never expires, no new event
        later = await make(db, 3, expires_at=utcnow() + timedelta(hours=1))
        wallet = FakeWallet()
        sync = engine(db, wallet)
        first = await sync.tick()
        assert first.events == 1
        await sync.tick()
        rows = await stored_events(db)
        assert [(r["kind"], r["request_id"], r["tx_hash"]) for r in rows] == [
            ("request.expired", expiring.id, "")
        ]
        body = json.loads(rows[0]["payload"])
        assert body["transaction"] is None
        assert (body["status"], body["event"], body["amount"]["due"]) == (
            "expired",
            body["event"],
            100,
        )
        assert body["expires_at"].endswith("Z")
        store = PaymentStore(db)
        assert (await store.get(expiring.address)).status == "expired"  # type: ignore[union-attr]
        assert (await store.get(plain.address)).status == "waiting"  # type: ignore[union-attr]
        assert (await store.get(later.address)).status == "waiting"  # type: ignore[union-attr]

    on_database(scenario)


def test_every_event_is_stored_and_only_callbacks_are_delivered(on_database: Any) -> None:
    """Events of a request without callback_url are in the feed, never claimed or listed."""

    async def scenario(db: Database) -> None:
        with_url = await make(db, 1, callback=True)
        without = await make(db, 2)
        wallet = FakeWallet()
        wallet.entries = [pool_entry(1, 40, "a"), pool_entry(2, 100, "b")]
        await engine(db, wallet).tick()
        rows = await stored_events(db)
        assert sorted((r["request_id"], r["status"]) for r in rows) == [
            (with_url.id, "pending"),
            (without.id, "no_callback"),
        ]
        outbox = OutboxStore(db)
        claimed = await outbox.claim_due("w", 10, 30)
        assert [e.request_id for e in claimed] == [with_url.id]
        assert await outbox.for_request(without.id) == []
        feed = await SqlListing(db).after(0, 10)
        assert [f.seq for f in feed] == sorted(r["seq"] for r in rows)
        by_address = {f.address: json.loads(f.payload) for f in feed}
        assert by_address[with_url.address]["status"] == "partial"
        assert by_address[with_url.address]["amount"]["due"] == 60
        assert by_address[without.address]["status"] == "paid"
        assert await SqlListing(db).after(feed[-1].seq, 10) == []
        assert [f.seq for f in await SqlListing(db).after(feed[0].seq, 10)] == [feed[1].seq]

    on_database(scenario)


# One process owns a SQLite file: several gateways share a PostgreSQL database only.
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_two_gateways_expire_each_request_once(migrated_database_url: str) -> None:
    """PostgreSQL, two processes' ticks at once: each expiry is recorded and announced once."""

    async def main() -> None:
        dbs = [Database(migrated_database_url), Database(migrated_database_url)]
        try:
            await dbs[0].migrate()
            past = utcnow() - timedelta(seconds=1)
            for index in range(1, 31):
                await make(dbs[0], index, expires_at=past)
            engines = [engine(db, FakeWallet()) for db in dbs]
            for _ in range(3):
                await asyncio.gather(*(e.tick() for e in engines))
            rows = await stored_events(dbs[0])
            assert sorted(r["request_id"] for r in rows) == list(range(1, 31))
        finally:
            for db in dbs:
                await db.dispose()

    asyncio.run(main())


def test_list_filters_and_pages(on_database: Any) -> None:
    """Newest first; status filters (expiry applied); created_after/before; cursor pages."""

    async def scenario(db: Database) -> None:
        rng = random.Random(7)
        base = datetime(2030, 1, 1, tzinfo=UTC)
        statuses = [s.value for s in InvoiceStatus if s is not InvoiceStatus.EXPIRED]
        now = utcnow()
        truth: list[tuple[datetime, int, str]] = []
        for index in range(1, 301):
            request = await make(db, index)
            # Some share a created_at: the cursor must order them by id.
            created = base + timedelta(seconds=rng.randrange(200))
            status = rng.choice(statuses)
            expires = now - timedelta(seconds=5) if index % 7 == 0 else None
            async with db.write() as conn:
                await conn.execute(
                    update(payment_requests)
                    .where(payment_requests.c.id == request.id)
                    .values(created_at=created, status=status, expires_at=expires)
                )
            shown = "expired" if expires and status in ("waiting", "partial") else status
            truth.append((created, request.id, shown))
        truth.sort(reverse=True)
        invoices = Invoices(SqlListing(db), SqlListing(db))

        async def walk(query: ListQuery) -> list[tuple[datetime, int, str]]:
            seen: list[tuple[datetime, int, str]] = []
            while True:
                page = await invoices.find(query)
                assert len(page.requests) <= query.limit
                seen += [
                    (
                        r.created_at,
                        r.id,
                        "expired"
                        if r.id % 7 == 0 and r.status in ("waiting", "partial")
                        else r.status,
                    )
                    for r in page.requests
                ]
                if page.next_cursor is None:
                    return seen
                query = ListQuery(
                    query.statuses,
                    query.created_after,
                    query.created_before,
                    query.limit,
                    decode_cursor(page.next_cursor),
                )

        assert await walk(ListQuery(limit=37)) == truth
        for wanted in ({"expired"}, {"waiting"}, {"paid", "complete"}, {"partial", "expired"}):
            query = ListQuery(frozenset(InvoiceStatus(s) for s in wanted), limit=23)
            assert await walk(query) == [t for t in truth if t[2] in wanted], wanted
        after, before = base + timedelta(seconds=50), base + timedelta(seconds=120)
        query = ListQuery(created_after=after, created_before=before, limit=500)
        assert await walk(query) == [t for t in truth if after < t[0] < before]

    on_database(scenario)


def test_migration_records_status_of_existing_requests(database_url: str) -> None:
    """Requests made before 0004 get the status their transfers give them; and back."""

    async def main() -> None:
        db = Database(database_url)
        try:
            async with db.engine.begin() as conn:
                await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0003"))
                now = utcnow()
                for i, amount in enumerate([100, 100, 100, 100, 0], start=1):
                    await conn.execute(
                        text(
                            "INSERT INTO payment_requests (address, subaddr_index, amount,"
                            " description, created_at) VALUES (:a, :i, :m, '', :t)"
                        ),
                        {"a": f"8A{i}", "i": i, "m": amount, "t": now},
                    )
                transfers = [(2, "pool", 40, False), (3, "confirmed", 100, False)]
                transfers += [(4, "unlocked", 100, False), (1, "pool", 100, True)]
                for request_id, state, amount, double_spend in transfers:
                    await conn.execute(
                        text(
                            "INSERT INTO transfers (tx_hash, subaddr_index, request_id, amount,"
                            " fee, height, timestamp, unlock_time, double_spend_seen, state,"
                            " updated_at) VALUES (:h, :i, :r, :m, 1, 5, 1, 0, :d, :s, :t)"
                        ),
                        {
                            "h": f"{request_id}" * 64,
                            "i": request_id,
                            "r": request_id,
                            "m": amount,
                            "d": double_spend,
                            "s": state,
                            "t": now,
                        },
                    )
            await db.migrate()
            async with db.read() as conn:
                rows = await conn.execute(
                    select(payment_requests.c.id, payment_requests.c.status).order_by(
                        payment_requests.c.id
                    )
                )
                found = [tuple(r) for r in rows]
            assert found == [
                (1, "waiting"),
                (2, "partial"),
                (3, "paid"),
                (4, "complete"),
                (5, "complete"),
            ]
            # And back: no copy of payment_requests, so its transfers survive.
            async with db.engine.begin() as conn:
                if db.is_sqlite:  # as Database.migrate() does: 0008 rebuilds tables
                    await conn.execute(text("PRAGMA foreign_keys = OFF"))
                await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0003"))
                left = (await conn.execute(text("SELECT COUNT(*) FROM transfers"))).scalar()
            assert left == 4
        finally:
            await db.dispose()

    asyncio.run(main())


def test_a_tick_that_only_changed_transfers_still_wakes_the_listeners(on_database: Any) -> None:
    """Without zero-conf a payment seen in the pool writes no event row, yet the tick
    changed a transfer: ``on_events`` wakes the Greenfield announcer, which announces
    InvoiceReceivedPayment then (it waited for its next round, and a block within it
    made BTCPay's order wrong: the payment announced Settled first)."""

    async def scenario(db: Database) -> None:
        await make(db, 1)
        wallet = FakeWallet()
        woken: list[int] = []
        sync = SyncEngine(
            SqlSyncStore(db),
            wallet,
            zero_conf=False,
            reorg_margin=10,
            on_events=lambda: woken.append(1),
        )
        await sync.tick()
        assert woken == []  # nothing changed: nobody woken
        wallet.entries = [pool_entry(1, 100, "a")]
        seen = await sync.tick()
        assert (seen.events, seen.changed) == (0, 1)
        assert woken == [1]
        await sync.tick()
        assert woken == [1]  # the same pool transfer again: no change, no wake-up

    on_database(scenario)
