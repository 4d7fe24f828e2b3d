"""``Idempotency-Key``: run a request at most once per key and replay its answer.

The first request with a key runs and its answer (success or error) is stored with a
hash of its body. A repeat with the same key and body gets that answer without
running again; the same key with another body is refused (Unprocessable); a repeat
while the first still runs is a Conflict.

Keys are scoped by caller: the same key string sent with two API keys names two
different requests, so one caller's answer is never replayed to another.

When is a key released so that a retry runs again? Only when the failure provably
changed nothing. A payout whose outcome is unknown (``PayoutOutcomeUnknown``, raised
by ``core/payouts.py`` whenever the wallet may have been asked to send) keeps its key.

Storing the answer (or releasing the key) can fail too, the database being down. Once
the handler has run, that never changes the answer: the client gets what the handler
did (a payout's 200 with its tx hashes, its 504, the wallet's refusal), since a 503
"database unavailable" reads as "nothing happened, retry" after money may have gone.
The failure is logged and the key stays ``running``: retries get 409 until it expires
(``--idempotency-ttl``), never a second run.

A process can also die while it holds a key (killed, its host lost). A claim names its
owner and holds for a lease (``--idempotency-lease``) that the owner renews while the
handler runs. A retry that finds a running claim gets 409 while the lease is live;
once it expired, the retry's process takes the claim over (one conditional update: one
process wins) and then:

* the work committed (the request exists: ``recover`` finds it by the claim's
  reference, which the handler recorded with the request in its own transaction): the
  answer is that request's, stored for later replays;
* nothing was committed: the handler runs again under the same reference (a late
  commit of the old owner then collides with it on the unique reference, and the
  answer is the request it made);
* the endpoint moves money (``moves_money``): never run again. Whether the dead owner
  reached the wallet cannot be known from here, so the key keeps answering 409 with
  the payout journal as the place to look, until it expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from xmrgate.core.ports import IdempotencyRepository
from xmrgate.domain.errors import (
    Conflict,
    DatabaseUnavailable,
    InvalidInput,
    PayoutOutcomeUnknown,
    Unprocessable,
    WalletCannotSpend,
    WalletTimeout,
    WalletUnavailable,
    XmrgateError,
)
from xmrgate.domain.records import StoredAnswer

log = logging.getLogger(__name__)

MAX_KEY_LENGTH = 255
RUNNING = "running"

# What the caller (the web layer) turns an error into: (HTTP status, JSON body).
ErrorAnswer = Callable[[XmrgateError], tuple[int, dict[str, Any]]]
# The work of a keyed request, given the claim's reference to record with what it makes
# (None without a key); and the answer of work that committed under a reference, if any.
Handler = Callable[[str | None], Awaitable[dict[str, Any]]]
Recover = Callable[[str], Awaitable[dict[str, Any] | None]]


def process_owner() -> str:
    """A name for this process unique in a cluster: host, pid and a random part."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True, slots=True)
class Replay:
    """The stored answer of an earlier request with the same key and body."""

    status: int
    body: Any


def body_hash(body: Any) -> str:
    """Hash of the request's meaning: canonical JSON, so key order and spacing don't matter."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def scoped_endpoint(endpoint: str, caller: str | None) -> str:
    """The key's namespace: the endpoint, and the API key's label hashed (fits 64 chars)."""
    if caller is None:
        return endpoint
    return f"{endpoint}@{hashlib.sha256(caller.encode()).hexdigest()[:32]}"


def nothing_happened(exc: XmrgateError) -> bool:
    """Failures after which a retry may safely run again."""
    if isinstance(exc, PayoutOutcomeUnknown | WalletTimeout):
        return False
    if isinstance(exc, WalletUnavailable):
        return not exc.request_sent
    # A view-only wallet signed nothing: once the spend key is back, a retry may run.
    return isinstance(exc, DatabaseUnavailable | WalletCannotSpend)


class Idempotency:
    """Runs handlers at most once per (endpoint, caller, key)."""

    def __init__(
        self,
        store: IdempotencyRepository,
        *,
        owner: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._owner = owner or process_owner()
        self._clock = clock

    async def run(
        self,
        *,
        endpoint: str,
        caller: str | None,
        key: str | None,
        body: Any,
        handler: Handler,
        error_answer: ErrorAnswer,
        moves_money: bool,
        recover: Recover | None = None,
    ) -> dict[str, Any] | Replay:
        """Run ``handler`` unless this key already ran; no key: just run it.

        ``moves_money``: after an unexpected failure or cancellation the key stays
        claimed (a retry gets Conflict) rather than risk a second payout; nor is its
        claim taken over when its owner died. ``recover``: finds what a handler made
        under a claim's reference (its answer), for a claim whose owner died.
        """
        if key is None:
            return await handler(None)
        key = key.strip()
        if not key or len(key) > MAX_KEY_LENGTH:
            raise InvalidInput(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters")
        namespace = scoped_endpoint(endpoint, caller)
        digest = body_hash(body)
        ref = str(uuid.uuid4())
        earlier = await self._store.claim(namespace, key, digest, owner=self._owner, ref=ref)
        taken_over = False
        if earlier is not None:
            replay = _replay(earlier, digest, self._clock(), moves_money=moves_money)
            if replay is not None:
                return replay
            # The owner's lease ran out: it died (or stalled) before answering.
            taken = await self._store.take_over(namespace, key, self._owner)
            if taken is None:  # another retry took it first, or the owner renewed it
                raise Conflict("a request with this Idempotency-Key is still in progress")
            log.warning(
                "Idempotency-Key %r (%s) was held by %s, whose lease ran out: taken over",
                key,
                namespace,
                earlier.owner or "a process before leases",
            )
            ref, taken_over = taken, True
            made = await self._recovered(recover, ref)
            if made is not None:
                await self._complete(namespace, key, 200, made)
                return Replay(200, made)
        return await self._run_claimed(
            namespace, key, ref, handler, error_answer, moves_money, recover if taken_over else None
        )

    async def _run_claimed(
        self,
        namespace: str,
        key: str,
        ref: str,
        handler: Handler,
        error_answer: ErrorAnswer,
        moves_money: bool,
        recover: Recover | None,
    ) -> dict[str, Any] | Replay:
        """Run the handler of a claim we hold, renewing its lease meanwhile.

        ``recover`` (a claim taken over only): when the handler fails, the old owner may
        have committed after all (its insert won the unique reference): answer that.
        """
        renewing = asyncio.create_task(self._keep_lease(namespace, key))
        try:
            result = await handler(ref)
        except XmrgateError as exc:
            renewing.cancel()
            made = await self._recovered(recover, ref)
            if made is not None:
                await self._complete(namespace, key, 200, made)
                return Replay(200, made)
            if nothing_happened(exc):
                await self._release(namespace, key)
            else:
                await self._complete(namespace, key, *error_answer(exc))
            raise
        except BaseException:
            renewing.cancel()
            # Unexpected failure or cancellation: we cannot tell what happened.
            if not moves_money:
                await self._release(namespace, key)
            raise
        finally:
            renewing.cancel()
        await self._complete(namespace, key, 200, result)
        return result

    async def _keep_lease(self, namespace: str, key: str) -> None:
        """Renew the claim's lease every third of it until cancelled."""
        period = self._store.lease / 3
        while True:
            await asyncio.sleep(period)
            try:
                if not await self._store.renew(namespace, key, self._owner):
                    log.warning(
                        "Idempotency-Key %r (%s): the claim is no longer ours (taken over "
                        "after its lease ran out)",
                        key,
                        namespace,
                    )
                    return
            except Exception:
                # The database is away: the next renewal may get through before the lease ends.
                log.warning("renewing the lease of Idempotency-Key %r failed", key, exc_info=True)

    @staticmethod
    async def _recovered(recover: Recover | None, ref: str) -> dict[str, Any] | None:
        """The answer of what was made under ``ref``; None if nothing (or unreadable)."""
        if recover is None:
            return None
        with contextlib.suppress(XmrgateError):
            return await recover(ref)
        return None

    async def _complete(self, namespace: str, key: str, status: int, answer: Any) -> None:
        """Store the answer for replay; a failure is logged, never raised (see module doc)."""
        try:
            await self._store.complete(namespace, key, status, json.dumps(answer))
        except Exception:
            # Never release instead: the handler ran (a payout may have been sent), so a
            # retry must not run again. The key stays running: 409 until it expires.
            log.exception(
                "storing the %d answer of Idempotency-Key %r (%s) failed: the key stays "
                "claimed (retries get 409) until it expires",
                status,
                key,
                namespace,
            )

    async def _release(self, namespace: str, key: str) -> None:
        """Free the key of a request that did nothing; a failure is logged, never raised."""
        try:
            await self._store.release(namespace, key)
        except Exception:
            # The answer stays the handler's own error (what really happened), not the
            # database's; the key stays claimed, which only costs the retry a 409.
            log.exception(
                "releasing Idempotency-Key %r (%s) failed: it stays claimed (retries get "
                "409) until it expires",
                key,
                namespace,
            )


def _replay(
    earlier: StoredAnswer, digest: str, now: datetime, *, moves_money: bool
) -> Replay | None:
    """The stored answer; None when the claim's lease ran out (take it over); Conflict
    while it runs (or, for money, after its owner died); Unprocessable for another body."""
    if earlier.request_hash != digest:
        raise Unprocessable("this Idempotency-Key was used with a different request body")
    if earlier.state != RUNNING and earlier.status is not None and earlier.body is not None:
        return Replay(earlier.status, json.loads(earlier.body))
    live = earlier.lease_until is not None and earlier.lease_until >= now
    if live or earlier.state != RUNNING:
        raise Conflict("a request with this Idempotency-Key is still in progress")
    if moves_money:
        raise Conflict(
            "the process that ran the request with this Idempotency-Key ended before it "
            "answered; a payout may have been sent, so it is not run again under this key: "
            "see the payouts journal (dashboard, GET /payouts) before sending again"
        )
    return None
