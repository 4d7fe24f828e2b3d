"""``create_app``: the FastAPI application over one ``Gateway`` (the use cases)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from xmrgate import __version__
from xmrgate.config import Settings
from xmrgate.core.gateway import Gateway
from xmrgate.core.store_gateways import StoreGateways
from xmrgate.core.stores import StoreAdmin
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.web import api_docs
from xmrgate.web.admin.routes import build_router as build_admin_router
from xmrgate.web.api import (
    invoices,
    links,
    pos,
    rates,
    receive,
    received,
    refunds,
    stores,
    transfer,
    unmatched,
    wallet_status,
)
from xmrgate.web.api import status as status_routes
from xmrgate.web.api.errors import install_error_handlers
from xmrgate.web.api.security import ApiKeyGate, BodySizeLimit, HeaderLimits
from xmrgate.web.checkout.routes import build_router
from xmrgate.web.consent_page.routes import install as install_consent_page
from xmrgate.web.greenfield import buyer_link as greenfield_buyer_link
from xmrgate.web.greenfield.routes import routers as greenfield_routers
from xmrgate.web.http_metrics import HttpMetrics
from xmrgate.web.link_page.routes import build_router as build_link_page_router
from xmrgate.web.pos.routes import build_router as build_pos_router
from xmrgate.web.refund_page.routes import build_router as build_refund_page_router
from xmrgate.web.route_table import add_routes

# The customers' pages (checkout, refund claim, payment link, a Greenfield invoice's
# link): never the X-MoneroPay-Address header.
CUSTOMER_PREFIXES = ("/pay/", "/refund/", "/l/", "/i/", "/invoice", "/api-keys/authorize")


class MoneroPayHeaders:
    """Adds ``X-MoneroPay-Address: <primary address>`` to API answers, as MoneroPay does.

    Not on the customers' pages (``/pay/``, ``/refund/``, ``/l/``): customers need not
    learn the merchant's primary address. A plain ASGI middleware: cheaper than
    BaseHTTPMiddleware on the hot read path.
    """

    def __init__(
        self,
        app: ASGIApp,
        identity: WalletIdentity,
        keys_configured: bool,
        store_address: Callable[[str], str | None] | None = None,
    ) -> None:
        self.app = app
        self.identity = identity
        self.keys_configured = keys_configured
        # A store key is told its store's account address, never the main wallet's.
        self.store_address = store_address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(CUSTOMER_PREFIXES):
            await self.app(scope, receive, send)
            return
        if self.keys_configured and not scope.get("state", {}).get("api_key"):
            # With API keys, only a caller who presented one learns the wallet's address.
            await self.app(scope, receive, send)
            return

        key = scope.get("state", {}).get("api_key_record")
        store = getattr(key, "store", None)

        async def send_with_header(message: Message) -> None:
            if store is None:
                address = self.identity.primary_address
            else:
                address = self.store_address(store) if self.store_address else None
            if message["type"] == "http.response.start" and address:
                headers = list(message.get("headers", []))
                headers.append((b"x-moneropay-address", address.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_header)


ERROR_SCHEMA = {
    "type": "object",
    "required": ["status", "message"],
    "properties": {
        "status": {"type": "integer", "description": "the HTTP status code"},
        "code": {"type": "integer", "description": "monero-wallet-rpc error code, if any"},
        "message": {"type": "string"},
    },
}
ERROR_STATUSES = {
    "400": "Bad input",
    "401": "API key missing or invalid",
    "403": "API key lacks the scope",
    "404": "Not found",
    "413": "Request body too large",
    "503": "Wallet or database unavailable",
    "504": "Wallet timed out",
}


def _openapi_with_error_shape(app: FastAPI) -> dict[str, Any]:
    """FastAPI documents 422 validation errors; xmrgate answers 400 in its own shape."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components["Error"] = ERROR_SCHEMA
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status, description in ERROR_STATUSES.items():
                responses.setdefault(status, {"description": description, **ref})
    app.openapi_schema = schema
    return schema


def create_app(
    settings: Settings,
    store_gateways: StoreGateways,
    store_admin: StoreAdmin,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None,
    *,
    public_gateway: Gateway | None = None,
) -> FastAPI:
    """Build the app over the stores' Gateways; ``lifespan`` starts and stops the
    process's loops. ``public_gateway`` (the customers' pages) finds a request in any
    store; by default the default store's Gateway."""
    gateway = store_gateways.default
    app = FastAPI(
        title="xmrgate",
        version=__version__,
        description="Self-hosted Monero payment gateway (MoneroPay v2 compatible API).",
        lifespan=lifespan,
        openapi_url=None,  # served by web/api_docs.py, behind the read scope
        docs_url=None,
        redoc_url=None,
    )
    app.state.gateway = gateway
    # Stores: each caller acts on its store's Gateway (web/deps.py); the checkout reads
    # every store's requests by address.
    app.state.stores = store_gateways
    app.state.public_gateway = public_gateway or gateway
    # The administration of stores (web/api/stores.py): not a store's part.
    app.state.store_admin = store_admin
    # The base of every link and redirect handed out (web/public_url.py); None: each
    # request's own.
    app.state.public_url = settings.public_url
    # A point-of-sale sale priced in fiat expires with its rate lock (web/api/pos.py).
    app.state.rate_lock = int(settings.rate_lock)
    install_error_handlers(app)
    # First: the router tries routes in order, and /receive's are the hottest (issue 29:
    # GET /receive/:address matched after the invoice routes cost it 10 % of its CPU).
    add_routes(app, receive.router)
    # Then the customers' pages (/pay/, /refund/, /l/, /i/: no API path begins so): they
    # face the public and its floods, and each route tried costs FastAPI 3-7 us (a
    # flood of pays on a link checked 80 routes per request before its own).
    if settings.checkout:
        add_routes(app, build_router(settings))
        # The customer's refund claim page goes with the checkout (--no-checkout: neither).
        add_routes(app, build_refund_page_router())
        # So does the public page of payment links (the requests it makes go to /pay/).
        add_routes(app, build_link_page_router())
        # And a Greenfield invoice's buyer link (/i/{invoiceId} leads to /pay/).
        add_routes(app, greenfield_buyer_link.router)
    api = (
        invoices.router,
        transfer.router,
        wallet_status.router,
        api_docs.router,
        status_routes.router,
        received.router,
        stores.router,
        rates.router,
        refunds.router,
        links.router,
        pos.router,
        unmatched.router,
        *greenfield_routers,  # BTCPay's Greenfield API v1 (issue 28)
    )
    for router in api:
        add_routes(app, router)
    # Its consent page for shop plugins (/api-keys/authorize): with the API, not the
    # checkout (an operator's page, asked for by the plugin's "connect" button).
    install_consent_page(app)
    if settings.metrics:
        add_routes(app, status_routes.metrics_router)
    if settings.admin:
        add_routes(app, build_admin_router())
        if settings.checkout:
            # The point-of-sale screen goes with the dashboard; it shows the checkout's
            # QR code (/pay/<address>/qr.svg), so --no-checkout leaves it out too.
            add_routes(app, build_pos_router())
    # The hottest read, tried before every other route (web/api/receive.py: status_route).
    app.router.routes.insert(0, receive.status_route())
    app.openapi = lambda: _openapi_with_error_shape(app)  # type: ignore[method-assign]
    # The last added runs first: header limits, body limit, API key, MoneroPay header.
    app.add_middleware(
        MoneroPayHeaders,
        identity=gateway.identity,
        keys_configured=bool(gateway.api_keys),
        store_address=store_gateways.address_of,
    )
    app.add_middleware(ApiKeyGate, keys=gateway.api_keys, live_keys=store_gateways.keys)
    app.add_middleware(BodySizeLimit, limit=settings.max_body_bytes)
    app.add_middleware(HeaderLimits)
    if settings.metrics:  # outermost: times and counts every answer, refusals included
        app.add_middleware(HttpMetrics, observer=gateway.observer, router=app.router)
    return app
