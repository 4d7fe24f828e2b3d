"""Callback delivery: signing, the retry schedule, and the outbox worker.

A 2xx answer means delivered. Anything else (timeout, refused connection, 3xx, 4xx,
5xx) is retried after ``base * 2**(n-1)`` seconds (n = tries so far), capped at
``max_interval``, with +-20 % jitter so that a receiver coming back is not hit by
every queued event at once; after ``give_up_after`` since the event was created it
is marked failed. The worker never waits on one receiver: each delivery is its own
task, bounded by a semaphore, and one request's events are claimed one at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx

from xmrgate import __version__
from xmrgate.logs import redact_url
from xmrgate.store.db import utcnow
from xmrgate.store.outbox import OutboxEvent, OutboxStore

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Xmrgate-Signature"
EVENT_ID_HEADER = "X-Xmrgate-Event-Id"
EVENT_KIND_HEADER = "X-Xmrgate-Event"
JITTER = 0.2
_RNG = random.Random()


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """The signature header value: ``t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``."""
    mac = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(
    secret: bytes, header: str, body: bytes, *, tolerance: float = 300, now: float | None = None
) -> bool:
    """Check a signature header as a merchant would (constant-time, with a freshness window)."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        timestamp = int(parts["t"])
        given = parts["v1"]
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, given)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When to try a failed callback again, and when to give up."""

    base: float = 5.0
    max_interval: float = 3600.0
    give_up_after: float = 72 * 3600.0

    def delay(self, tries: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after the ``tries``-th failed try (tries >= 1)."""
        raw = min(self.base * float(2 ** max(tries - 1, 0)), self.max_interval)
        jitter = (rng or _RNG).uniform(-JITTER, JITTER)
        return min(raw * (1 + jitter), self.max_interval)

    def next_attempt(
        self, created_at: datetime, tries: int, now: datetime, rng: random.Random | None = None
    ) -> datetime | None:
        """When to try next, or None when the event has been retried long enough."""
        if (now - created_at).total_seconds() >= self.give_up_after:
            return None
        return now + timedelta(seconds=self.delay(tries, rng))


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of one delivery try."""

    delivered: bool
    status_code: int | None
    error: str | None


class CallbackWorker:
    """Delivers due outbox events until stopped."""

    def __init__(
        self,
        outbox: OutboxStore,
        http: httpx.AsyncClient,
        *,
        policy: RetryPolicy,
        secret: bytes | None,
        timeout: float,
        concurrency: int,
    ) -> None:
        self._outbox = outbox
        self._http = http
        self._policy = policy
        self._secret = secret
        self._timeout = timeout
        self._slots = concurrency
        self._id = f"worker-{uuid.uuid4().hex[:12]}"
        self._wake = asyncio.Event()
        self._in_flight: set[asyncio.Task[None]] = set()

    def wake(self) -> None:
        """Look for due events now (the sync tick calls this after committing events)."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and deliver due events until ``stop`` is set; then finish what is in flight."""
        while not stop.is_set():
            try:
                free = self._slots - len(self._in_flight)
                # Claim in batches (a quarter of the slots at least): each claim scans
                # the pending events, so claiming one per finished delivery would make
                # draining a backlog quadratic.
                if free >= max(1, self._slots // 4) or (free > 0 and not self._in_flight):
                    # A claim lasts past the HTTP timeout so a live worker keeps it.
                    lease = self._timeout + 30
                    for event in await self._outbox.claim_due(self._id, free, lease):
                        task = asyncio.create_task(self._deliver(event))
                        self._in_flight.add(task)
                        task.add_done_callback(self._done)
                    wait = await self._seconds_until_due()
                else:
                    wait = 5.0  # a finishing delivery wakes us
            except Exception:
                log.exception("callback worker: claiming events failed; trying again")
                wait = 2.0
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_first(self._wake, stop), timeout=wait)
        if self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        self._wake.set()  # a slot is free, and the request's next event may be due

    async def _seconds_until_due(self) -> float:
        due = await self._outbox.next_due()
        if due is None:
            return 5.0
        return min(max((due - utcnow()).total_seconds(), 0.05), 5.0)

    async def _deliver(self, event: OutboxEvent) -> None:
        try:
            outcome = await self.post(event)
            next_at = None
            if not outcome.delivered:
                next_at = self._policy.next_attempt(event.created_at, event.attempts + 1, utcnow())
                log.warning(
                    "callback %s (%s) to %s failed (try %d): %s; %s",
                    event.id,
                    event.kind,
                    redact_url(event.callback_url),
                    event.attempts + 1,
                    outcome.error,
                    f"next try at {next_at:%H:%M:%S}" if next_at else "giving up",
                )
            else:
                log.info("callback %s (%s) delivered", event.id, event.kind)
            await self._outbox.record_attempt(
                event.id,
                self._id,
                delivered=outcome.delivered,
                status_code=outcome.status_code,
                error=outcome.error,
                next_attempt_at=next_at,
            )
        except Exception:
            # The claim expires and another pass retries; the loop goes on.
            log.exception("callback %s: recording the attempt failed", event.id)

    async def post(self, event: OutboxEvent) -> Outcome:
        """POST one event to its callback URL and classify the answer."""
        body = event.payload.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"xmrgate/{__version__}",
            EVENT_ID_HEADER: event.id,
            EVENT_KIND_HEADER: event.kind,
        }
        if self._secret is not None:
            headers[SIGNATURE_HEADER] = sign(self._secret, int(time.time()), body)
        try:
            response = await self._http.post(
                event.callback_url, content=body, headers=headers, timeout=self._timeout
            )
        except httpx.TimeoutException:
            return Outcome(False, None, f"timed out after {self._timeout:g}s")
        except httpx.HTTPError as exc:
            return Outcome(False, None, f"{type(exc).__name__}: {exc}"[:500])
        if 200 <= response.status_code < 300:
            return Outcome(True, response.status_code, None)
        return Outcome(False, response.status_code, f"HTTP {response.status_code}")


async def _first(*signals: asyncio.Event) -> None:
    waiters = [asyncio.create_task(s.wait()) for s in signals]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
