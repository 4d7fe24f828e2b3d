"""The body of ``POST /api/v1/stores/{s}/invoices`` read into a ``NewInvoice``.

Read by hand from the JSON object rather than by a pydantic model: BTCPay reads
leniently (a number or a string for ``amount``, ``null`` for every optional key, which
the PHP client always sends, keys it does not know ignored), and each refusal must be a
422 naming Greenfield's path (``checkout.paymentMethods[0]``). The first refused field
is answered.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from xmrgate.core.greenfield_invoices import XMR, NewInvoice
from xmrgate.domain.greenfield.amounts import parse_amount
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.payment_methods import parse_payment_methods
from xmrgate.domain.greenfield.speed import parse_speed_policy

# http(s) only: a redirect is where the buyer's browser goes (never javascript: etc.).
_SCHEMES = ("http://", "https://")
MAX_URL = 2048


def _object(value: object, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FieldError(path, f"{path} must be a JSON object", value)
    return value


def _minutes(value: object, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise FieldError(path, f"{path} must be a whole number of minutes", value)
    return int(value)


def _tolerance(value: object) -> Decimal | None:
    path = "checkout.paymentTolerance"
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise FieldError(path, "paymentTolerance must be a number between 0 and 100", value)
    try:
        found = Decimal(str(value))
    except ArithmeticError:
        raise FieldError(
            path, "paymentTolerance must be a number between 0 and 100", value
        ) from None
    if not found.is_finite():
        raise FieldError(path, "paymentTolerance must be a number between 0 and 100", value)
    return found


def _redirect(value: object) -> str | None:
    path = "checkout.redirectURL"
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_URL:
        raise FieldError(path, f"redirectURL must be a URL of at most {MAX_URL} characters")
    if not value.lower().startswith(_SCHEMES) or any(c.isspace() for c in value):
        raise FieldError(path, "redirectURL must be an http or https URL", value)
    return value


def _order_id(metadata: dict[str, Any]) -> str | None:
    found = metadata.get("orderId")
    if found is None:
        return None
    if isinstance(found, bool) or not isinstance(found, str | int):
        raise FieldError("metadata.orderId", "orderId must be a string", found)
    return str(found)


def _currency(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FieldError("currency", "currency is required (XMR or a configured fiat currency)")
    return value.strip().upper()


def parse_new_invoice(body: object) -> NewInvoice:
    """The invoice a shop asks for; a ``FieldError`` (422) at the first wrong field."""
    fields = _object(body, "body")
    currency = _currency(fields.get("currency"))
    raw_amount = fields.get("amount")
    if raw_amount is None:
        # A top-up (any amount): only in XMR, a fiat price needs an amount to convert.
        if currency != XMR:
            raise FieldError("amount", "amount is required for a price in fiat")
        amount = Decimal(0)
    else:
        amount = parse_amount(raw_amount, "amount")
    metadata = _object(fields.get("metadata"), "metadata")
    checkout = _object(fields.get("checkout"), "checkout")
    parse_payment_methods(checkout.get("paymentMethods"), "checkout.paymentMethods")
    redirect_automatically = checkout.get("redirectAutomatically")
    if redirect_automatically is not None and not isinstance(redirect_automatically, bool):
        raise FieldError(
            "checkout.redirectAutomatically",
            "redirectAutomatically must be true or false",
            redirect_automatically,
        )
    order_id = _order_id(metadata)
    return NewInvoice(
        amount=amount,
        currency=currency,
        order_id=order_id,
        metadata=json.dumps(metadata, ensure_ascii=False, separators=(",", ":")),
        speed_policy=parse_speed_policy(checkout.get("speedPolicy")),
        expiration_minutes=_minutes(
            checkout.get("expirationMinutes"), "checkout.expirationMinutes"
        ),
        monitoring_minutes=_minutes(
            checkout.get("monitoringMinutes"), "checkout.monitoringMinutes"
        ),
        payment_tolerance=_tolerance(checkout.get("paymentTolerance")),
        redirect_url=_redirect(checkout.get("redirectURL")),
        redirect_automatically=bool(redirect_automatically),
        description=f"Order {order_id}" if order_id else "",
    )
