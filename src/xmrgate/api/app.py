"""``create_app``: the FastAPI application over one ``Services``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from xmrgate import __version__
from xmrgate.api import receive, transfer, wallet_status
from xmrgate.api.errors import install_error_handlers
from xmrgate.api.security import BodySizeLimit
from xmrgate.checkout import build_router
from xmrgate.config import Settings
from xmrgate.services import Services


class MoneroPayHeaders:
    """Adds ``X-MoneroPay-Address: <primary address>`` to API answers, as MoneroPay does.

    Not on the public checkout pages (``/pay/``): customers need not learn the
    merchant's primary address. A plain ASGI middleware: cheaper than
    BaseHTTPMiddleware on the hot read path.
    """

    def __init__(self, app: ASGIApp, services: Services) -> None:
        self.app = app
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/pay/"):
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            address = self.services.wallet_state.primary_address
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


def create_app(settings: Settings, services: Services | None = None) -> FastAPI:
    """Build the app; its lifespan starts and stops the background loops."""
    services = services or Services.build(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await services.start()
        try:
            yield
        finally:
            await services.close()

    app = FastAPI(
        title="xmrgate",
        version=__version__,
        description="Self-hosted Monero payment gateway (MoneroPay v2 compatible API).",
        lifespan=lifespan,
    )
    app.state.services = services
    install_error_handlers(app)
    app.include_router(receive.router)
    app.include_router(transfer.router)
    app.include_router(wallet_status.router)
    if settings.checkout:
        app.include_router(build_router(settings))
    app.openapi = lambda: _openapi_with_error_shape(app)  # type: ignore[method-assign]
    app.add_middleware(MoneroPayHeaders, services=services)
    app.add_middleware(BodySizeLimit, limit=settings.max_body_bytes)
    return app


SETTINGS_ENV = "XMRGATE_SETTINGS_JSON"


def app_from_environment() -> FastAPI:
    """App factory for uvicorn worker processes: settings come from the parent's JSON."""
    import json
    import os

    from xmrgate.logs import setup_logging

    settings = Settings(**json.loads(os.environ[SETTINGS_ENV]))
    setup_logging(settings.log_format)
    return create_app(settings)
