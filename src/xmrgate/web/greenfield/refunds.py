"""Refunds over Greenfield: ``POST .../invoices/{id}/refund`` and ``POST .../pull-payments``.

BTCPay answers a refund with a *pull payment* whose ``viewLink`` the buyer opens to claim
the money. Ours is a refund claimed by link (``core/refunds.py``, docs/refunds.md): the
money of the invoice's request is reserved at once, never more than it received in
mined transfers, and the link (``/refund/<token>``) is the pull payment's ``viewLink``.

A pull payment on its own (``POST .../pull-payments``) has no money to give back in our
ledger: a refund is always of a request. The WooCommerce plugin strips XMR from its
payout methods, so BTCPay itself answers it 422 "at least one payout method"; we answer
the same, and name the invoice refund route when XMR is asked.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request

from xmrgate.core.refunds import RefundAsk
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.fiat import Price
from xmrgate.domain.greenfield.amounts import (
    decimal_string,
    parse_amount,
    xmr_string,
    xmr_to_piconero,
)
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.payment_methods import parse_payment_method
from xmrgate.domain.money import PICONERO_PER_XMR
from xmrgate.web.greenfield import PREFIX
from xmrgate.web.greenfield.access import StoreAccess, require_permission
from xmrgate.web.greenfield.invoice_json import received
from xmrgate.web.greenfield.invoices import base_url

router = APIRouter(prefix=PREFIX, include_in_schema=False)
PULL = "btcpay.store.cancreatenonapprovedpullpayments"
Pulling = Annotated[StoreAccess, require_permission(PULL)]
VARIANTS = ("RateThen", "CurrentRate", "Fiat", "OverpaidAmount", "Custom")
MAX_NAME = 100


def _fields(body: object) -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise FieldError("body", "the body must be a JSON object", body)
    return body


def _text(fields: dict[str, Any], name: str) -> str:
    value = fields.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FieldError(name, f"{name} must be a string", value)
    return value


@router.post("/stores/{storeId}/pull-payments")
async def create_pull_payment(access: Pulling, body: Annotated[Any, Body()] = None) -> None:
    """Always 422: without an invoice there is no payment to give back (see the doc)."""
    fields = _fields(body)
    for name in ("payoutMethods", "paymentMethods"):
        methods = fields.get(name) or []
        for i, method in enumerate(methods if isinstance(methods, list) else []):
            try:
                parse_payment_method(method, f"{name}[{i}]")
            except FieldError:
                continue
            raise FieldError(
                name,
                "A pull payment needs an invoice to refund here: use "
                "POST /api/v1/stores/{storeId}/invoices/{invoiceId}/refund",
                method,
            )
    raise FieldError("payoutMethods", "At least one payout method is required")


def _ask(
    fields: dict[str, Any], view_currency: str, view_amount: str, paid: int, due: int
) -> tuple[int | None, Price | None]:
    """(amount in piconero | None, price | None) of the refund the shop asks for; both
    None: all the request received and not refunded yet."""
    variant = fields.get("refundVariant") or "RateThen"
    if variant not in VARIANTS:
        raise FieldError("refundVariant", f"refundVariant must be one of {', '.join(VARIANTS)}")
    if variant == "Custom":
        amount = parse_amount(fields.get("customAmount"), "customAmount")
        currency = _text(fields, "customCurrency").upper() or view_currency
        if currency == "XMR":
            return xmr_to_piconero(amount, "customAmount"), None
        return None, Price(amount, currency)
    if variant == "OverpaidAmount":
        over = paid - due
        if over <= 0:
            raise FieldError("refundVariant", "this invoice was not overpaid")
        return over, None
    if variant in ("CurrentRate", "Fiat") and view_currency != "XMR":
        # The invoice's price in its currency, converted at today's rate.
        return None, Price(Decimal(view_amount), view_currency)
    return None, None  # RateThen (or an invoice in XMR): what it received


@router.post("/stores/{storeId}/invoices/{invoiceId}/refund")
async def refund_invoice(
    request: Request, invoiceId: str, access: Pulling, body: Annotated[Any, Body()] = None
) -> dict[str, Any]:
    """A refund of the invoice's request, claimed at ``viewLink``; 200 (a pull payment)."""
    fields = _fields(body)
    method = fields.get("paymentMethod", fields.get("payoutMethodId"))
    parse_payment_method("XMR-CHAIN" if method is None else method, "paymentMethod")
    gateway = access.gateway
    view = await gateway.greenfield.get(invoiceId)
    asked = view.payment.request
    paid = received(view)
    amount, price = _ask(fields, view.invoice.currency, view.invoice.amount, paid, asked.amount)
    if price is not None and (
        gateway.rates is None or price.currency not in gateway.rates.currencies
    ):
        raise FieldError("customCurrency", f"{price.currency} is not priced on this gateway")
    subtract = fields.get("subtractPercentage")
    if subtract not in (None, 0, "0"):
        percent = parse_amount(subtract, "subtractPercentage")
        if percent > 100:
            raise FieldError("subtractPercentage", "must be between 0 and 100")
        if price is not None:
            price = Price(price.amount * (100 - percent) / 100, price.currency)
        else:
            base = paid - asked.refunded if amount is None else amount
            amount = int(base * (100 - percent) / 100)
    name = _text(fields, "name")[:MAX_NAME] or f"Refund of invoice {invoiceId}"
    try:
        made = await gateway.refunds.create(
            RefundAsk(address=asked.address, amount=amount, price=price, reason=name)
        )
    except InvalidInput as exc:
        raise FieldError("amount", exc.message) from None
    refund = made.refund
    currency = "XMR" if price is None else price.currency
    shown = xmr_string(refund.amount) if price is None else decimal_string(price.amount)
    return {
        "id": refund.id,
        "name": name,
        "description": _text(fields, "description") or None,
        "currency": currency,
        "amount": shown,
        "period": None,
        "BOLT11Expiration": None,
        "autoApproveClaims": False,
        "archived": False,
        # The claim page, as POST /receive/{address}/refunds's claim_url.
        "viewLink": f"{base_url(request).rstrip('/')}/refund/{made.token}",
        "startsAt": int(refund.created_at.timestamp()),
        "expiresAt": int(refund.expires_at.timestamp()),
        # What is reserved for the buyer, in XMR (a refund in fiat is converted once).
        "xmrAmount": decimal_string(Decimal(refund.amount) / PICONERO_PER_XMR),
    }
