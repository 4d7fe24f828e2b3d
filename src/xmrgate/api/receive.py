"""``/receive``: payment requests, their status, and their callbacks."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from xmrgate.api.deps import ServicesDep
from xmrgate.api.schemas import ReceiveRequest
from xmrgate.errors import InvalidInput, NotFound
from xmrgate.store.outbox import OutboxEvent
from xmrgate.views import receive_status_json, rfc3339

router = APIRouter()

MAX_ADDRESS_LENGTH = 128


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


@router.post("/receive")
async def create_payment_request(body: ReceiveRequest, services: ServicesDep) -> dict[str, Any]:
    """Create a subaddress that expects ``amount`` piconero."""
    description = body.description or ""
    address, index = await services.wallet.create_address(label=description[:100])
    request = await services.payments.create(
        address=address,
        subaddr_index=index,
        amount=body.amount,
        description=description,
        callback_url=body.callback_url,
        return_url=body.return_url,
    )
    return {
        "address": request.address,
        "amount": request.amount,
        "description": request.description,
        "created_at": rfc3339(request.created_at),
    }


@router.get("/receive/{address}")
async def get_payment_status(
    address: str,
    services: ServicesDep,
    min: Annotated[int | None, Query(ge=0, le=2**31 - 1)] = None,
    max: Annotated[int | None, Query(ge=0, le=2**31 - 1)] = None,
) -> dict[str, Any]:
    """Totals and transfers of a payment request, from the database (never the wallet)."""
    if min is not None and max is not None and min > max:
        raise InvalidInput(f"min ({min}) must not be greater than max ({max})")
    status = await services.payments.status(address) if len(address) <= MAX_ADDRESS_LENGTH else None
    if status is None:
        raise NotFound("no payment request for this address")
    return receive_status_json(status.request, status.transfers, status.chain_height, min, max)


@router.delete("/receive/{address}")
async def delete_payment_request(address: str, services: ServicesDep) -> dict[str, Any]:
    """Forget a payment request, its transfers and its undelivered callbacks."""
    if len(address) > MAX_ADDRESS_LENGTH or not await services.payments.delete(address):
        raise NotFound("no payment request for this address")
    return {"address": address, "deleted": True}


@router.get("/receive/{address}/callbacks")
async def list_callbacks(address: str, services: ServicesDep) -> dict[str, Any]:
    """Every callback event of a payment request with its delivery record."""
    request = await services.payments.get(address) if len(address) <= MAX_ADDRESS_LENGTH else None
    if request is None:
        raise NotFound("no payment request for this address")
    return {"callbacks": [event_json(e) for e in await services.outbox.for_request(request.id)]}


@router.post("/receive/{address}/callbacks/{event_id}/retry", status_code=202)
async def retry_callback(address: str, event_id: str, services: ServicesDep) -> dict[str, Any]:
    """Deliver one callback again, now."""
    request = await services.payments.get(address) if len(address) <= MAX_ADDRESS_LENGTH else None
    if request is None:
        raise NotFound("no payment request for this address")
    event = await services.outbox.retry_now(request.id, event_id[:64])
    if event is None:
        raise NotFound("no such callback event for this address")
    services.callbacks.wake()
    return event_json(event)
