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
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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

    def __init__(self, store: IdempotencyRepository) -> None:
        self._store = store

    async def run(
        self,
        *,
        endpoint: str,
        caller: str | None,
        key: str | None,
        body: Any,
        handler: Callable[[], Awaitable[dict[str, Any]]],
        error_answer: ErrorAnswer,
        moves_money: bool,
    ) -> dict[str, Any] | Replay:
        """Run ``handler`` unless this key already ran; no key: just run it.

        ``moves_money``: after an unexpected failure or cancellation the key stays
        claimed (a retry gets Conflict) rather than risk a second payout.
        """
        if key is None:
            return await handler()
        key = key.strip()
        if not key or len(key) > MAX_KEY_LENGTH:
            raise InvalidInput(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters")
        namespace = scoped_endpoint(endpoint, caller)
        digest = body_hash(body)
        earlier = await self._store.claim(namespace, key, digest)
        if earlier is not None:
            return _replay(earlier, digest)
        try:
            result = await handler()
        except XmrgateError as exc:
            if nothing_happened(exc):
                await self._release(namespace, key)
            else:
                await self._complete(namespace, key, *error_answer(exc))
            raise
        except BaseException:
            # Unexpected failure or cancellation: we cannot tell what happened.
            if not moves_money:
                await self._release(namespace, key)
            raise
        await self._complete(namespace, key, 200, result)
        return result

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


def _replay(earlier: StoredAnswer, digest: str) -> Replay:
    if earlier.request_hash != digest:
        raise Unprocessable("this Idempotency-Key was used with a different request body")
    if earlier.state == RUNNING or earlier.status is None or earlier.body is None:
        raise Conflict("a request with this Idempotency-Key is still in progress")
    return Replay(earlier.status, json.loads(earlier.body))
