"""Greenfield's error bodies, as plain dicts.

Greenfield answers a refused field with 422 and a *list* ``[{"path","message"}]`` (not 400,
whatever its swagger says), and every other error with ``{"code","message"}``. The codes
are the contract (clients and plugins branch on them); the messages are ours.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from xmrgate.domain.errors import Unprocessable

# The code BTCPay gives an API error that names none (GreenfieldAPIError).
GENERIC_CODE = "generic-error"
UNAUTHENTICATED_CODE = "unauthenticated"
MISSING_PERMISSION_CODE = "missing-permission"
# The not-found codes clients may branch on, by what was not found.
NOT_FOUND_CODES = {
    "invoice": "invoice-not-found",
    "webhook": "webhook-not-found",
    "paymentmethod": "paymentmethod-not-found",
    "user": "user-not-found",
    "store": "store-not-found",
    "delivery": "delivery-not-found",
    # A delivery of a webhook, as BTCPay's webhook routes name it.
    "webhookdelivery": "webhookdelivery-not-found",
}


class FieldError(Unprocessable):
    """One refused field: where it is (``path``, Greenfield's dotted/indexed form such as
    ``checkout.paymentMethods[0]``), what was sent (``value``) and why (``message``).

    A subclass of our ``Unprocessable`` (422), so the one exception tree still holds;
    the Greenfield facade turns it into ``[{"path": ..., "message": ...}]``.
    """

    def __init__(self, path: str, message: str, value: object = None) -> None:
        super().__init__(message)
        self.path = path
        self.value = value


def validation_body(errors: Iterable[FieldError]) -> list[dict[str, str]]:
    """The 422 body: one ``{"path", "message"}`` per refused field, in the given order."""
    return [{"path": e.path, "message": e.message} for e in errors]


def error_body(code: str | None, message: str) -> dict[str, str]:
    """A ``{"code","message"}`` body (400, 401, 404, ...); no code becomes ``generic-error``."""
    return {"code": code or GENERIC_CODE, "message": message}


def unauthenticated_body(message: str | None = None) -> dict[str, str]:
    """The 401 body: no key, an unknown key, or a malformed ``Authorization`` header."""
    return error_body(
        UNAUTHENTICATED_CODE, message or "An API key is required: Authorization: token <key>"
    )


def missing_permission_body(permission: str) -> dict[str, Any]:
    """The 403 body naming the one permission the key lacks (``missingPermission``)."""
    return {
        "code": MISSING_PERMISSION_CODE,
        "message": f'This API key lacks the permission "{permission}" this call needs.',
        "missingPermission": permission,
    }


def not_found_body(kind: str) -> dict[str, str]:
    """The 404 body for a missing ``kind`` (``invoice``, ``webhook``, ...).

    Raises ``KeyError`` for a kind without a code: a bug, every route names its kind.
    """
    return error_body(NOT_FOUND_CODES[kind], f"The {kind} was not found")
