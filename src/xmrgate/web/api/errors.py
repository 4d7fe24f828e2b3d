"""The one place that maps xmrgate errors to HTTP status codes.

Every error answer is JSON ``{"status": N, "code"?: wallet error code, "message": "..."}``,
except on Greenfield's paths (``/api/v1``), which answer in BTCPay's shapes: there each
handler hands over to ``web/greenfield/errors.py``.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from xmrgate.domain.errors import (
    BodyTooLarge,
    Conflict,
    DatabaseUnavailable,
    Forbidden,
    Gone,
    HeadersTooLarge,
    HeadTooSlow,
    InvalidInput,
    NotFound,
    RatesUnavailable,
    Unauthorized,
    Unprocessable,
    WalletError,
    WalletRejected,
    WalletTimeout,
    WalletUnavailable,
    XmrgateError,
)
from xmrgate.web.greenfield import errors as greenfield_errors
from xmrgate.web.greenfield import is_greenfield

log = logging.getLogger(__name__)

# Most specific first: the first matching class decides.
STATUS_OF: list[tuple[type[XmrgateError], int]] = [
    (HeadersTooLarge, 431),
    (HeadTooSlow, 408),
    (BodyTooLarge, 413),
    (InvalidInput, 400),
    (Unauthorized, 401),
    (Forbidden, 403),
    (NotFound, 404),
    (Conflict, 409),
    (Gone, 410),
    (Unprocessable, 422),
    (WalletRejected, 400),
    (WalletTimeout, 504),
    (WalletUnavailable, 503),
    (WalletError, 502),
    (DatabaseUnavailable, 503),
    (RatesUnavailable, 503),
]


def status_of(exc: XmrgateError) -> int:
    """HTTP status for an xmrgate error."""
    for cls, status in STATUS_OF:
        if isinstance(exc, cls):
            return status
    return 500


def error_body(status: int, message: str, code: int | None = None) -> dict[str, Any]:
    """The gateway's one error shape: ``{"status", "code"?, "message"}``."""
    body: dict[str, Any] = {"status": status}
    if code is not None:
        body["code"] = code
    body["message"] = message
    return body


def error_answer(exc: XmrgateError) -> tuple[int, dict[str, Any]]:
    """Status and body for an xmrgate error (also what an Idempotency-Key replays)."""
    status = status_of(exc)
    return status, error_body(status, exc.message, exc.code)


def error_response(status: int, message: str, code: int | None = None) -> JSONResponse:
    """A JSON error response in the gateway's one error shape."""
    body = error_body(status, message, code)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


def exception_response(exc: XmrgateError) -> JSONResponse:
    """The JSON error response of an xmrgate error (for middleware, outside the routes)."""
    status, body = error_answer(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


def validation_message(exc: RequestValidationError) -> str:
    """One readable line from pydantic's error list."""
    parts = []
    for error in exc.errors():
        if error.get("type") == "json_invalid":
            return "request body is not valid JSON"
        loc = [str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path")]
        where = ".".join(loc) or "body"
        # pydantic prefixes our own ValueError texts with "Value error, ": noise to a client.
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that turn every failure into the JSON error shape."""

    async def on_xmrgate_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, XmrgateError)
        if is_greenfield(request.url.path):
            return greenfield_errors.response(exc, request.url.path)
        status = status_of(exc)
        if status >= 500:
            log.warning("%s: %s", type(exc).__name__, exc.message)
        return error_response(status, exc.message, exc.code)

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        if is_greenfield(request.url.path):
            return greenfield_errors.validation_response(exc)
        return error_response(400, validation_message(exc))

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if is_greenfield(request.url.path):
            return greenfield_errors.http_response(exc)
        message = exc.detail if isinstance(exc.detail, str) else "error"
        return error_response(exc.status_code, message)

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error", exc_info=exc)
        if is_greenfield(request.url.path):
            return greenfield_errors.unexpected_response()
        return error_response(500, "internal error")

    app.add_exception_handler(XmrgateError, on_xmrgate_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
