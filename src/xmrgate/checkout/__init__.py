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

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse, Response

from xmrgate.api.deps import ServicesDep
from xmrgate.api.schemas import looks_like_address
from xmrgate.checkout.money import piconero_to_xmr
from xmrgate.checkout.page import (
    content_security_policy,
    current_uri,
    render_checkout_page,
    render_not_found,
    render_unavailable,
    security_headers,
)
from xmrgate.checkout.qr import payment_uri, qr_svg
from xmrgate.checkout.status import CheckoutStatus, checkout_status
from xmrgate.config import Settings
from xmrgate.errors import DatabaseUnavailable, NotFound
from xmrgate.services import Services
from xmrgate.store.payments import PaymentStatus

__all__ = [
    "CheckoutStatus",
    "build_router",
    "checkout_status",
    "payment_uri",
    "piconero_to_xmr",
    "qr_svg",
    "render_checkout_page",
]


async def _load(services: Services, address: str) -> PaymentStatus | None:
    # Same shape check as /receive: what cannot be an address skips the database.
    if not looks_like_address(address):
        return None
    return await services.payments.status(address)


def _state(found: PaymentStatus) -> CheckoutStatus:
    return checkout_status(found.request.amount, found.transfers, found.chain_height)


def build_router(settings: Settings) -> APIRouter:
    """The checkout routes; ``settings.public_url`` (if set) is the base of the page's links."""
    router = APIRouter(tags=["checkout"])
    public_url = settings.public_url

    @router.get("/pay/{address}", response_class=HTMLResponse, include_in_schema=False)
    async def checkout_page(address: str, services: ServicesDep) -> HTMLResponse:
        """The checkout page of a payment request."""
        try:
            found = await _load(services, address)
        except DatabaseUnavailable:
            # A customer gets a page, not the API's JSON error.
            return HTMLResponse(
                render_unavailable(),
                status_code=503,
                headers={
                    **security_headers(content_security_policy(with_script=False)),
                    "Retry-After": "30",
                },
            )
        if found is None:
            return HTMLResponse(
                render_not_found(),
                status_code=404,
                headers=security_headers(content_security_policy(with_script=False)),
            )
        request = found.request
        html = render_checkout_page(
            address=request.address,
            amount=request.amount,
            description=request.description,
            return_url=request.return_url,
            status=_state(found),
            public_url=public_url,
        )
        csp = content_security_policy(with_script=True, public_url=public_url)
        return HTMLResponse(html, headers=security_headers(csp))

    @router.get("/pay/{address}/status.json")
    async def checkout_status_json(address: str, services: ServicesDep) -> JSONResponse:
        """State (waiting | seen | paid), totals in piconero and XMR, confirmations."""
        found = await _load(services, address)
        if found is None:
            raise NotFound("no payment request for this address")
        request = found.request
        state = _state(found)
        body: dict[str, Any] = state.to_json()
        body["uri"] = current_uri(request.address, request.amount, request.description, state)
        return JSONResponse(body, headers=security_headers())

    @router.get("/pay/{address}/qr.svg", include_in_schema=False)
    async def checkout_qr(address: str, services: ServicesDep) -> Response:
        """The QR code of the payment URI for what is still to pay, as an SVG image."""
        found = await _load(services, address)
        if found is None:
            raise NotFound("no payment request for this address")
        request = found.request
        uri = current_uri(request.address, request.amount, request.description, _state(found))
        svg = qr_svg(uri, title="Payment QR code")
        svg = svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
        headers = security_headers("default-src 'none'")
        return Response(svg, media_type="image/svg+xml", headers=headers)

    return router
