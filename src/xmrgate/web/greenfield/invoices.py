"""``/api/v1/stores/{storeId}/invoices``: make, read, list and mark invoices (§1.D, §2.1-2.3).

Thin routes over ``core.greenfield_invoices.GreenfieldInvoices`` (the store's Gateway
part): the body is read by ``invoice_body``, the answer shaped by ``invoice_json``.
200 on every success, the create included (the PHP client refuses a 201).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request

from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.states import Status, parse_mark
from xmrgate.web.greenfield import PREFIX
from xmrgate.web.greenfield.access import StoreAccess, require_permission
from xmrgate.web.greenfield.invoice_body import parse_new_invoice
from xmrgate.web.greenfield.invoice_json import invoice_data, payment_methods

router = APIRouter(prefix=PREFIX, include_in_schema=False)
VIEW = "btcpay.store.canviewinvoices"
CREATE = "btcpay.store.cancreateinvoice"
MODIFY = "btcpay.store.canmodifyinvoices"
MAX_TAKE = 500
Viewing = Annotated[StoreAccess, require_permission(VIEW)]
Creating = Annotated[StoreAccess, require_permission(CREATE)]
Modifying = Annotated[StoreAccess, require_permission(MODIFY)]


def base_url(request: Request) -> str:
    """Where the buyer's links point: ``--public-url`` if set, else this request's host."""
    public: str | None = getattr(request.app.state, "public_url", None)
    return public or str(request.base_url)


@router.post("/stores/{storeId}/invoices")
async def create_invoice(
    request: Request,
    access: Creating,
    body: Annotated[Any, Body()] = None,
) -> dict[str, Any]:
    """A new invoice: a payment request of the store, priced in XMR or a configured fiat."""
    view = await access.gateway.greenfield.create(parse_new_invoice(body))
    return invoice_data(view, base_url(request))


@router.get("/stores/{storeId}/invoices")
async def list_invoices(
    request: Request,
    access: Viewing,
    order_id: Annotated[list[str] | None, Query(alias="orderId")] = None,
    status: Annotated[list[str] | None, Query()] = None,
    skip: Annotated[int, Query(ge=0)] = 0,
    take: Annotated[int, Query(ge=1, le=MAX_TAKE)] = 50,
) -> list[dict[str, Any]]:
    """The store's invoices, newest first; by ``orderId`` and ``status`` when given."""
    wanted: list[Status] = []
    for i, name in enumerate(status or []):
        match = next((s for s in Status if s.value.lower() == name.strip().lower()), None)
        if match is None:
            raise FieldError(f"status[{i}]", f"unknown invoice status {name!r}", name)
        wanted.append(match)
    views = await access.gateway.greenfield.listing(
        tuple(order_id or ()), tuple(wanted), skip, take
    )
    base = base_url(request)
    return [invoice_data(view, base) for view in views]


@router.get("/stores/{storeId}/invoices/{invoiceId}")
async def get_invoice(request: Request, invoiceId: str, access: Viewing) -> dict[str, Any]:
    """One invoice of the store (404 ``invoice-not-found`` for another store's)."""
    view = await access.gateway.greenfield.get(invoiceId)
    return invoice_data(view, base_url(request))


@router.get("/stores/{storeId}/invoices/{invoiceId}/payment-methods")
async def get_payment_methods(invoiceId: str, access: Viewing) -> list[dict[str, Any]]:
    """The invoice's payment method (XMR-CHAIN) with its payments."""
    view = await access.gateway.greenfield.get(invoiceId)
    return payment_methods(view, access.store.account_index)


@router.post("/stores/{storeId}/invoices/{invoiceId}/status")
async def mark_invoice(
    request: Request,
    invoiceId: str,
    access: Modifying,
    body: Annotated[Any, Body()] = None,
) -> dict[str, Any]:
    """The merchant marks the invoice Settled or Invalid (422 when not allowed now)."""
    target = parse_mark(body.get("status") if isinstance(body, dict) else None)
    view = await access.gateway.greenfield.mark(invoiceId, target)
    return invoice_data(view, base_url(request))
