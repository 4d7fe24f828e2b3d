"""Unmatched receipts in SQL, both databases: the tick records money no request owns
(with its event, and its index out of the pool, in the tick's one transaction), keeps it
in step with the chain, never credits it to a request made later, and the store's
repository lists, pages, dismisses once and scopes by store."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import insert, select

from tests.db.support import new_request
from xmrgate.adapters.store import unmatched_rows
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.listing import SqlListing
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.adapters.store.tables import address_pool, events, transfers
from xmrgate.adapters.store.unmatched import SqlUnmatched
from xmrgate.core.sync import SyncEngine
from xmrgate.core.unmatched import UnmatchedReceipts
from xmrgate.domain.errors import Conflict, DatabaseUnavailable, NotFound
from xmrgate.domain.unmatched import ReceiptStatus


class ChainWallet:
    """A wallet whose height and incoming transfers the test sets."""

    def __init__(self) -> None:
        self.height = 500
        self.entries: list[dict[str, Any]] = []

    async def refresh(self) -> None:
        return None

    async def get_height(self) -> int:
        return self.height

    async def incoming_transfers(self, min_height: int, max_height: int) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["type"] == "pool" or e["height"] >= min_height]


def entry(index: int, tx: str, height: int, amount: int = 7, kind: str = "in") -> dict[str, Any]:
    """A ``get_transfers`` entry to subaddress ``index`` of account 0."""
    return {
        "txid": tx * 64,
        "address": f"8Sub{index}",
        "subaddr_index": {"major": 0, "minor": index},
        "amount": amount,
        "fee": 1,
        "height": height,
        "timestamp": 1_800_000_000,
        "unlock_time": 0,
        "double_spend_seen": False,
        "type": kind,
    }


def engine(db: Database, wallet: ChainWallet) -> SyncEngine:
    return SyncEngine(SqlSyncStore(db), wallet, zero_conf=False, reorg_margin=5)


async def feed(db: Database) -> list[Any]:
    return await SqlListing(db, "default").after(0, 100)


def test_money_to_an_unknown_or_pooled_index_is_a_receipt_with_its_event(on_database: Any) -> None:
    """A transfer to a pooled index and one to an index nobody has: two receipts, two
    ``transfer.unmatched`` events in the feed with their addresses, the pooled index out
    of the pool; a request's own transfer is the request's; a block reward is nobody's."""

    async def scenario(db: Database) -> None:
        request = await new_request(db, 1)
        async with db.write() as conn:
            await conn.execute(
                insert(address_pool).values(
                    store_id="default", subaddr_index=2, address="8Sub2", created_at=utcnow()
                )
            )
        wallet = ChainWallet()
        sync = engine(db, wallet)
        await sync.tick()  # the first tick starts at the top
        wallet.height = 501
        wallet.entries = [
            entry(1, "a", 500),
            entry(2, "b", 500),
            entry(9, "c", 500, amount=11),
            entry(0, "d", 500, kind="block"),
        ]
        await sync.tick()
        receipts = await SqlUnmatched(db, "default").page(None, 10, None)
        assert sorted((r.address, r.transfer.amount) for r in receipts) == [
            ("8Sub2", 7),
            ("8Sub9", 11),
        ]
        assert {r.status for r in receipts} == {ReceiptStatus.OPEN}
        async with db.read() as conn:
            assert (await conn.execute(select(address_pool))).all() == []
            credited = (await conn.execute(select(transfers.c.request_id))).scalars().all()
        assert credited == [request.id]
        announced = [e for e in await feed(db) if e.kind == "transfer.unmatched"]
        assert sorted(e.address for e in announced) == ["8Sub2", "8Sub9"]
        bodies = [json.loads(e.payload)["unmatched"] for e in announced]
        assert {b["state"] for b in bodies} == {"confirmed"}
        assert sorted(b["id"] for b in bodies) == sorted(r.id for r in receipts)

        # Nothing new: nothing written, nothing announced again.
        assert (await sync.tick()).changed == 0
        assert len([e for e in await feed(db) if e.kind == "transfer.unmatched"]) == 2

    on_database(scenario)


def test_a_receipt_stays_a_receipt_when_a_request_takes_its_index_later(on_database: Any) -> None:
    """The pool handed out index 4 after money reached it: that money is never credited
    to the new request; a later payment to it is."""

    async def scenario(db: Database) -> None:
        wallet = ChainWallet()
        sync = engine(db, wallet)
        await sync.tick()
        wallet.height = 501
        wallet.entries = [entry(4, "e", 500)]
        await sync.tick()
        request = await new_request(db, 4)
        wallet.height = 502
        wallet.entries.append(entry(4, "f", 501, amount=100))
        await sync.tick()
        async with db.read() as conn:
            rows = (await conn.execute(select(transfers.c.tx_hash, transfers.c.request_id))).all()
        assert rows == [("f" * 64, request.id)]
        [receipt] = await SqlUnmatched(db, "default").page(None, 10, None)
        assert receipt.transfer.tx_hash == "e" * 64
        status = await PaymentStore(db).get(request.address)
        assert status is not None and status.status in ("paid", "complete"), status

    on_database(scenario)


def test_receipts_unlock_and_go_like_transfers(on_database: Any) -> None:
    """Confirmed, then unlocked 10 blocks on even after leaving the reorg margin (the
    window reaches back to a locked receipt); a receipt missing from its block's window
    is gone, and that is announced."""

    async def scenario(db: Database) -> None:
        wallet = ChainWallet()
        sync = engine(db, wallet)
        await sync.tick()
        wallet.height = 501
        wallet.entries = [entry(5, "g", 500), entry(6, "h", 500)]
        await sync.tick()
        wallet.height = 508  # still locked; then block 500 is below synced - margin
        await sync.tick()
        wallet.height = 511
        await sync.tick()
        states = {
            r.address: r.transfer.state.value
            for r in await SqlUnmatched(db, "default").page(None, 10, None)
        }
        assert states == {"8Sub5": "unlocked", "8Sub6": "unlocked"}

        wallet.entries = [entry(7, "i", 511)]
        wallet.height = 512
        await sync.tick()
        wallet.entries = []  # a reorg removed block 511
        wallet.height = 513
        await sync.tick()
        receipts = {r.address: r for r in await SqlUnmatched(db, "default").page(None, 10, None)}
        assert receipts["8Sub7"].transfer.state.value == "gone"
        kinds = [
            json.loads(e.payload)["unmatched"]["state"]
            for e in await feed(db)
            if e.address == "8Sub7"
        ]
        assert kinds == ["confirmed", "gone"]
        totals = await SqlUnmatched(db, "default").totals()
        assert (totals.count, totals.amount) == (2, 14)

    on_database(scenario)


def test_the_store_lists_pages_dismisses_once_and_sees_only_its_own(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        wallet = ChainWallet()
        sync = engine(db, wallet)
        await sync.tick()
        wallet.height = 501
        wallet.entries = [entry(i, chr(ord("j") + i), 500) for i in range(1, 6)]
        await sync.tick()
        receipts = UnmatchedReceipts(SqlUnmatched(db, "default"))
        first = await receipts.page(None, 2, None)
        assert len(first.receipts) == 2 and first.next_cursor and first.chain_height == 501
        second = await receipts.page(None, 2, first.next_cursor)
        third = await receipts.page(None, 2, second.next_cursor)
        assert third.next_cursor is None
        seen = [r.id for p in (first, second, third) for r in p.receipts]
        assert len(set(seen)) == 5 and seen == sorted(seen, reverse=True)

        target = seen[0]
        dismissed, _height = await receipts.dismiss(target, " returned by hand ")
        assert (dismissed.status, dismissed.note) == (ReceiptStatus.DISMISSED, "returned by hand")
        try:
            await receipts.dismiss(target, "again")
            raise AssertionError("dismissed twice")
        except Conflict:
            pass
        listed = await receipts.page(ReceiptStatus.DISMISSED, 10, None)
        assert [r.id for r in listed.receipts] == [target]
        assert len((await receipts.page(ReceiptStatus.OPEN, 10, None)).receipts) == 4

        other = UnmatchedReceipts(SqlUnmatched(db, "other"))
        assert (await other.page(None, 10, None)).receipts == []
        for call in (other.get(target), other.dismiss(seen[1], "not mine")):
            try:
                await call
                raise AssertionError("another store reached a receipt")
            except NotFound:
                pass
        assert (await receipts.get(seen[1]))[0].status is ReceiptStatus.OPEN
        async with db.read() as conn:
            assert len((await conn.execute(select(events))).all()) == 5

    on_database(scenario)


def test_a_tick_that_fails_while_writing_a_receipt_leaves_nothing_and_the_next_records_it_once(
    on_database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database fails after the receipt row is written, before its event (a process
    killed there is the same: nothing commits): no receipt, no event, the pooled index
    still pooled, the height not moved; the next tick records it once, with one event."""

    async def scenario(db: Database) -> None:
        async with db.write() as conn:
            await conn.execute(
                insert(address_pool).values(
                    store_id="default", subaddr_index=3, address="8Sub3", created_at=utcnow()
                )
            )
        wallet = ChainWallet()
        sync = engine(db, wallet)
        await sync.tick()
        wallet.height = 501
        wallet.entries = [entry(3, "k", 500)]
        real = unmatched_rows.insert_events

        async def failing(conn: Any, rows: Any) -> None:
            raise DatabaseUnavailable("the database went away")

        monkeypatch.setattr(unmatched_rows, "insert_events", failing)
        with pytest.raises(DatabaseUnavailable):
            await sync.tick()
        assert await SqlUnmatched(db, "default").page(None, 10, None) == []
        async with db.read() as conn:
            assert len((await conn.execute(select(address_pool))).all()) == 1
            assert (await conn.execute(select(events))).all() == []
        assert (await SqlSyncStore(db).window_bounds()).synced == 500

        monkeypatch.setattr(unmatched_rows, "insert_events", real)
        await sync.tick()
        await sync.tick()
        [receipt] = await SqlUnmatched(db, "default").page(None, 10, None)
        assert receipt.transfer.tx_hash == "k" * 64
        assert [e.kind for e in await feed(db)] == ["transfer.unmatched"]
        async with db.read() as conn:
            assert (await conn.execute(select(address_pool))).all() == []

    on_database(scenario)


def test_a_confirmed_receipt_put_back_in_the_pool_then_dropped_is_announced_gone(
    on_database: Any,
) -> None:
    """A reorg puts a confirmed receipt back in the pool (recorded silently), then it is
    dropped: whoever was told it confirmed hears it is gone."""

    async def scenario(db: Database) -> None:
        wallet = ChainWallet()
        sync = engine(db, wallet)
        await sync.tick()
        wallet.height = 501
        wallet.entries = [entry(8, "m", 500)]
        await sync.tick()
        wallet.entries = [{**entry(8, "m", 0, kind="pool"), "height": 0}]
        await sync.tick()
        [back] = await SqlUnmatched(db, "default").page(None, 10, None)
        assert back.transfer.state.value == "pool"
        wallet.entries = []
        wallet.height = 502
        await sync.tick()
        [gone] = await SqlUnmatched(db, "default").page(None, 10, None)
        assert gone.transfer.state.value == "gone"
        states = [json.loads(e.payload)["unmatched"]["state"] for e in await feed(db)]
        assert states == ["confirmed", "gone"]

    on_database(scenario)
