"""Refunds: made by the merchant, claimed by the customer, sent or recorded.

Thin adapters over ``core/refunds.py``; the customer's claim page is ``web/refund_page``.
Writing takes the ``refund`` scope (operator keys have it); reading takes ``read``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from xmrgate.core.gateway import Gateway
from xmrgate.core.refunds import MadeRefund, RefundAsk
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.fiat import parse_price
from xmrgate.domain.money import MAX_AMOUNT
from xmrgate.domain.refunds import MAX_LIFE, MAX_REASON, Refund, RefundStatus, refund_json
from xmrgate.web.api.schemas import FiatPrice, NoNul
from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep
from xmrgate.web.public_url import public_base

router = APIRouter(tags=["refunds"])


class RefundCreate(BaseModel):
    """``POST /receive/{address}/refunds``: nothing (all that is left), an amount or a price."""

    model_config = ConfigDict(extra="forbid")

    amount: Annotated[StrictInt | None, Field(gt=0, le=MAX_AMOUNT)] = None
    price: FiatPrice | None = None
    reason: Annotated[StrictStr, Field(max_length=MAX_REASON), NoNul] = ""
    expires_in: Annotated[StrictInt | None, Field(ge=60, le=MAX_LIFE)] = None


class RefundPaid(BaseModel):
    """``POST /refunds/{id}/paid``: the transaction the merchant sent by hand, and its key."""

    model_config = ConfigDict(extra="forbid")

    tx_hash: Annotated[StrictStr, Field(pattern=r"^[0-9a-fA-F]{64}$")]
    # 64 hex characters per key: a tx paying a subaddress among others has several.
    tx_key: Annotated[StrictStr, Field(pattern=r"^(?:[0-9a-fA-F]{64}){1,17}$")]


def claim_url(request: Request, token: str) -> str:
    """``<public url>/refund/<token>``: ``--public-url`` when set, else this request's base."""
    return f"{public_base(request)}/refund/{token}"


def _now() -> datetime:
    return datetime.now(UTC)


def _one(refund: Refund) -> dict[str, Any]:
    return refund_json(refund, _now())


def _requested_by(request: Request) -> str | None:
    return getattr(request.state, "api_key", None) or (
        request.client.host if request.client else None
    )


def refund_ask(
    body: RefundCreate, gateway: Gateway, *, address: str = "", receipt: int | None = None
) -> RefundAsk:
    """The use case's ask from a ``RefundCreate`` body (the fiat currency checked)."""
    price = None if body.price is None else parse_price(body.price.amount, body.price.currency)
    rates = gateway.rates
    if price is not None and rates is not None and price.currency not in rates.currencies:
        raise InvalidInput(
            f"currency {price.currency} is not configured here (--rate-currencies: "
            f"{', '.join(rates.currencies)})"
        )
    return RefundAsk(
        address=address,
        amount=body.amount,
        price=price,
        reason=body.reason,
        expires_in=body.expires_in,
        receipt=receipt,
    )


def made_json(made: MadeRefund, request: Request) -> dict[str, Any]:
    """A new refund as answered once: with its ``claim_url``."""
    return refund_json(made.refund, _now(), claim_url=claim_url(request, made.token))


@router.post("/receive/{address}/refunds", dependencies=[require("refund")])
async def create_refund(
    address: str, body: RefundCreate, request: Request, gateway: GatewayDep
) -> dict[str, Any]:
    """Make a refund of this request (without ``amount``: all it received not yet
    refunded); the answer's ``claim_url`` is shown once (only its hash is stored)."""
    ask = refund_ask(body, gateway, address=address)
    return made_json(await gateway.refunds.create(ask), request)


@router.get("/receive/{address}/refunds", dependencies=[require("read")])
async def refunds_of_request(address: str, gateway: GatewayDep) -> dict[str, Any]:
    """The refunds of one request, oldest first."""
    found = await gateway.refunds.of_request(address)
    return {"refunds": [_one(r) for r in found]}


@router.get("/refunds", dependencies=[require("read")])
async def list_refunds(
    gateway: GatewayDep,
    status: Annotated[RefundStatus | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """This store's refunds: those waiting for approval (claimed) first, then newest."""
    found = await gateway.refunds.listing(status, limit)
    return {"refunds": [_one(r) for r in found]}


@router.get("/refunds/{refund_id}", dependencies=[require("read")])
async def get_refund(refund_id: str, gateway: GatewayDep) -> dict[str, Any]:
    """One refund: its state, amount, the address once claimed, tx hashes once sent."""
    return _one(await gateway.refunds.get(refund_id))


@router.post("/refunds/{refund_id}/send", dependencies=[require("refund")])
async def send_refund(refund_id: str, request: Request, gateway: GatewayDep) -> dict[str, Any]:
    """Send a claimed refund from the store's wallet, once: a second call is 409, an
    unknown outcome 504 (never sent again); a view-only wallet is 409."""
    sent = await gateway.refunds.send(refund_id, requested_by=_requested_by(request))
    return _one(sent)


@router.post("/refunds/{refund_id}/paid", dependencies=[require("refund")])
async def record_paid_refund(
    refund_id: str, body: RefundPaid, gateway: GatewayDep
) -> dict[str, Any]:
    """Record a refund paid by hand; wallet-rpc's ``check_tx_key`` must show the
    transaction paying the claimed address at least the refund's amount (else 400)."""
    paid = await gateway.refunds.record_paid(refund_id, body.tx_hash, body.tx_key)
    return _one(paid)


@router.delete("/refunds/{refund_id}", dependencies=[require("refund")])
async def cancel_refund(refund_id: str, gateway: GatewayDep) -> dict[str, Any]:
    """Withdraw an open or claimed refund (409 once it is being sent or sent)."""
    return _one(await gateway.refunds.cancel(refund_id))
