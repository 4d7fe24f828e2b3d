"""``/i/{invoiceId}`` and ``/invoice?id=``: the buyer's link of a Greenfield invoice.

BTCPay's checkout link (``checkoutLink``; the WooCommerce plugin builds ``{url}/i/{id}``
itself when it reuses an invoice) leads to our checkout page of the invoice's request,
``/pay/{address}``, in its store's name and colour, its fiat price shown. The page's
"back to the shop" link is the invoice's ``redirectURL`` with ``{OrderId}`` and
``{InvoiceId}`` filled in (the request's ``return_url``). An unknown id is the checkout's
HTML 404 page: a buyer gets a page, not JSON.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response

from xmrgate.domain.errors import NotFound, XmrgateError
from xmrgate.web.checkout.errors import checkout_error_page
from xmrgate.web.deps import PublicGatewayDep
from xmrgate.web.public_url import checkout_path

router = APIRouter(include_in_schema=False)
# Greenfield ids are 22 URL-safe characters; longer is nobody's (read nothing).
MAX_ID = 64


async def _to_checkout(request: Request, invoice_id: str, gateway: PublicGatewayDep) -> Response:
    try:
        if not invoice_id or len(invoice_id) > MAX_ID:
            raise NotFound("The invoice was not found")
        view = await gateway.greenfield.get(invoice_id)
    except XmrgateError as exc:
        return checkout_error_page(exc)
    # 303: a plain GET of the checkout page, whatever brought the buyer here.
    return RedirectResponse(checkout_path(request, view.payment.request.address), status_code=303)


@router.get("/i/{invoiceId}")
async def invoice_link(request: Request, invoiceId: str, gateway: PublicGatewayDep) -> Response:
    """BTCPay's checkout link of an invoice."""
    return await _to_checkout(request, invoiceId, gateway)


@router.get("/invoice")
async def invoice_query(
    request: Request,
    gateway: PublicGatewayDep,
    id: Annotated[str, Query(max_length=MAX_ID)] = "",
) -> Response:
    """The same by query (``/invoice?id=``, BTCPay's modal and older links)."""
    return await _to_checkout(request, id, gateway)
