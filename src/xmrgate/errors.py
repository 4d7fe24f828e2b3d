"""The one exception tree of xmrgate.

Every failure that can reach a client is an ``XmrgateError``. Each subclass names
what went wrong in our words; ``api/errors.py`` is the only place that maps them to
HTTP status codes. Foreign exceptions (httpx, JSON-RPC error objects, SQLAlchemy)
are translated at the edge that meets them (``wallet.py``, ``store/``) and chained
with ``raise ... from exc`` so the cause stays in the logs.

    XmrgateError
    +-- InvalidInput            the request itself is wrong (400)
    +-- NotFound                no such payment request / transaction (404)
    +-- Conflict                the request clashes with the state (409)
    +-- Unprocessable           well-formed but refused (422)
    +-- Unauthorized/Forbidden  API keys (401/403)
    +-- WalletError             the wallet answered with a JSON-RPC error
    |   +-- WalletRejected      ... that is the client's fault (bad address, not enough money)
    +-- WalletUnavailable       the wallet does not answer (503)
    |   +-- WalletTimeout       ... in time (504)
    +-- DatabaseUnavailable     the database does not answer (503)
"""

from __future__ import annotations


class XmrgateError(Exception):
    """Base of every error xmrgate reports to a client."""

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class InvalidInput(XmrgateError):
    """The request is malformed or a value is out of range."""


class NotFound(XmrgateError):
    """The addressed resource does not exist."""


class Conflict(XmrgateError):
    """The request conflicts with the current state (e.g. a running idempotent request)."""


class SubaddressTaken(Conflict):
    """The wallet handed out a subaddress index we already use (it lost state in a crash)."""


class Unprocessable(XmrgateError):
    """The request is well-formed but cannot be honoured (e.g. idempotency key reuse)."""


class Unauthorized(XmrgateError):
    """No valid API key was presented."""


class Forbidden(XmrgateError):
    """The API key lacks the scope this endpoint needs."""


class WalletError(XmrgateError):
    """monero-wallet-rpc answered with a JSON-RPC error object we do not blame on the client."""


class WalletRejected(WalletError):
    """The wallet refused the request because of its content (bad address, not enough money)."""


class WalletUnavailable(XmrgateError):
    """monero-wallet-rpc cannot be reached or has no wallet open.

    ``request_sent`` is False only when the call provably never reached the wallet
    (connection refused): a payout then certainly did not go out.
    """

    def __init__(self, message: str, *, code: int | None = None, request_sent: bool = True) -> None:
        super().__init__(message, code=code)
        self.request_sent = request_sent


class WalletTimeout(WalletUnavailable):
    """monero-wallet-rpc did not answer within the time allowed."""


class DatabaseUnavailable(XmrgateError):
    """The database cannot be reached."""
