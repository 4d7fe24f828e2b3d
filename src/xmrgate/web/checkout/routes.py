"""Hosted checkout: ``GET /pay/{address}``, a page with QR code and live status.

Everything is read from the database (``PaymentStore.status``), never from the
wallet, like ``GET /receive/:address``: the page keeps working while the wallet is
busy. ``create_app`` mounts the router unless ``--no-checkout``.

Routes:

- ``GET /pay/{address}``: the HTML page (404 HTML page for an unknown address).
- ``GET /pay/{address}/status.json``: state, totals and confirmations; the page polls it.
- ``GET /pay/{address}/qr.svg``: the QR code of what is still to pay.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from xmrgate.config import Settings
from xmrgate.domain.errors import XmrgateError
from xmrgate.web.checkout.errors import checkout_error_page
from xmrgate.web.checkout.page import (
    content_security_policy,
    current_uri,
    render_checkout_page,
    security_headers,
)
from xmrgate.web.checkout.qr import qr_svg
from xmrgate.web.checkout.view import payment_state, store_brand
from xmrgate.web.deps import PublicGatewayDep


def build_router(settings: Settings) -> APIRouter:
    """The checkout routes; ``settings.public_url`` (if set) is the base of the page's links."""
    router = APIRouter(tags=["checkout"])
    public_url = settings.public_url

    @router.get("/pay/{address}", response_class=HTMLResponse, include_in_schema=False)
    async def checkout_page(
        address: str, gateway: PublicGatewayDep, request: Request
    ) -> HTMLResponse:
        """The checkout page of a payment request, in its store's name and colour."""
        try:
            found = await gateway.payment_requests.status(address)
        except XmrgateError as exc:
            return checkout_error_page(exc)
        payment = found.request
        brand = store_brand(request, payment.store_id)
        html = render_checkout_page(
            address=payment.address,
            amount=payment.amount,
            description=payment.description,
            return_url=payment.return_url,
            status=payment_state(found),
            public_url=public_url,
            brand=brand,
            price=payment.price,
        )
        csp = content_security_policy(with_script=True, public_url=public_url, brand=brand)
        return HTMLResponse(html, headers=security_headers(csp))

    @router.get("/pay/{address}/status.json")
    async def checkout_status_json(address: str, gateway: PublicGatewayDep) -> JSONResponse:
        """State, status, totals in piconero and XMR, confirmations, time left."""
        found = await gateway.payment_requests.status(address)
        request = found.request
        state = payment_state(found)
        body: dict[str, Any] = state.to_json()
        body["uri"] = current_uri(request.address, request.amount, request.description, state)
        return JSONResponse(body, headers=security_headers())

    @router.get("/pay/{address}/qr.svg", include_in_schema=False)
    async def checkout_qr(address: str, gateway: PublicGatewayDep) -> Response:
        """The QR code of the payment URI for what is still to pay, as an SVG image."""
        found = await gateway.payment_requests.status(address)
        request = found.request
        uri = current_uri(
            request.address, request.amount, request.description, payment_state(found)
        )
        svg = qr_svg(uri, title="Payment QR code")
        svg = svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
        headers = security_headers("default-src 'none'")
        return Response(svg, media_type="image/svg+xml", headers=headers)

    return router
