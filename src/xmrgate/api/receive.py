"""``/receive``: payment requests, their status, and their callbacks."""

from __future__ import annotations

import fnmatch
import logging
import uuid
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from xmrgate.api.deps import ServicesDep
from xmrgate.api.idempotency import run_idempotent
from xmrgate.api.schemas import ReceiveRequest, looks_like_address
from xmrgate.api.security import require
from xmrgate.errors import InvalidInput, NotFound, SubaddressTaken
from xmrgate.store.outbox import OutboxEvent
from xmrgate.views import receive_status_json, rfc3339

log = logging.getLogger(__name__)
router = APIRouter()


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _opt_time(value: Any) -> str | None:
    return rfc3339(value) if value is not None else None


def event_json(event: OutboxEvent) -> dict[str, Any]:
    """One callback as ``GET /receive/:address/callbacks`` lists it."""
    return {
        "id": event.id,
        "event": event.kind,
        "tx_hash": event.tx_hash,
        "status": event.status,
        "attempts": event.attempts,
        "last_status": event.last_status,
        "last_error": event.last_error,
        "created_at": rfc3339(event.created_at),
        "last_attempt_at": _opt_time(event.last_attempt_at),
        "next_attempt_at": _opt_time(event.next_attempt_at) if event.status == "pending" else None,
        "delivered_at": _opt_time(event.delivered_at),
    }


def check_callback_host(url: str | None, patterns: list[str]) -> None:
    """Refuse callback URLs whose host matches none of ``--callback-allow``."""
    if url is None or not patterns:
        return
    host = (urlsplit(url).hostname or "").lower()
    if not any(fnmatch.fnmatchcase(host, p) for p in patterns):
        raise InvalidInput(f"callback_url host {host!r} is not allowed by --callback-allow")


@router.post("/receive", dependencies=[require("receive")])
async def create_payment_request(
    body: ReceiveRequest, request: Request, services: ServicesDep
) -> Any:
    """Create a subaddress that expects ``amount`` piconero."""
    check_callback_host(body.callback_url, services.settings.callback_hosts)
    check_callback_host(body.return_url, services.settings.callback_hosts)

    async def create() -> dict[str, Any]:
        description = body.description or ""
        for attempt in range(2):
            address, index = await services.wallet.create_address(label=description[:100])
            try:
                created = await services.payments.create(
                    address=address,
                    subaddr_index=index,
                    amount=body.amount,
                    description=description,
                    callback_url=body.callback_url,
                    return_url=body.return_url,
                )
                break
            except SubaddressTaken:
                # wallet-rpc was killed before saving and forgot the subaddresses it
                # gave us since: move its counter past every index we use, then retry.
                if attempt:
                    raise
                highest = await services.payments.highest_subaddr_index()
                log.warning(
                    "wallet handed out used subaddress %d (it lost state); skipping to %d",
                    index,
                    highest + 1,
                )
                await services.wallet.skip_subaddresses(highest - index + 1)
        return {
            "address": created.address,
            "amount": created.amount,
            "description": created.description,
            "created_at": rfc3339(created.created_at),
        }

    return await run_idempotent(
        request,
        services.idempotency,
        "receive",
        body.model_dump(),
        create,
        moves_money=False,
    )


@router.get("/receive/{address}", dependencies=[require("read")], response_model=None)
async def get_payment_status(
    address: str,
    services: ServicesDep,
    min: Annotated[int | None, Query(ge=0, le=2**31 - 1)] = None,
    max: Annotated[int | None, Query(ge=0, le=2**31 - 1)] = None,
) -> JSONResponse:
    """Totals and transfers of a payment request, from the database (never the wallet)."""
    if min is not None and max is not None and min > max:
        raise InvalidInput(f"min ({min}) must not be greater than max ({max})")
    status = await services.payments.status(address) if looks_like_address(address) else None
    if status is None:
        raise NotFound("no payment request for this address")
    # Built directly: the body is plain JSON types, FastAPI's encoder pass is not needed.
    return JSONResponse(
        receive_status_json(status.request, status.transfers, status.chain_height, min, max)
    )


@router.delete("/receive/{address}", dependencies=[require("receive")])
async def delete_payment_request(address: str, services: ServicesDep) -> dict[str, Any]:
    """Forget a payment request, its transfers and its undelivered callbacks."""
    if not looks_like_address(address) or not await services.payments.delete(address):
        raise NotFound("no payment request for this address")
    return {"address": address, "deleted": True}


@router.get("/receive/{address}/callbacks", dependencies=[require("read")])
async def list_callbacks(address: str, services: ServicesDep) -> dict[str, Any]:
    """Every callback event of a payment request with its delivery record."""
    request = await services.payments.get(address) if looks_like_address(address) else None
    if request is None:
        raise NotFound("no payment request for this address")
    return {"callbacks": [event_json(e) for e in await services.outbox.for_request(request.id)]}


@router.post(
    "/receive/{address}/callbacks/{event_id}/retry",
    status_code=202,
    dependencies=[require("receive")],
)
async def retry_callback(address: str, event_id: str, services: ServicesDep) -> dict[str, Any]:
    """Deliver one callback again, now."""
    request = await services.payments.get(address) if looks_like_address(address) else None
    if request is None:
        raise NotFound("no payment request for this address")
    event = (
        await services.outbox.retry_now(request.id, event_id[:64]) if _is_uuid(event_id) else None
    )
    if event is None:
        raise NotFound("no such callback event for this address")
    services.callbacks.wake()
    return event_json(event)
