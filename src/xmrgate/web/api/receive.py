"""``/receive``: payment requests, their status, and their callbacks (thin adapters)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.routing import Route

from xmrgate.core.payment_requests import NewPaymentRequest
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.fiat import parse_price
from xmrgate.domain.payloads import created_json, receive_status_json, rfc3339
from xmrgate.domain.records import OutboxEvent
from xmrgate.web.api.idempotency import idempotent
from xmrgate.web.api.invoice_docs import CreatedRequest, ReceiveStatus
from xmrgate.web.api.schemas import ReceiveRequest
from xmrgate.web.api.security import check_scope, require
from xmrgate.web.api.status_params import STATUS_PARAMETERS, height_bound
from xmrgate.web.deps import GatewayDep, get_gateway

router = APIRouter()


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
        # Every try, oldest first: when, the HTTP answer (null: none came), the error.
        "tries": [
            {
                "at": rfc3339(t.at),
                "delivered": t.delivered,
                "status_code": t.status_code,
                "error": t.error,
            }
            for t in event.tries
        ],
    }


@router.post(
    "/receive",
    dependencies=[require("receive")],
    responses={200: {"model": CreatedRequest, "description": "The new payment request"}},
)
async def create_payment_request(
    body: ReceiveRequest, request: Request, gateway: GatewayDep
) -> Any:
    """Create a subaddress that expects ``amount`` piconero."""

    price = None if body.price is None else parse_price(body.price.amount, body.price.currency)

    async def create(ref: str | None) -> dict[str, Any]:
        created = await gateway.payment_requests.create(
            NewPaymentRequest(
                amount=body.amount or 0,
                price=price,
                description=body.description or "",
                callback_url=body.callback_url,
                return_url=body.return_url,
                expires_in=body.expires_in,
                underpay_tolerance=body.underpay_tolerance,
                idempotency_ref=ref,
            )
        )
        return created_json(created)

    async def recover(ref: str) -> dict[str, Any] | None:
        created = await gateway.payment_requests.by_idempotency_ref(ref)
        return None if created is None else created_json(created)

    return await idempotent(
        request, gateway, "receive", body.fingerprint(), create, money=False, recover=recover
    )


@router.get(
    "/receive/{address}",
    response_model=None,
    responses={200: {"model": ReceiveStatus, "description": "Totals, status, transfers"}},
    openapi_extra={"parameters": STATUS_PARAMETERS},
)
async def get_payment_status(request: Request) -> JSONResponse:
    """Totals and transfers of a payment request, from the database (never the wallet)."""
    # The hottest read: its parameters are read here, in the same order and with the
    # same rules as FastAPI would (scope, store, then ?min/?max), instead of through
    # FastAPI's dependency solving, a third of this read's CPU.
    check_scope(request, "read")
    gateway = await get_gateway(request)
    low, high = height_bound(request, "min"), height_bound(request, "max")
    if low is not None and high is not None and low > high:
        raise InvalidInput(f"min ({low}) must not be greater than max ({high})")
    status = await gateway.payment_requests.status(request.path_params["address"])
    # Built directly: the body is plain JSON types, FastAPI's encoder pass is not needed.
    return JSONResponse(
        receive_status_json(
            status.request, status.transfers, status.chain_height, low, high, now=time.time()
        )
    )


def status_route() -> Route:
    """``get_payment_status`` as a plain Starlette route, for the app to try first.

    FastAPI's route above stays for the documentation (its parameters are declared there);
    a request is answered by this one: FastAPI's route machinery around an endpoint that
    takes only the request (its matching through the included routers, the request
    handler, the dependency pass) was 35 us of this read's 80 us in the app.
    GET only, as FastAPI's route: Starlette would add HEAD.
    """
    route = Route("/receive/{address}", get_payment_status, methods=["GET"])
    route.methods = {"GET"}
    return route


@router.delete("/receive/{address}", dependencies=[require("receive")])
async def delete_payment_request(address: str, gateway: GatewayDep) -> dict[str, Any]:
    """Forget a payment request that has received nothing (409 once funds arrived)."""
    await gateway.payment_requests.delete(address)
    return {"address": address, "deleted": True}


@router.get("/receive/{address}/callbacks", dependencies=[require("read")])
async def list_callbacks(address: str, gateway: GatewayDep) -> dict[str, Any]:
    """Every callback event of a payment request with its delivery record."""
    return {"callbacks": [event_json(e) for e in await gateway.payment_requests.callbacks(address)]}


@router.post(
    "/receive/{address}/callbacks/{event_id}/retry",
    status_code=202,
    dependencies=[require("receive")],
)
async def retry_callback(address: str, event_id: str, gateway: GatewayDep) -> dict[str, Any]:
    """Deliver one callback again, now."""
    return event_json(await gateway.payment_requests.retry_callback(address, event_id))
