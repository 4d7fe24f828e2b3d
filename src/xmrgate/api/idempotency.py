"""``Idempotency-Key`` handling for POST /receive and POST /transfer.

The first request with a key runs and its answer (success or error) is stored
with a hash of its body. A repeat with the same key and body gets that answer
(header ``Idempotent-Replayed: true``) without touching the wallet; the same key
with another body is 422; a repeat while the first still runs is 409.

Only failures that provably changed nothing (the wallet was unreachable before
the request reached it, or the database failed before the wallet was asked)
release the key so that a retry runs again. A payout whose outcome is unknown
(timeout) keeps its 504 answer: a retry must never send twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from xmrgate.api.errors import status_of
from xmrgate.errors import (
    Conflict,
    DatabaseUnavailable,
    InvalidInput,
    Unprocessable,
    WalletTimeout,
    WalletUnavailable,
    XmrgateError,
)
from xmrgate.store.idempotency import RUNNING, IdempotencyStore

HEADER = "idempotency-key"
MAX_KEY_LENGTH = 255


def body_hash(body: Any) -> str:
    """Hash of the request's meaning: canonical JSON, so key order and spacing don't matter."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _nothing_happened(exc: XmrgateError) -> bool:
    if isinstance(exc, WalletTimeout):
        return False
    if isinstance(exc, WalletUnavailable):
        return not exc.request_sent
    return isinstance(exc, DatabaseUnavailable)


async def run_idempotent(
    request: Request,
    store: IdempotencyStore,
    endpoint: str,
    body: Any,
    handler: Callable[[], Awaitable[dict[str, Any]]],
    *,
    moves_money: bool,
) -> Any:
    """Run ``handler`` at most once per Idempotency-Key (no key: just run it).

    ``moves_money``: after an unexpected crash the key stays claimed (409 on
    retry) rather than risk a second payout; otherwise it is released.
    """
    key = request.headers.get(HEADER)
    if key is None:
        return await handler()
    key = key.strip()
    if not key or len(key) > MAX_KEY_LENGTH:
        raise InvalidInput(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters")
    digest = body_hash(body)
    earlier = await store.claim(endpoint, key, digest)
    if earlier is not None:
        if earlier.request_hash != digest:
            raise Unprocessable("this Idempotency-Key was used with a different request body")
        if earlier.state == RUNNING or earlier.status is None or earlier.body is None:
            raise Conflict("a request with this Idempotency-Key is still in progress")
        return JSONResponse(
            json.loads(earlier.body),
            status_code=earlier.status,
            headers={"Idempotent-Replayed": "true"},
        )
    try:
        result = await handler()
    except XmrgateError as exc:
        if _nothing_happened(exc):
            await store.release(endpoint, key)
        else:
            error: dict[str, Any] = {"status": status_of(exc)}
            if exc.code is not None:
                error["code"] = exc.code
            error["message"] = exc.message
            await store.complete(endpoint, key, status_of(exc), json.dumps(error))
        raise
    except BaseException:
        # Unexpected failure or cancellation: we cannot tell what happened. A payout
        # keeps its key claimed so that a retry gets 409 rather than paying twice.
        if not moves_money:
            await store.release(endpoint, key)
        raise
    await store.complete(endpoint, key, 200, json.dumps(result))
    return result
