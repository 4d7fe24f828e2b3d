"""Every callback carries its place in the event feed: ``X-Xmrgate-Event-Seq``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from xmrgate.core.callbacks import EVENT_SEQ_HEADER, CallbackWorker, RetryPolicy
from xmrgate.core.ports import DeliveryResult
from xmrgate.domain.records import OutboxEvent

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Recorder:
    """A sender that keeps the headers of each try and answers 200."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        self.headers.append(dict(headers))
        return DeliveryResult(True, status_code=200)


class NoQueue:
    async def claim_due(self, worker: str, limit: int, lease: float) -> list[OutboxEvent]:
        return []

    async def record_attempt(self, event_id: str, worker: str, **outcome: Any) -> None:
        return None

    async def next_due(self) -> datetime | None:
        return None


def test_seq_header_is_the_feed_position() -> None:
    """The header is the outbox seq, the same number GET /events lists the event under."""
    sender = Recorder()
    worker = CallbackWorker(
        NoQueue(), sender, policy=RetryPolicy(), secret=None, timeout=5, concurrency=1
    )
    event = OutboxEvent(
        seq=4711,
        id="00000000-0000-0000-0000-000000000001",
        request_id=1,
        kind="request.expired",
        tx_hash="",
        callback_url="https://shop.example/cb",
        payload="{}",
        status="pending",
        attempts=0,
        created_at=NOW,
        next_attempt_at=NOW,
        last_attempt_at=None,
        delivered_at=None,
        last_status=None,
        last_error=None,
    )
    result = asyncio.run(worker.attempt(event))
    assert result.delivered
    assert EVENT_SEQ_HEADER == "X-Xmrgate-Event-Seq"
    assert sender.headers[0][EVENT_SEQ_HEADER] == "4711"
