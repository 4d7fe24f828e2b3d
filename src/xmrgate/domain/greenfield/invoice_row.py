"""The row Greenfield adds to a payment request, before and after it exists.

A Greenfield invoice IS a payment request plus one row of ``greenfield_invoices``. The
row is written in the transaction that inserts its request (one commit: either fails,
neither is written), so it is made before the request has an id: ``InvoiceRow`` is the
row without it, handed to ``PaymentRequests.create``; the store writes it with the new
request's id, and ``GreenfieldInvoice`` is the row as stored and read back.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

from xmrgate.domain.greenfield.speed import SpeedPolicy
from xmrgate.domain.greenfield.states import Status


@dataclass(frozen=True, slots=True)
class InvoiceRow:
    """What Greenfield adds to a payment request, before the request is written."""

    id: str
    store_id: str
    order_id: str | None
    currency: str
    amount: str
    metadata: str
    speed_policy: SpeedPolicy | None
    confirmations: int
    monitoring_minutes: int
    redirect_url: str | None
    redirect_automatically: bool
    marked: Status | None
    created_at: datetime

    def of_request(self, request_id: int) -> GreenfieldInvoice:
        """The row as stored beside the request ``request_id``."""
        own = {f.name: getattr(self, f.name) for f in fields(InvoiceRow)}
        return GreenfieldInvoice(**own, request_id=request_id)


@dataclass(frozen=True, slots=True)
class GreenfieldInvoice(InvoiceRow):
    """The row as stored: beside the payment request ``request_id``."""

    request_id: int
