"""The outbox's claim and wake-up schedule on both real databases (no wallet needed)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.outbox import OutboxStore, insert_events
from xmrgate.adapters.store.payments import PaymentStore

Scenario = Callable[[Database], Awaitable[None]]


@pytest.fixture
def run(on_database: Any) -> Callable[[Scenario], None]:
    """Run an async scenario against a fresh, migrated database of each backend."""

    def runner(scenario: Scenario) -> None:
        on_database(scenario)

    return runner


async def new_request(db: Database, index: int, events: int) -> tuple[int, list[str]]:
    """A payment request with ``events`` pending callback events; returns (id, event ids)."""
    request = await PaymentStore(db).create(
        address=f"8{index:094d}",
        subaddr_index=index,
        amount=1,
        description="",
        callback_url="http://127.0.0.1:9/cb",
        return_url=None,
    )
    ids = [str(uuid.uuid4()) for _ in range(events)]
    async with db.write() as conn:
        await insert_events(
            conn,
            [
                {
                    "id": event_id,
                    "request_id": request.id,
                    "kind": "transfer.confirmed",
                    "tx_hash": "ab" * 32,
                    "callback_url": "http://127.0.0.1:9/cb",
                    "payload": "{}",
                }
                for event_id in ids
            ],
        )
    return request.id, ids


def test_claims_one_event_per_request_in_order(run: Callable[[Scenario], None]) -> None:
    """Only each request's oldest pending event is claimable; the next one after it is done."""

    async def scenario(db: Database) -> None:
        outbox = OutboxStore(db)
        _, (a1, a2) = await new_request(db, 1, 2)
        _, (b1,) = await new_request(db, 2, 1)
        claimed = await outbox.claim_due("w", 10, 60)
        assert [e.id for e in claimed] == [a1, b1]
        assert await outbox.claim_due("w", 10, 60) == [], "claimed heads block their queues"
        await outbox.record_attempt(
            a1, "w", delivered=True, status_code=200, error=None, next_attempt_at=None
        )
        assert [e.id for e in await outbox.claim_due("w", 10, 60)] == [a2]

    run(scenario)


def test_claim_respects_limit(run: Callable[[Scenario], None]) -> None:
    """No more than ``limit`` events are claimed at once."""

    async def scenario(db: Database) -> None:
        outbox = OutboxStore(db)
        for index in range(1, 6):
            await new_request(db, index, 1)
        assert len(await outbox.claim_due("w", 2, 60)) == 2
        assert len(await outbox.claim_due("w", 10, 60)) == 3

    run(scenario)


def test_next_due_waits_for_a_head_in_backoff(run: Callable[[Scenario], None]) -> None:
    """Events queued behind a head in backoff do not make the worker wake up early."""

    async def scenario(db: Database) -> None:
        outbox = OutboxStore(db)
        _, (head, _behind) = await new_request(db, 1, 2)
        [claimed] = await outbox.claim_due("w", 10, 60)
        retry_at = utcnow() + timedelta(seconds=120)
        await outbox.record_attempt(
            claimed.id,
            "w",
            delivered=False,
            status_code=500,
            error="HTTP 500",
            next_attempt_at=retry_at,
        )
        assert claimed.id == head
        due = await outbox.next_due()
        assert due is not None
        assert abs((due - retry_at).total_seconds()) < 0.01
        assert await outbox.claim_due("w", 10, 60) == []

    run(scenario)


def test_next_due_of_a_delivery_in_flight_is_its_claim_expiry(
    run: Callable[[Scenario], None],
) -> None:
    """While a head is being delivered, the worker sleeps until its claim would expire."""

    async def scenario(db: Database) -> None:
        outbox = OutboxStore(db)
        await new_request(db, 1, 1)
        before = utcnow()
        await outbox.claim_due("w", 10, 60)
        due = await outbox.next_due()
        assert due is not None and due >= before + timedelta(seconds=59)

    run(scenario)


def test_next_due_none_when_nothing_pending(run: Callable[[Scenario], None]) -> None:
    """With every event delivered there is nothing to wake up for."""

    async def scenario(db: Database) -> None:
        outbox = OutboxStore(db)
        assert await outbox.next_due() is None
        _, (only,) = await new_request(db, 1, 1)
        await outbox.claim_due("w", 10, 60)
        await outbox.record_attempt(
            only, "w", delivered=True, status_code=200, error=None, next_attempt_at=None
        )
        assert await outbox.next_due() is None

    run(scenario)


def test_retry_now_leaves_a_live_delivery_alone(run: Callable[[Scenario], None]) -> None:
    """Retrying an event a worker is delivering is a Conflict; once released it is retried."""
    from xmrgate.domain.errors import Conflict

    async def scenario(db: Database) -> None:
        outbox = OutboxStore(db)
        request_id, [event_id] = await new_request(db, 7, 1)
        [claimed] = await outbox.claim_due("worker-a", 10, lease=60)
        assert claimed.id == event_id
        with pytest.raises(Conflict):
            await outbox.retry_now(request_id, event_id)
        assert await outbox.claim_due("worker-b", 10, lease=60) == []  # still worker-a's
        await outbox.record_attempt(
            event_id, "worker-a", delivered=True, status_code=200, error=None, next_attempt_at=None
        )
        again = await outbox.retry_now(request_id, event_id)
        assert again is not None and again.status == "pending"
        assert await outbox.retry_now(request_id, str(uuid.uuid4())) is None

    run(scenario)
