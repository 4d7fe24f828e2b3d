"""The HTTP face of ``core/idempotency.py``: the header, the caller, the replayed answer."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from xmrgate.core.gateway import Gateway
from xmrgate.core.idempotency import Handler, Recover, Replay
from xmrgate.domain.stores import DEFAULT_STORE
from xmrgate.web.api.errors import error_answer

HEADER = "idempotency-key"
REPLAYED_HEADER = "Idempotent-Replayed"


async def idempotent(
    request: Request,
    gateway: Gateway,
    endpoint: str,
    body: Any,
    handler: Handler,
    *,
    money: bool,
    recover: Recover | None = None,
) -> Any:
    """Run ``handler`` once per Idempotency-Key and API key; replay the stored answer.

    ``handler`` gets the claim's reference to record with what it makes; ``recover``
    answers from what was made under a reference, when the claim's process died.
    """
    # Keys are per store too: one Idempotency-Key of an operator on two stores is two payouts.
    scoped = endpoint if gateway.store_id == DEFAULT_STORE else f"{endpoint}@{gateway.store_id}"
    result = await gateway.idempotency.run(
        endpoint=scoped,
        caller=getattr(request.state, "api_key", None),
        key=request.headers.get(HEADER),
        body=body,
        handler=handler,
        error_answer=error_answer,
        moves_money=money,
        recover=recover,
    )
    if isinstance(result, Replay):
        return JSONResponse(
            result.body, status_code=result.status, headers={REPLAYED_HEADER: "true"}
        )
    return result
