"""The delivery worker (core) with an in-memory outbox: the total deadline, the lease
that outlives it, and every try recorded whatever went wrong."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from xmrgate.adapters.callback_http import Destinations, HttpCallbackSender
from xmrgate.core.callbacks import LEASE_MARGIN, CallbackWorker, RetryPolicy
from xmrgate.core.ports import DeliveryResult
from xmrgate.domain.records import OutboxEvent

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def event(url: str = "http://shop.example/cb", **kw: object) -> OutboxEvent:
    base = OutboxEvent(
        seq=1,
        id="0b6f7a55-3c43-4c4e-9a0c-6c1f5d1e0001",
        request_id=1,
        kind="transfer.confirmed",
        tx_hash="ab" * 32,
        callback_url=url,
        payload='{"event":"transfer.confirmed"}',
        status="pending",
        attempts=0,
        created_at=NOW,
        next_attempt_at=NOW,
        last_attempt_at=None,
        delivered_at=None,
        last_status=None,
        last_error=None,
    )
    return replace(base, **kw)  # type: ignore[arg-type]


@dataclass
class Queue:
    """An outbox that hands out its events once and records every attempt."""

    events: list[OutboxEvent]
    leases: list[float] = field(default_factory=list)
    recorded: list[dict[str, object]] = field(default_factory=list)

    async def claim_due(self, worker: str, limit: int, lease: float) -> list[OutboxEvent]:
        self.leases.append(lease)
        claimed, self.events = self.events[:limit], self.events[limit:]
        return claimed

    async def record_attempt(self, event_id: str, worker: str, **outcome: object) -> None:
        self.recorded.append({"id": event_id, **outcome})

    async def next_due(self) -> datetime | None:
        return None


class Trickle:
    """A sender that never finishes, like a receiver sending one byte every few seconds."""

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        await asyncio.Event().wait()  # nobody sets it
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        pass


class Boom:
    """A sender with a bug."""

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        raise RuntimeError("unexpected")

    async def aclose(self) -> None:
        pass


def worker(queue: Queue, sender: object, timeout: float = 0.3) -> CallbackWorker:
    return CallbackWorker(
        queue,
        sender,  # type: ignore[arg-type]
        policy=RetryPolicy(base=5, max_interval=60, give_up_after=3600),
        secret=b"s",
        timeout=timeout,
        concurrency=4,
        clock=lambda: NOW + timedelta(seconds=1),
    )


def drain(w: CallbackWorker, queue: Queue, until: int = 1, limit: float = 10) -> float:
    """Run the worker until ``until`` attempts are recorded; the seconds it took."""

    async def main() -> float:
        stop = asyncio.Event()
        started = time.monotonic()
        task = asyncio.create_task(w.run(stop))
        for _ in range(int(limit / 0.01)):
            if len(queue.recorded) >= until:
                break
            await asyncio.sleep(0.01)
        took = time.monotonic() - started
        stop.set()
        await asyncio.wait_for(task, 5)
        return took

    return asyncio.run(main())


def test_total_deadline_cuts_a_trickling_receiver_and_counts_the_try() -> None:
    """A try that never ends is cut at the deadline, recorded as a timeout, retried later."""
    queue = Queue([event()])
    w = worker(queue, Trickle(), timeout=0.3)
    took = drain(w, queue)
    assert took < 2, took
    [record] = queue.recorded
    assert record["delivered"] is False and record["error"] == "timeout"
    assert record["next_attempt_at"] is not None


def test_lease_outlives_the_deadline() -> None:
    """Every claim lasts the deadline plus LEASE_MARGIN: it cannot expire during the try."""
    queue = Queue([event()])
    w = worker(queue, Trickle(), timeout=0.2)
    assert w.lease == 0.2 + LEASE_MARGIN
    drain(w, queue)
    assert queue.leases and all(lease == 0.2 + LEASE_MARGIN for lease in queue.leases)


@dataclass
class Overlap:
    """A slow sender that notes how many tries of one event run at the same time."""

    running: int = 0
    most: int = 0
    calls: int = 0

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        self.calls += 1
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(0.5)
        finally:
            self.running -= 1
        return DeliveryResult(True, 200)

    async def aclose(self) -> None:
        pass


class Again(Queue):
    """An outbox that hands out the same event on every claim (as if its claim expired)."""

    async def claim_due(self, worker: str, limit: int, lease: float) -> list[OutboxEvent]:
        self.leases.append(lease)
        return list(self.events)


def test_an_event_in_flight_is_never_delivered_twice_at_once() -> None:
    """Even if the outbox handed the event out again, the worker does not start a second try."""
    queue = Again([event()])
    sender = Overlap()
    w = worker(queue, sender, timeout=2)

    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(w.run(stop))
        for _ in range(30):
            w.wake()
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.wait_for(task, 5)

    asyncio.run(main())
    assert len(queue.leases) > 2 and sender.most == 1 and sender.calls == 1


def test_an_exception_in_a_delivery_is_a_recorded_failed_try() -> None:
    """A sender that raises does not kill the worker or skip the record: it is a failed try."""
    queue = Queue([event()])
    drain(worker(queue, Boom()), queue)
    [record] = queue.recorded
    assert record["delivered"] is False and record["error"] == "internal error"
    assert record["next_attempt_at"] is not None


def test_invalid_stored_url_fails_for_good_at_once() -> None:
    """Events stored before URLs were checked (port 99999, a newline) are recorded as failed
    at once instead of raising before the record and blocking the request's later events."""
    urls = ["http://127.0.0.1:99999/p", "http://127.0.0.1/p\nX-Injected: 1"]
    queue = Queue([event(url, id=f"e{i}", request_id=i) for i, url in enumerate(urls)])
    sender = HttpCallbackSender(Destinations(()), timeout=1, max_connections=2)
    drain(worker(queue, sender), queue, until=2)
    assert sorted(r["id"] for r in queue.recorded) == ["e0", "e1"]  # type: ignore[type-var]
    for record in queue.recorded:
        assert record["error"] == "invalid URL" and record["next_attempt_at"] is None


def test_core_does_not_import_adapters_or_httpx() -> None:
    """The worker is written against ports: importing it loads no adapter and no HTTP client."""
    code = (
        "import sys, xmrgate.core.callbacks\n"
        "prefixes = ('xmrgate.adapters', 'httpx', 'httpcore')\n"
        "bad = [m for m in sys.modules if m.startswith(prefixes)]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
