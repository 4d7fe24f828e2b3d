"""API keys, request limits, and the MoneroPay header: the HTTP guards of the API.

Authentication runs in ``ApiKeyGate``, an ASGI middleware, so that a request
without a valid key is refused (401) before its body is read or parsed; the
per-route ``require(scope)`` dependency then checks the key's scope (403). Greenfield's
paths (``/api/v1``) take BTCPay's header (``token <key>`` or ``Bearer <key>``), always
need a key, and are refused in Greenfield's shapes (``web/greenfield``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from xmrgate.domain.api_keys import ApiKey, find_key
from xmrgate.domain.errors import (
    BodyTooLarge,
    Forbidden,
    HeadersTooLarge,
    Unauthorized,
    XmrgateError,
)
from xmrgate.web.admin import SHELL_PATHS
from xmrgate.web.api.errors import exception_response
from xmrgate.web.greenfield import errors as greenfield_errors
from xmrgate.web.greenfield import is_greenfield
from xmrgate.web.greenfield.auth import presented_token
from xmrgate.web.pos import SHELL_PATHS as POS_SHELL_PATHS

# Paths anyone may reach with keys configured: the health probe, the customer's pages
# (checkout, refund claim, payment link, a Greenfield invoice's link), the consent page
# of shop plugins (it asks for the operator's key in its form), and the shells of
# the dashboard and of the point-of-sale screen (exact paths: they hold no data, their JS
# calls the API with a key).
PUBLIC_PREFIXES = ("/pay/", "/refund/", "/l/", "/i/")
PUBLIC_PATHS = frozenset(
    # /api-keys/authorize: Greenfield's consent page asks for an operator key itself.
    {"/health", "/invoice", "/api-keys/authorize", *SHELL_PATHS, *POS_SHELL_PATHS}
)
# A request with more headers, or more header bytes, than this is refused (431).
MAX_HEADERS = 100
MAX_HEADER_BYTES = 16 * 1024


def check_scope(request: Request, scope: str) -> None:
    """Let the request through only with a key holding ``scope`` (Forbidden otherwise).

    Without configured keys every request passes (loopback deployments).
    """
    key: ApiKey | None = getattr(request.state, "api_key_record", None)
    # Open gateway (no configured keys): a caller without a key may do anything,
    # a store key presented to it still has only its scopes.
    if key is None and not request.app.state.gateway.api_keys:
        return
    if key is None:  # ApiKeyGate lets no keyless request reach a route
        raise Unauthorized("an API key is required: Authorization: Bearer <key>")
    if scope not in key.scopes:
        raise Forbidden(f"this API key lacks the '{scope}' scope")


def require(scope: str) -> Any:
    """A dependency that runs ``check_scope`` for ``scope``."""

    async def check(request: Request) -> None:
        check_scope(request, scope)

    return Depends(check)


def authenticate(keys: list[ApiKey], authorization: str) -> ApiKey:
    """The key a ``Authorization: Bearer`` header presents; Unauthorized if none."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("an API key is required: Authorization: Bearer <key>")
    key = find_key(keys, token.strip())
    if key is None:
        raise Unauthorized("invalid API key")
    return key


class ApiKeyGate:
    """Refuses requests without a valid API key before anything reads their body.

    ``keys`` are the configured (operator) keys; ``live_keys`` answers every key that
    may call now, the stores' keys included (they change at run time). Without
    configured keys the gateway is open, but a store key presented to it still binds
    the request to its store and scopes.
    """

    def __init__(
        self,
        app: ASGIApp,
        keys: list[ApiKey],
        live_keys: Callable[[], list[ApiKey]] | None = None,
    ) -> None:
        self.app = app
        self.keys = keys
        self.live_keys = live_keys or (lambda: keys)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        authorization = ""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                authorization = value.decode("latin-1")
        if is_greenfield(scope["path"]):
            await self._greenfield(scope, receive, send, authorization)
            return
        if _is_public(scope["path"]):
            # /health stays public; a valid store key presented to it asks for its
            # store's health (a store on its own wallet-rpc reports that wallet-rpc).
            if scope["path"] == "/health":
                found = _store_key(self.live_keys(), authorization)
                if found is not None:
                    _attach(scope, found)
            await self.app(scope, receive, send)
            return
        if not self.keys:
            found = _store_key(self.live_keys(), authorization)
            if found is not None:
                _attach(scope, found)
            await self.app(scope, receive, send)
            return
        try:
            key = authenticate(self.live_keys(), authorization)
        except Unauthorized as exc:
            await exception_response(exc)(scope, receive, send)
            return
        _attach(scope, key)
        await self.app(scope, receive, send)

    async def _greenfield(
        self, scope: Scope, receive: Receive, send: Send, authorization: str
    ) -> None:
        """A Greenfield path: a known key always (BTCPay has no anonymous API, and a
        plugin always sends one), on an open gateway too; 401 in Greenfield's body."""
        token = presented_token(authorization)
        key = None if token is None else find_key(self.live_keys(), token)
        if key is None:
            await greenfield_errors.unauthenticated_response(token is not None)(
                scope, receive, send
            )
            return
        _attach(scope, key)
        await self.app(scope, receive, send)


def refusal(scope: Scope, exc: XmrgateError) -> JSONResponse:
    """A middleware's refusal (431, 413) in the shape of the path's API."""
    if is_greenfield(scope.get("path", "")):
        return greenfield_errors.response(exc, scope["path"])
    return exception_response(exc)


def _attach(scope: Scope, key: ApiKey) -> None:
    state = scope.setdefault("state", {})
    state["api_key"] = key.label
    state["api_key_record"] = key


def _store_key(keys: list[ApiKey], authorization: str) -> ApiKey | None:
    """The store key an open gateway's caller presents, if any (others are ignored)."""
    if not authorization:
        return None
    try:
        key = authenticate(keys, authorization)
    except Unauthorized:
        return None
    return key if key.store is not None else None


def _is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


class HeaderLimits:
    """Refuse requests with too many headers or too many header bytes (431)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope.get("headers", [])
            size = sum(len(n) + len(v) for n, v in headers)
            if len(headers) > MAX_HEADERS or size > MAX_HEADER_BYTES:
                message = f"request headers exceed {MAX_HEADERS} fields or {MAX_HEADER_BYTES} bytes"
                await refusal(scope, HeadersTooLarge(message))(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BodySizeLimit:
    """Refuse request bodies larger than ``limit`` bytes with a 413 JSON error."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._too_large(scope, receive, send)
                return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        # Chunked bodies without Content-Length: FastAPI turns the error raised while
        # reading into a 400 unless it escapes first; either way it is a 4xx.
        try:
            await self.app(scope, counting_receive, send)
        except _TooLarge:
            await self._too_large(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        too_large = BodyTooLarge(f"request body larger than {self.limit} bytes")
        await refusal(scope, too_large)(scope, receive, send)


class _TooLarge(Exception):
    pass
