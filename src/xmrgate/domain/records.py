"""The records the core reads and writes: payment requests, callback events, stored answers.

Plain frozen dataclasses, so that the core and its tests need no database to use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from xmrgate.domain.fiat import Quote
from xmrgate.domain.ledger import Transfer


@dataclass(frozen=True, slots=True)
class PaymentRequest:
    """A subaddress handed out with an expected amount."""

    id: int
    address: str
    subaddr_index: int
    amount: int
    description: str
    callback_url: str | None
    return_url: str | None
    created_at: datetime
    created_height: int | None
    # Invoices: None = never expires; the status the sync tick last recorded.
    expires_at: datetime | None = None
    underpay_tolerance: int = 0
    status: str = "waiting"
    # The store it belongs to (``domain/stores.py``).
    store_id: str = "default"
    # Priced in fiat (``domain/fiat.py``): the price and the rate that made ``amount``.
    price: Quote | None = None
    # What refunds reserve of what it received (``domain/refunds.py``), in piconero.
    refunded: int = 0
    # The payment link that made it (``domain/links.py``: its id); None: made through the
    # API. Stored as ``payment_requests.link_id``.
    link: str | None = None


@dataclass(frozen=True, slots=True)
class PaymentStatus:
    """Everything ``GET /receive`` needs, read in one transaction."""

    request: PaymentRequest
    transfers: list[Transfer]
    chain_height: int


@dataclass(frozen=True, slots=True)
class CallbackTry:
    """One try of a callback: when, whether it was delivered, the HTTP answer, the error."""

    at: datetime
    delivered: bool
    status_code: int | None
    error: str | None


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """One callback to deliver and what happened to it so far."""

    seq: int
    id: str
    request_id: int
    kind: str
    tx_hash: str
    callback_url: str
    payload: str
    status: str
    attempts: int
    created_at: datetime
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    delivered_at: datetime | None
    last_status: int | None
    last_error: str | None
    # Every try, oldest first (filled in where the callbacks are listed, not when claimed).
    tries: tuple[CallbackTry, ...] = ()
    # The store of its request: its callback is signed with that store's secret.
    store_id: str = "default"
    # A delivery of a Greenfield webhook (signed with that webhook's secret); None: a
    # callback of the MoneroPay API.
    webhook_id: str | None = None


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """What a key holds when it was already claimed."""

    request_hash: str
    state: str
    status: int | None
    body: str | None
    created_at: datetime
    # Of a running claim: the process working on it, until when (None: no lease, a
    # claim made before leases existed), and the reference its work records.
    owner: str | None = None
    lease_until: datetime | None = None
    ref: str | None = None
