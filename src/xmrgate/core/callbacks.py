"""Callback delivery: the retry schedule and the outbox worker (signing: ``domain/signatures``).

A 2xx answer means delivered. Anything else (timeout, refused connection, 3xx, 4xx,
5xx, a refused internal destination, even an unexpected exception) is a failed try:
it is counted and retried after ``base * 2**(n-1)`` seconds (n = tries so far), capped
at ``max_interval``, with +-20 % jitter so that a receiver coming back is not hit by
every queued event at once; after ``give_up_after`` since the event was created it
is marked failed. A URL that cannot be parsed fails for good at once.

The worker never waits on one receiver: each delivery is its own task, bounded by a
semaphore of slots, and one request's events are claimed one at a time. Each try has
a total deadline (``timeout``) over everything (DNS, connect, TLS, request, answer),
enforced here with ``asyncio.timeout``, not by the sender's per-read timeouts. A claim
lasts ``timeout + LEASE_MARGIN``, so it cannot expire while the try is in flight: an
event being delivered is never claimed a second time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

from xmrgate import __version__
from xmrgate.core.observer import DELIVERED, FAILED, NO_OBSERVER, RETRYING, Observer
from xmrgate.core.ports import CallbackQueue, CallbackSender, Clock, DeliveryResult
from xmrgate.domain.callback_urls import InvalidUrl, parse_url
from xmrgate.domain.greenfield.deliveries import SIGNATURE_HEADER as WEBHOOK_SIGNATURE_HEADER
from xmrgate.domain.greenfield.deliveries import sign as webhook_signature
from xmrgate.domain.records import OutboxEvent
from xmrgate.domain.signatures import sign, verify

__all__ = [
    "EVENT_ID_HEADER",
    "EVENT_KIND_HEADER",
    "EVENT_SEQ_HEADER",
    "JITTER",
    "LEASE_MARGIN",
    "SIGNATURE_HEADER",
    "CallbackWorker",
    "RetryPolicy",
    "sign",
    "verify",
]

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Xmrgate-Signature"
EVENT_ID_HEADER = "X-Xmrgate-Event-Id"
EVENT_KIND_HEADER = "X-Xmrgate-Event"
# The event's place in the feed (GET /events?after=...): replay from here after an outage.
EVENT_SEQ_HEADER = "X-Xmrgate-Event-Seq"
JITTER = 0.2
# A claim outlives the deadline of the try by this much: time to record the outcome.
LEASE_MARGIN = 30.0
_RNG = random.Random()


def _utcnow() -> datetime:
    return datetime.now(UTC)


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


class CallbackWorker:
    """Delivers due outbox events until stopped."""

    def __init__(
        self,
        outbox: CallbackQueue,
        sender: CallbackSender,
        *,
        policy: RetryPolicy,
        secret: bytes | None,
        timeout: float,
        concurrency: int,
        clock: Clock = _utcnow,
        observer: Observer = NO_OBSERVER,
        secret_of: Callable[[str], bytes | None] | None = None,
        webhooks: WebhookSecrets | None = None,
    ) -> None:
        """``webhooks``: the secret and retry rule of a Greenfield webhook, for the
        deliveries of webhooks (events with a ``webhook_id``)."""
        if not timeout > 0:
            raise ValueError("the callback timeout must be positive")
        self._outbox = outbox
        self._sender = sender
        self._policy = policy
        self._secret = secret
        # Stores: each store's callbacks are signed with its own secret (by store id).
        self._secret_of = secret_of
        self._webhooks = webhooks
        self._timeout = timeout
        self._slots = concurrency
        self._now = clock
        self._observer = observer
        self._id = f"worker-{uuid.uuid4().hex[:12]}"
        self._wake = asyncio.Event()
        self._in_flight: set[asyncio.Task[None]] = set()
        self._delivering: set[str] = set()

    @property
    def lease(self) -> float:
        """Seconds a claim lasts: the deadline of one try plus ``LEASE_MARGIN``."""
        return self._timeout + LEASE_MARGIN

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
                    for event in await self._outbox.claim_due(self._id, free, self.lease):
                        self._start(event)
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

    def _start(self, event: OutboxEvent) -> None:
        if event.id in self._delivering:
            # Cannot happen while the lease outlives the deadline; never deliver twice at once.
            log.warning("callback %s: claimed again while still in flight; skipped", event.id)
            return
        self._delivering.add(event.id)
        task = asyncio.create_task(self._deliver(event))
        self._in_flight.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        self._wake.set()  # a slot is free, and the request's next event may be due

    async def _seconds_until_due(self) -> float:
        due = await self._outbox.next_due()
        if due is None:
            return 5.0
        return min(max((due - self._now()).total_seconds(), 0.05), 5.0)

    async def _deliver(self, event: OutboxEvent) -> None:
        try:
            result = await self.attempt(event)
            next_at = None
            if not result.delivered:
                if not result.permanent:
                    next_at = self._policy.next_attempt(
                        event.created_at, event.attempts + 1, self._now()
                    )
                log.warning(
                    "callback %s (%s) to %s failed (try %d): %s; %s",
                    event.id,
                    event.kind,
                    _for_log(event.callback_url),
                    event.attempts + 1,
                    result.error,
                    f"next try at {next_at:%H:%M:%S}" if next_at else "giving up",
                )
            else:
                log.info("callback %s (%s) delivered", event.id, event.kind)
            self._report(event, result.delivered, next_at is not None)
            await self._outbox.record_attempt(
                event.id,
                self._id,
                delivered=result.delivered,
                status_code=result.status_code,
                error=result.error,
                next_attempt_at=next_at,
            )
        except Exception:
            # The claim expires and another pass retries; the loop goes on.
            log.exception("callback %s: recording the attempt failed", event.id)
        finally:
            self._delivering.discard(event.id)

    def _report(self, event: OutboxEvent, delivered: bool, will_retry: bool) -> None:
        """Tell the observer how the try ended (and, delivered, how long the event waited)."""
        if delivered:
            delay = (self._now() - event.created_at).total_seconds()
            self._observer.callback_attempt(DELIVERED, delay)
        else:
            result = RETRYING if will_retry else FAILED
            self._observer.callback_attempt(result, None)

    async def attempt(self, event: OutboxEvent) -> DeliveryResult:
        """One try of one event within the deadline; every failure is a result, not a raise."""
        if event.webhook_id is not None:
            return await self._attempt_webhook(event, event.webhook_id)
        body = event.payload.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"xmrgate/{__version__}",
            EVENT_ID_HEADER: event.id,
            EVENT_KIND_HEADER: event.kind,
            EVENT_SEQ_HEADER: str(event.seq),
        }
        try:
            secret = self._secret if self._secret_of is None else self._secret_of(event.store_id)
            if secret is not None:
                headers[SIGNATURE_HEADER] = sign(secret, int(time.time()), body)
            async with asyncio.timeout(self._timeout):
                return await self._sender.send(event.callback_url, body, headers)
        except TimeoutError:
            return DeliveryResult(False, error="timeout")
        except Exception:
            log.exception("callback %s: delivery failed unexpectedly", event.id)
            return DeliveryResult(False, error="internal error")

    async def _attempt_webhook(self, event: OutboxEvent, webhook_id: str) -> DeliveryResult:
        """A Greenfield delivery: the body as stored, signed ``BTCPay-Sig`` with its
        webhook's secret over these exact bytes. A webhook deleted since is never called
        (permanent); one without automatic redelivery is tried once."""
        body = event.payload.encode()
        retry = True
        try:
            found = None if self._webhooks is None else await self._webhooks.signing(webhook_id)
            if found is None:
                return DeliveryResult(False, error="the webhook was deleted", permanent=True)
            secret, retry = found
            headers = {
                "Content-Type": "application/json",
                "User-Agent": f"xmrgate/{__version__}",
                WEBHOOK_SIGNATURE_HEADER: webhook_signature(secret, body),
            }
            async with asyncio.timeout(self._timeout):
                result = await self._sender.send(event.callback_url, body, headers)
        except TimeoutError:
            result = DeliveryResult(False, error="timeout")
        except Exception:
            log.exception("webhook delivery %s failed unexpectedly", event.id)
            result = DeliveryResult(False, error="internal error")
        if not result.delivered and not retry:
            return replace(result, permanent=True)
        return result


class WebhookSecrets(Protocol):
    """The signing secret of a Greenfield webhook and whether it retries by itself."""

    async def signing(self, webhook_id: str) -> tuple[str, bool] | None:
        """(secret, automatic redelivery), or None when the webhook is gone."""
        ...


def _for_log(url: str) -> str:
    """A callback URL fit for logs: no query string (it may carry tokens)."""
    try:
        return parse_url(url).redacted
    except InvalidUrl:
        return "(an invalid URL)"


async def _first(*signals: asyncio.Event) -> None:
    waiters = [asyncio.create_task(s.wait()) for s in signals]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
