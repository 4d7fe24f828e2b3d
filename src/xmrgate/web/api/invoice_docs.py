"""Response shapes of the receive and invoice endpoints, for the OpenAPI document only.

The routes build their JSON with ``domain/payloads.py`` (one source for answers and
callbacks); these models describe it in ``/openapi.json`` and ``/docs``
(``responses={200: {"model": ...}}``), nothing validates answers against them.
``tests/unit/test_invoice_api.py`` checks that a real answer has exactly these fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from xmrgate.domain.invoice import InvoiceStatus

STATUS_DOC = (
    "waiting: nothing received; partial: something, below expected - tolerance; paid: "
    "reached it in time, not unlocked; complete: unlocked reached it in time (final); "
    "expired: expires_at passed first; paid_late: reached it only after expires_at"
)
EXPIRES_DOC = "RFC 3339 UTC; null for a request made without expires_in"


class Covered(BaseModel):
    """Received so far (piconero)."""

    total: int = Field(description="pool and mined transfers, not gone or double-spent")
    unlocked: int = Field(description="transfers with 10 confirmations")


class Amount(BaseModel):
    """Expected and received amounts (piconero)."""

    expected: int
    covered: Covered
    due: int = Field(description="max(0, expected - underpay_tolerance - covered.total)")


class ReceiveStatus(BaseModel):
    """``GET /receive/{address}``: the spec's receive status plus the invoice fields."""

    amount: Amount
    complete: bool = Field(description="covered.unlocked >= expected - underpay_tolerance")
    description: str
    created_at: str
    transactions: list[dict[str, Any]]
    expires_at: str | None = Field(description=EXPIRES_DOC)
    status: InvoiceStatus = Field(description=STATUS_DOC)


class CreatedRequest(BaseModel):
    """``POST /receive``: the spec's receive record plus the invoice fields."""

    address: str
    amount: int = Field(description="expected piconero (an integer, as MoneroPay answers)")
    description: str
    created_at: str
    expires_at: str | None = Field(description=EXPIRES_DOC)
    underpay_tolerance: int
    status: InvoiceStatus = Field(description=STATUS_DOC)
    due: int = Field(description="what must still arrive: amount - underpay_tolerance")


class ListedRequest(BaseModel):
    """One request in ``GET /receive``."""

    address: str
    amount: int
    description: str
    created_at: str
    expires_at: str | None = Field(description=EXPIRES_DOC)
    status: InvoiceStatus = Field(description=STATUS_DOC)


class RequestList(BaseModel):
    """A page of requests, newest first."""

    requests: list[ListedRequest]
    next_cursor: str | None = Field(description="pass as cursor for the next page; null: last")


class FeedEvent(BaseModel):
    """One event, as its callback carries it (also for requests without callback_url)."""

    seq: int = Field(description="increasing; also the X-Xmrgate-Event-Seq header of callbacks")
    address: str
    event: str = Field(
        description="transfer.pool, transfer.confirmed, transfer.unlocked, transfer.gone, "
        "request.expired"
    )
    payload: dict[str, Any] = Field(description="the callback body (docs/callbacks.md)")


class EventPage(BaseModel):
    """Events after ``after``, oldest first."""

    events: list[FeedEvent]
    next_after: int | None = Field(description="the last seq of this page; null: none newer")
