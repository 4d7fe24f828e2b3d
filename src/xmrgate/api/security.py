"""Per-route scope checks and the request body size limit."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from xmrgate.api.deps import ServicesDep
from xmrgate.api.errors import error_response
from xmrgate.auth import find_key
from xmrgate.errors import Forbidden, Unauthorized


def require(scope: str) -> Any:
    """A dependency that lets a request through only with a key holding ``scope``.

    Without configured keys every request passes (loopback deployments).
    """

    async def check(request: Request, services: ServicesDep) -> None:
        keys = services.api_keys
        if not keys:
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("an API key is required: Authorization: Bearer <key>")
        key = find_key(keys, token.strip())
        if key is None:
            raise Unauthorized("invalid API key")
        if scope not in key.scopes:
            raise Forbidden(f"this API key lacks the '{scope}' scope")
        request.state.api_key = key.label

    return Depends(check)


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
        response = error_response(413, f"request body larger than {self.limit} bytes")
        await response(scope, receive, send)


class _TooLarge(Exception):
    pass
