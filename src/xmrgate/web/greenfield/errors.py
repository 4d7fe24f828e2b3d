"""Every failure on an ``/api/v1`` path, in Greenfield's shapes (docs/greenfield.md).

``web/api/errors.py`` stays the one place that installs the handlers; on a Greenfield path
it hands the failure to this module, which maps our one exception tree
(``domain/errors.py``) onto BTCPay's statuses and bodies:

- a refused field (``FieldError``, FastAPI's request validation, a body that is not JSON):
  422 and a list ``[{"path", "message"}]``, as BTCPay's model validation answers;
- a missing permission: 403 ``missing-permission`` naming it in ``missingPermission``;
- not found: 404 with the code of what was not found (``store-not-found``, ...);
- anything else: ``{"code", "message"}`` with the status BTCPay would give. A state
  clash (``Conflict``) is 400, BTCPay's status for an API error that names no other: the
  PHP client turns it into a ``BadRequestException`` carrying our message.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

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
from xmrgate.domain.greenfield.errors import (
    FieldError,
    error_body,
    missing_permission_body,
    not_found_body,
    unauthenticated_body,
    validation_body,
)

log = logging.getLogger(__name__)

NO_KEY = "An API key is required: Authorization: token <key>"
UNKNOWN_KEY = "This API key is not known to this gateway (revoked, or a typo?)"
NOT_JSON = "The request body is not valid JSON"


class MissingPermission(Forbidden):
    """The key lacks ``permission`` on the store of the path (403 ``missing-permission``).

    Also a key of another store: its permissions are limited to its own store, so it
    lacks the permission here, as BTCPay answers it.
    """

    def __init__(self, permission: str) -> None:
        super().__init__(f"this API key lacks the permission {permission}")
        self.permission = permission


class KindNotFound(NotFound):
    """A ``kind`` (``store``, ``invoice``, ``webhook``, ...) that does not exist: 404 with
    the code clients branch on (``domain/greenfield/errors.NOT_FOUND_CODES``)."""

    def __init__(self, kind: str, message: str | None = None) -> None:
        super().__init__(message or f"The {kind} was not found")
        self.kind = kind


# Most specific first: the first matching class decides (status, code).
STATUS_AND_CODE: list[tuple[type[XmrgateError], int, str]] = [
    (HeadersTooLarge, 431, "headers-too-large"),
    (HeadTooSlow, 408, "request-timeout"),
    (BodyTooLarge, 413, "body-too-large"),
    (InvalidInput, 400, "invalid-request"),
    (Forbidden, 403, "forbidden"),
    (Conflict, 400, "conflict"),
    (Gone, 410, "gone"),
    (Unprocessable, 400, "unprocessable"),
    (WalletRejected, 400, "wallet-rejected"),
    (WalletTimeout, 504, "wallet-timeout"),
    (WalletUnavailable, 503, "wallet-unavailable"),
    (WalletError, 502, "wallet-error"),
    (DatabaseUnavailable, 503, "database-unavailable"),
    (RatesUnavailable, 503, "rates-unavailable"),
]
# A NotFound that names no kind: the kind is the last collection its path names
# (``/stores/s/invoices/i`` -> invoice), as BTCPay's route for that collection answers.
COLLECTIONS = {
    "stores": "store",
    "invoices": "invoice",
    "webhooks": "webhook",
    "deliveries": "delivery",
    "payment-methods": "paymentmethod",
}
# Starlette's own refusals (no such route, wrong method) by status.
HTTP_CODES = {404: "not-found", 405: "method-not-allowed"}


def kind_in(path: str) -> str | None:
    """The kind of thing ``path`` addresses, from its last known collection, or None."""
    parts = path.strip("/").split("/")
    for index in range(len(parts) - 1, -1, -1):
        kind = COLLECTIONS.get(parts[index])
        if kind is not None and index + 1 < len(parts):
            return kind
    return None


def answer(exc: XmrgateError, path: str) -> tuple[int, Any]:
    """Greenfield's status and body for one of our errors raised on ``path``."""
    if isinstance(exc, FieldError):
        return 422, validation_body([exc])
    if isinstance(exc, MissingPermission):
        return 403, missing_permission_body(exc.permission)
    if isinstance(exc, Unauthorized):
        return 401, unauthenticated_body(exc.message)
    if isinstance(exc, NotFound):
        kind = exc.kind if isinstance(exc, KindNotFound) else kind_in(path)
        if kind is None:
            return 404, error_body("not-found", exc.message)
        return 404, {**not_found_body(kind), "message": exc.message}
    for cls, status, code in STATUS_AND_CODE:
        if isinstance(exc, cls):
            return status, error_body(code, exc.message)
    # Not one of ours that maps (DatabaseFault: a bug): a 500, with nothing inside shown.
    return 500, error_body("internal-error", "internal error")


def response(exc: XmrgateError, path: str) -> JSONResponse:
    """The JSON answer to one of our errors on a Greenfield ``path``."""
    status, body = answer(exc, path)
    if status >= 500:
        log.warning("greenfield %s: %s: %s", path, type(exc).__name__, exc.message)
    return JSONResponse(body, status_code=status)


def unauthenticated_response(token_given: bool) -> JSONResponse:
    """401 for a request without a key (``token_given`` False) or with an unknown one."""
    body = unauthenticated_body(UNKNOWN_KEY if token_given else NO_KEY)
    return JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "token"})


def field_path(loc: Sequence[int | str]) -> str:
    """pydantic's ``loc`` as Greenfield's path: ``checkout.paymentMethods[0]``; where the
    value came from (body, query, path, header) is no part of it."""
    path = ""
    for part in loc[1:] if loc and loc[0] in ("body", "query", "path", "header") else loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def validation_response(exc: RequestValidationError) -> JSONResponse:
    """422 and one ``{"path", "message"}`` per refused field; a body that is not JSON is
    a refused body (path ``""``: nothing inside it could be read)."""
    items: list[dict[str, str]] = []
    for error in exc.errors():
        if error.get("type") == "json_invalid":
            items = [{"path": "", "message": NOT_JSON}]
            break
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        items.append({"path": field_path(error.get("loc", ())), "message": message})
    return JSONResponse(items or [{"path": "", "message": "invalid request"}], status_code=422)


def http_response(exc: StarletteHTTPException) -> JSONResponse:
    """Starlette's own refusals (no such route, wrong method) as ``{"code","message"}``."""
    message = exc.detail if isinstance(exc.detail, str) else "error"
    code = HTTP_CODES.get(exc.status_code)
    return JSONResponse(error_body(code, message), status_code=exc.status_code, headers=exc.headers)


def unexpected_response() -> JSONResponse:
    """A bug reached the top: 500 in Greenfield's shape (the cause is logged by the caller)."""
    return JSONResponse(error_body("internal-error", "internal error"), status_code=500)
