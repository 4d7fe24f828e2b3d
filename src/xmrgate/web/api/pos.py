"""``/pos``: the point-of-sale screen's API (scope ``pos``).

A till is a shared device, so its key holds ``pos`` alone: it may make a sale of its
store and follow it, nothing else (no ``/receive``, no payouts, no list of requests).

- ``GET /pos/config``: the store's name and accent, the fiat currencies it may price in,
  and ``confirmations``: the fewest its screens wait for before "Paid" (the store's
  ``pos_confirmations``; a device may ask for more, never fewer).
- ``POST /pos/sales``: a payment request of the key's store for ``amount`` piconero or
  a fiat ``price``, with an optional ``note`` (its description); it expires in 15
  minutes (for a fiat price: the rate lock, when shorter).
- ``GET /pos/sales/{address}``: what the till shows, from stored state only (never the
  wallet): the checkout's own state (``web/checkout/view.py``), plus ``seen`` (a
  transfer in the pool or mined: the screen says so at zero confirmations whatever
  ``--zero-conf`` says, which governs callbacks only) and ``complete`` (the total received
  covers the sale; the screen then waits for the device's confirmations).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator

from xmrgate.core.payment_requests import NewPaymentRequest
from xmrgate.domain.fiat import parse_price
from xmrgate.domain.money import MAX_AMOUNT, piconero_to_xmr
from xmrgate.domain.payloads import optional_rfc3339, price_json, rfc3339
from xmrgate.domain.records import PaymentRequest, PaymentStatus
from xmrgate.domain.stores import DEFAULT_POS_CONFIRMATIONS
from xmrgate.web.api.idempotency import idempotent
from xmrgate.web.api.schemas import FiatPrice, NoNul
from xmrgate.web.api.security import require
from xmrgate.web.checkout.page import current_uri
from xmrgate.web.checkout.qr import payment_uri
from xmrgate.web.checkout.view import payment_state, store_brand
from xmrgate.web.deps import GatewayDep

router = APIRouter(tags=["point of sale"])

# A sale is paid at the counter: after 15 minutes the customer has left (and a fiat
# price's rate would be stale).
SALE_EXPIRES_IN = 15 * 60
MAX_NOTE = 200
POS = [require("pos")]


class NewSale(BaseModel):
    """Body of ``POST /pos/sales``: exactly one of ``amount`` and ``price``."""

    # Nothing else: a till's key sets no callback, no return URL, no expiry.
    model_config = ConfigDict(extra="forbid")

    amount: Annotated[StrictInt | None, Field(gt=0, le=MAX_AMOUNT)] = None
    price: FiatPrice | None = None
    note: Annotated[StrictStr | None, Field(max_length=MAX_NOTE), NoNul] = None

    @model_validator(mode="after")
    def _one_amount(self) -> NewSale:
        if (self.amount is None) == (self.price is None):
            raise ValueError("give exactly one of amount (piconero) and price (fiat)")
        return self


def sale_json(found: PaymentStatus) -> dict[str, Any]:
    """The state of one sale for the till (``GET /pos/sales/{address}``)."""
    sale = found.request
    state = payment_state(found)
    return {
        "address": sale.address,
        "amount": sale.amount,
        "amount_xmr": piconero_to_xmr(sale.amount),
        **price_json(sale),
        "note": sale.description,
        "created_at": rfc3339(sale.created_at),
        "expires_at": optional_rfc3339(sale.expires_at),
        "seconds_left": state.seconds_left,
        # The checkout's state (waiting, seen, paid, expired, late) and the invoice status.
        "state": state.state,
        "status": state.status.value,
        "received": state.received,
        "received_xmr": piconero_to_xmr(state.received),
        "due": state.due,
        "due_xmr": piconero_to_xmr(state.due),
        "seen": state.received > 0,
        "confirmations": state.confirmations,
        "complete": state.received > 0 and state.due == 0,
        # What the QR code asks for now: the rest after a partial payment.
        "uri": current_uri(sale.address, sale.amount, sale.description, state),
    }


def store_confirmations(request: Request, store_id: str) -> int:
    """The store's ``pos_confirmations`` as the registry last read it (1 before the
    first read, as the screens did before the store had a say)."""
    store = request.app.state.stores.store(store_id)
    return DEFAULT_POS_CONFIRMATIONS if store is None else store.pos_confirmations


@router.get("/pos/config", dependencies=POS)
async def pos_config(request: Request, gateway: GatewayDep) -> dict[str, Any]:
    """The store the till sells for (name, accent), the fiat currencies it may use and
    the fewest confirmations its screens wait for before "Paid"."""
    brand = store_brand(request, gateway.store_id)
    currencies = list(gateway.rates.currencies) if gateway.rates is not None else []
    return {
        "store": gateway.store_id,
        "name": brand.name,
        "accent": brand.accent,
        "currencies": currencies,
        "confirmations": store_confirmations(request, gateway.store_id),
    }


@router.post("/pos/sales", dependencies=POS)
async def create_sale(body: NewSale, request: Request, gateway: GatewayDep) -> Any:
    """A payment request of the key's store, expiring in 15 minutes."""
    price = None if body.price is None else parse_price(body.price.amount, body.price.currency)
    expires_in = SALE_EXPIRES_IN
    if price is not None:
        # A fiat-priced request lives at most as long as its rate is locked.
        expires_in = min(expires_in, getattr(request.app.state, "rate_lock", expires_in))

    async def create(ref: str | None) -> dict[str, Any]:
        made = await gateway.payment_requests.create(
            NewPaymentRequest(
                amount=body.amount or 0,
                price=price,
                description=body.note or "",
                expires_in=expires_in,
                idempotency_ref=ref,
            )
        )
        return sale_answer(made)

    async def recover(ref: str) -> dict[str, Any] | None:
        made = await gateway.payment_requests.by_idempotency_ref(ref)
        return None if made is None else sale_answer(made)

    return await idempotent(
        request,
        gateway,
        "pos",
        body.model_dump(exclude_none=True),
        create,
        money=False,
        recover=recover,
    )


def sale_answer(made: PaymentRequest) -> dict[str, Any]:
    """The answer of ``POST /pos/sales``: the request made for the sale."""
    return {
        "address": made.address,
        "amount": made.amount,
        "amount_xmr": piconero_to_xmr(made.amount),
        **price_json(made),
        "note": made.description,
        "uri": payment_uri(made.address, made.amount, made.description),
        "expires_at": optional_rfc3339(made.expires_at),
    }


@router.get("/pos/sales/{address}", dependencies=POS)
async def get_sale(address: str, gateway: GatewayDep) -> dict[str, Any]:
    """A sale of the key's store (404 for any other address), from the database only."""
    return sale_json(await gateway.payment_requests.status(address))
