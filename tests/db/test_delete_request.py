"""DELETE /receive/:address on SQLite and PostgreSQL: a request that has received funds is
kept with its transfers and events, whenever the transfer was recorded, even while the
delete was already under way; an unpaid request is deleted."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import func, select, text

from tests.db.support import new_request
from tests.unit.fakes import AllowAll, FakeWallet
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.outbox import OutboxStore, insert_events
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.adapters.store.tables import events, payment_requests, transfers
from xmrgate.adapters.store.tick_rows import save_transfers
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.sync import SyncEngine
from xmrgate.domain.errors import NotFound, RequestHasFunds
from xmrgate.domain.ledger import Transfer, TransferState

HEIGHT = 500
TX = "ab" * 32


class PayingWallet:
    """A wallet that has seen one pool payment to subaddress 1 (once ``paid`` is set)."""

    def __init__(self) -> None:
        self.paid = False

    async def refresh(self) -> None:
        return None

    async def get_height(self) -> int:
        return HEIGHT

    async def incoming_transfers(self, min_height: int, max_height: int) -> list[dict[str, Any]]:
        if not self.paid:
            return []
        return [
            {
                "txid": TX,
                "subaddr_index": {"major": 0, "minor": 1},
                "amount": 40,
                "fee": 1,
                "height": 0,
                "timestamp": int(datetime.now(UTC).timestamp()),
                "unlock_time": 0,
                "double_spend_seen": False,
                "type": "pool",
            }
        ]


def _use_case(db: Database, store: PaymentStore | None = None) -> PaymentRequests:
    return PaymentRequests(FakeWallet(), store or PaymentStore(db), OutboxStore(db), AllowAll())


async def _tick(db: Database, wallet: PayingWallet) -> None:
    """One real sync tick: records the payment (transfer and event) the wallet shows."""
    await SyncEngine(SqlSyncStore(db), wallet, zero_conf=True, reorg_margin=10).tick()


async def _counts(db: Database, request_id: int) -> tuple[int, int, int]:
    """(requests, transfers, events) stored for ``request_id``."""
    async with db.read() as conn:
        found = []
        for table, column in [
            (payment_requests, payment_requests.c.id),
            (transfers, transfers.c.request_id),
            (events, events.c.request_id),
        ]:
            query = select(func.count()).select_from(table).where(column == request_id)
            found.append(int((await conn.execute(query)).scalar() or 0))
        return found[0], found[1], found[2]


def test_funded_request_is_refused_and_keeps_its_transfer_and_events(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        paid = await new_request(db, 1, prefix="8Pay", description="order")
        wallet = PayingWallet()
        wallet.paid = True
        await _tick(db, wallet)
        assert await _counts(db, paid.id) == (1, 1, 1)
        with pytest.raises(RequestHasFunds, match="received funds") as refused:
            await _use_case(db).delete(paid.address)
        assert refused.value.message == (
            "this payment request has received funds and cannot be deleted; its history is kept"
        )
        assert await _counts(db, paid.id) == (1, 1, 1)

    on_database(scenario)


def test_unpaid_request_is_deleted_then_not_found(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        unpaid = await new_request(db, 1, prefix="8Pay", description="order")
        other = await new_request(db, 2, prefix="8Pay", description="order")
        await _use_case(db).delete(unpaid.address)
        assert await _counts(db, unpaid.id) == (0, 0, 0)
        assert await PaymentStore(db).get(other.address) == other
        for missing in [unpaid.address, "8Nobody"]:
            with pytest.raises(NotFound, match="no payment request for this address"):
                await _use_case(db).delete(missing)
        assert await PaymentStore(db).delete("8Nobody") is False

    on_database(scenario)


def test_transfer_recorded_after_the_use_case_looked_keeps_the_request(
    on_database: Any,
) -> None:
    """The race: a sync tick records a payment right before the store's delete runs.

    Whatever the use case checked before calling the store is stale by then; with a
    check-then-delete, the delete cascaded to the fresh transfer and its event.
    """

    async def scenario(db: Database) -> None:
        request = await new_request(db, 1, prefix="8Pay", description="order")
        wallet = PayingWallet()

        class TickFirst(PaymentStore):
            async def delete(self, address: str) -> bool:
                wallet.paid = True
                await _tick(db, wallet)  # the payment lands just before the delete
                return await super().delete(address)

        with pytest.raises(RequestHasFunds):
            await _use_case(db, TickFirst(db)).delete(request.address)
        assert await _counts(db, request.id) == (1, 1, 1)

    on_database(scenario)


async def _until_blocked(db: Database, deleting: asyncio.Task[None]) -> None:
    """Return once the delete waits on the tick's open transaction (or fail)."""
    if db.is_sqlite:
        # SQLite's busy handler cannot be observed: give the delete time to reach it.
        await asyncio.sleep(0.5)
    else:
        deadline = time.monotonic() + 10
        # Sessions of this test's own database only: other tests run beside it.
        query = text(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        while True:
            async with db.read(autocommit=True) as conn:
                if (await conn.execute(query)).scalar():
                    break
            assert time.monotonic() < deadline, "the delete never waited for the tick"
            await asyncio.sleep(0.02)
    assert not deleting.done(), "the delete did not wait for the tick's open transaction"


def test_delete_waiting_on_a_tick_that_records_a_transfer_is_refused(on_database: Any) -> None:
    """A tick has written a transfer and event but not committed when the delete starts.

    The delete must wait for it and then see the transfer. On PostgreSQL a bare
    ``DELETE ... WHERE NOT EXISTS`` is not enough: its snapshot misses the uncommitted
    transfer, it waits only for the row lock of the foreign key, then deletes and
    cascades to the transfer committed meanwhile.
    """

    async def scenario(db: Database) -> None:
        request = await new_request(db, 1, prefix="8Pay", description="order")
        transfer = Transfer(
            tx_hash=TX,
            subaddr_index=1,
            amount=40,
            fee=1,
            height=0,
            timestamp=int(datetime.now(UTC).timestamp()),
            unlock_time=0,
            double_spend_seen=False,
            state=TransferState.POOL,
        )
        event = {
            "id": "00000000-0000-0000-0000-000000000001",
            "request_id": request.id,
            "kind": "transfer.pool",
            "tx_hash": TX,
            "callback_url": request.callback_url,
            "payload": "{}",
        }
        # The tick's transaction, opened beside the store (as another process would).
        async with db.engine.connect() as tick:
            recording = await tick.begin()
            await save_transfers(tick, [transfer], set(), {1: request.id})
            await insert_events(tick, [event])
            deleting = asyncio.create_task(_use_case(db).delete(request.address))
            try:
                await _until_blocked(db, deleting)
            finally:
                await recording.commit()
        with pytest.raises(RequestHasFunds):
            await asyncio.wait_for(deleting, 30)
        assert await _counts(db, request.id) == (1, 1, 1)

    on_database(scenario)
