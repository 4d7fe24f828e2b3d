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
    |   +-- SubaddressTaken     the wallet handed out an index already in use
    |   +-- AlreadyExists       a stored row has the same key (unique clash)
    |   +-- MissingReference    the row a write refers to is gone
    |   +-- WalletCannotSpend   the wallet is view-only: no payout can be signed
    +-- Unprocessable           well-formed but refused (422)
    +-- Unauthorized/Forbidden  API keys (401/403)
    +-- WalletError             the wallet answered with a JSON-RPC error
    |   +-- WalletRejected      ... that is the client's fault (bad address, not enough money)
    +-- WalletUnavailable       the wallet does not answer (503)
    |   +-- AddressPoolEmpty    ... and no pooled subaddress is left (503)
    |   +-- WalletTimeout       ... in time (504)
    |       +-- PayoutOutcomeUnknown  a payout may or may not have gone out (504)
    +-- DaemonUnavailable       monerod (--daemon-address) does not answer: never sent to a
    |                           client, the sync tick then refreshes the wallet anyway
    +-- DatabaseUnavailable     the database does not answer, or no connection is free (503)
    +-- RatesUnavailable        no fresh exchange rate for a fiat price (503)
    +-- DatabaseFault           the database refused a statement: a bug, not the input (500)
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


class RequestHasFunds(Conflict):
    """DELETE of a request that has received funds: refused (409), its history is kept.

    Raised by the store, which alone can tell atomically whether a transfer is recorded.
    """

    def __init__(self) -> None:
        super().__init__(
            "this payment request has received funds and cannot be deleted; its history is kept"
        )


class WalletCannotSpend(Conflict):
    """The open wallet holds no spend key (view-only), so it cannot sign a payout.

    Raised before anything is journaled, or when wallet-rpc answered a transfer with an
    unsigned transaction set instead of sent transactions: nothing left the wallet.
    """


class Gone(XmrgateError):
    """The addressed thing existed but is over for good (410): an expired refund link."""


class Unprocessable(XmrgateError):
    """The request is well-formed but cannot be honoured (e.g. idempotency key reuse)."""


class HeadersTooLarge(InvalidInput):
    """More request header fields or bytes than a payment gateway needs (431)."""


class HeadTooSlow(InvalidInput):
    """A request head (request line and headers) not complete in time (408)."""


class BodyTooLarge(InvalidInput):
    """A request body over ``--max-body-bytes`` (413)."""


class Unauthorized(XmrgateError):
    """No valid API key was presented."""


class Forbidden(XmrgateError):
    """The API key lacks the scope this endpoint needs."""


class WalletError(XmrgateError):
    """monero-wallet-rpc answered with a JSON-RPC error object we do not blame on the client."""


class WalletRejected(WalletError):
    """The wallet refused the request because of its content (bad address, not enough money)."""


class WalletRestricted(WalletError):
    """wallet-rpc runs with ``--restricted-rpc``: it refuses ``refresh``, ``get_transfers``,
    ``store`` and every spend (-7), so payments to our subaddresses would go unseen."""


class WalletUnavailable(XmrgateError):
    """monero-wallet-rpc cannot be reached or has no wallet open.

    ``request_sent`` is False only when the call provably never reached the wallet
    (connection refused): a payout then certainly did not go out.
    """

    def __init__(self, message: str, *, code: int | None = None, request_sent: bool = True) -> None:
        super().__init__(message, code=code)
        self.request_sent = request_sent


class AddressPoolEmpty(WalletUnavailable):
    """No pre-generated subaddress is left and the wallet could not make one in time (503)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, request_sent=False)


class WalletTimeout(WalletUnavailable):
    """monero-wallet-rpc did not answer within the time allowed."""


class PayoutOutcomeUnknown(WalletTimeout):
    """The wallet may have been asked to send and we cannot tell whether it did.

    Whatever failed after that (a timeout, a lost connection, the journal write), the
    payout's Idempotency-Key is kept: a retry must never send the money twice.
    """


class DaemonUnavailable(XmrgateError):
    """monerod (``--daemon-address``) cannot be reached or answered something unexpected."""


class DatabaseUnavailable(XmrgateError):
    """The database cannot be reached."""


class RatesUnavailable(XmrgateError):
    """No fresh, agreeing exchange rate for the price's currency: a fiat-priced request
    is refused (503) rather than priced with a stale or wrong rate."""


class AlreadyExists(Conflict):
    """A row with the same key is already stored (a unique or primary key clash)."""


class MissingReference(Conflict):
    """A write refers to a row that does not exist, e.g. a payment request deleted meanwhile."""


class DatabaseFault(XmrgateError):
    """The database refused a statement for a reason that is neither the input nor an outage.

    A constraint other than a key clash failed, or SQLAlchemy was used wrongly: a bug
    in xmrgate. Nothing maps it to a status code of its own, so a client sees 500.
    """
