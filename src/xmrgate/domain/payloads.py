"""JSON shapes of the spec, built from ledger values. Shared by the API and the callbacks
so that ``GET /receive/:address`` and a callback payload never disagree."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from xmrgate.domain.fiat import Quote
from xmrgate.domain.invoice import (
    Invoice,
    InvoiceEvent,
    InvoiceStatus,
    due,
    is_complete,
    status_of,
    unix,
)
from xmrgate.domain.ledger import Coverage, Transfer, coverage, visible_transfers


class RequestLike(Protocol):
    """What the views need of a payment request."""

    @property
    def address(self) -> str: ...
    @property
    def amount(self) -> int: ...
    @property
    def description(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def underpay_tolerance(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def price(self) -> Quote | None: ...


def refunded_json(request: RequestLike) -> dict[str, Any]:
    """``{"refunded": piconero}`` once refunds reserve part of what it received,
    else nothing (the shape MoneroPay clients know)."""
    refunded = getattr(request, "refunded", 0)
    return {"refunded": refunded} if refunded else {}


def link_field(request: RequestLike) -> dict[str, Any]:
    """``{"link": "ln_..."}`` for a request made by a payment link, else
    nothing: a request made through the API keeps the shape MoneroPay clients know."""
    link = getattr(request, "link", None)
    return {"link": link} if link else {}


def price_json(request: RequestLike) -> dict[str, Any]:
    """``{"price": ...}`` for a fiat-priced request, else nothing: a request priced in
    piconero keeps the shape MoneroPay clients know, key for key."""
    return {} if request.price is None else {"price": request.price.to_json()}


def invoice_of(request: RequestLike) -> Invoice:
    """The request's terms and recorded status, as ``domain.invoice`` reads them."""
    return Invoice(
        expected=request.amount,
        tolerance=request.underpay_tolerance,
        expires_at=unix(request.expires_at),
        recorded=InvoiceStatus(request.status),
    )


def optional_rfc3339_unix(value: float | None) -> str | None:
    """``rfc3339`` of a unix time, None stays None."""
    return None if value is None else rfc3339(datetime.fromtimestamp(value, UTC))


def optional_rfc3339(value: datetime | None) -> str | None:
    """``rfc3339`` of a datetime, None stays None (``expires_at``)."""
    return None if value is None else rfc3339(value)


def rfc3339(value: datetime) -> str:
    """RFC 3339 UTC with microseconds, e.g. ``2026-11-21T08:18:00.123456Z``."""
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def rfc3339_seconds(unix: int) -> str:
    """RFC 3339 UTC to the second from a unix time, e.g. ``2026-11-21T08:18:00Z``."""
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def transaction_json(transfer: Transfer, chain_height: int) -> dict[str, Any]:
    """One incoming transaction as the spec shapes it."""
    return {
        "amount": transfer.amount,
        "confirmations": transfer.confirmations(chain_height),
        "double_spend_seen": transfer.double_spend_seen,
        "fee": transfer.fee,
        "height": transfer.height,
        "timestamp": rfc3339_seconds(transfer.timestamp),
        "tx_hash": transfer.tx_hash,
        "unlock_time": transfer.unlock_time,
        "locked": transfer.locked,
    }


def created_json(request: RequestLike) -> dict[str, Any]:
    """The answer to ``POST /receive``: the spec's receive record, plus the invoice fields.

    ``amount`` stays an integer (MoneroPay clients read it so); what is due is ``due``.
    """
    return {
        **record_json(request),
        "underpay_tolerance": request.underpay_tolerance,
        "status": request.status,
        "due": due(invoice_of(request), 0),
    }


def record_json(request: RequestLike) -> dict[str, Any]:
    """The receive record (address, amount, description, created_at) and ``expires_at``."""
    return {
        "address": request.address,
        "amount": request.amount,
        "description": request.description,
        "created_at": rfc3339(request.created_at),
        "expires_at": optional_rfc3339(request.expires_at),
        **price_json(request),
        **link_field(request),
    }


def _amount_json(cov: Coverage, invoice: Invoice) -> dict[str, Any]:
    return {
        "expected": cov.expected,
        "covered": {"total": cov.total, "unlocked": cov.unlocked},
        "due": due(invoice, cov.total),
    }


def receive_status_json(
    request: RequestLike,
    transfers: list[Transfer],
    chain_height: int,
    min_height: int | None = None,
    max_height: int | None = None,
    *,
    now: float,
) -> dict[str, Any]:
    """The body of ``GET /receive/:address``; totals always cover every transfer.

    ``expires_at``, ``status`` and ``amount.due`` are additions (``docs/invoices.md``).
    """
    invoice = invoice_of(request)
    cov = coverage(request.amount, transfers)
    shown = visible_transfers(transfers, min_height, max_height)
    return {
        "amount": _amount_json(cov, invoice),
        "complete": is_complete(invoice, cov.unlocked),
        "description": request.description,
        "created_at": rfc3339(request.created_at),
        "transactions": [transaction_json(t, chain_height) for t in shown],
        "expires_at": optional_rfc3339(request.expires_at),
        "status": status_of(invoice, transfers, now).value,
        **price_json(request),
        **refunded_json(request),
        **link_field(request),
    }


def callback_json(
    request: RequestLike, address: str, event: InvoiceEvent, chain_height: int
) -> dict[str, Any]:
    """The body of a callback (and feed entry): the spec's payload at the moment of the event.

    ``event``, ``address``, ``status``, ``expires_at`` and ``amount.due`` are additions;
    MoneroPay clients ignore unknown fields. ``transaction`` is null only in
    ``request.expired``, which only requests made with ``expires_in`` get.
    """
    invoice = invoice_of(request)
    return {
        "amount": _amount_json(event.coverage, invoice),
        "complete": is_complete(invoice, event.coverage.unlocked),
        "description": request.description,
        "created_at": rfc3339(request.created_at),
        "transaction": (
            None if event.transfer is None else transaction_json(event.transfer, chain_height)
        ),
        "event": event.kind,
        "address": address,
        "status": event.status.value,
        "expires_at": optional_rfc3339(request.expires_at),
        **price_json(request),
        **link_field(request),
    }
