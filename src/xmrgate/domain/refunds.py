"""Refunds: money given back to a customer who names the address with a claim link.

A refund is made for one payment request, or for one unmatched receipt (money to a
subaddress no request owns, ``domain/unmatched.py``), reserves part of what it received,
and is claimed by the customer on ``/refund/<token>``. The token is shown once (in the
``claim_url``) and stored only as its SHA-256 digest. States (``docs/refunds.md``)::

    open -> claimed -> sending -> sent -> confirmed
      |        |          |
      |        |          +-> claimed (the wallet refused, or was never reached)
      +--------+-> cancelled (DELETE before it is sent)
      +-> expired (not claimed in time)

``sending`` is the wallet being asked: a refund whose outcome is unknown (the wallet
timed out) stays there until the operator looks; it is never sent again by a retry.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from xmrgate.domain.errors import Conflict, Gone

#: Bytes of randomness in a claim token (192 bits; at least 128 are needed).
TOKEN_BYTES = 24
#: The prefix of a refund's public id (``rf_`` + 20 base32 characters, 100 random bits).
ID_PREFIX = "rf_"
#: How long a claim link lives when the merchant names no ``expires_in`` (7 days).
DEFAULT_LIFE = 7 * 24 * 3600
#: The longest life a claim link may be given (90 days).
MAX_LIFE = 90 * 24 * 3600
#: The longest ``reason`` kept (characters).
MAX_REASON = 500


class RefundStatus(StrEnum):
    """Where a refund stands."""

    OPEN = "open"  # made; the link waits for the customer
    CLAIMED = "claimed"  # the customer gave an address; waits for the merchant (or auto-send)
    SENDING = "sending"  # the wallet was asked to send; an unknown outcome stays here
    SENT = "sent"  # a transaction left (or was recorded by hand on a view-only wallet)
    CONFIRMED = "confirmed"  # that transaction is mined
    EXPIRED = "expired"  # never claimed in time; its money is free again
    CANCELLED = "cancelled"  # withdrawn by the merchant before it was sent


#: States whose amount still counts as refunded (reserved) against the request.
HOLDING = frozenset(
    {
        RefundStatus.OPEN,
        RefundStatus.CLAIMED,
        RefundStatus.SENDING,
        RefundStatus.SENT,
        RefundStatus.CONFIRMED,
    }
)


class RefundEventKind(StrEnum):
    """The callbacks (and feed entries) a refund makes."""

    CLAIMED = "refund.claimed"
    SENT = "refund.sent"
    CONFIRMED = "refund.confirmed"


class RefundTooLarge(Conflict):
    """More than the request received minus what is already refunded (409)."""


class RefundGone(Gone):
    """The refund link expired or was withdrawn (410 on the claim page and the API)."""


class RefundStateConflict(Conflict):
    """The refund is not in a state that allows this (409), e.g. a second send."""


@dataclass(frozen=True, slots=True)
class NewRefund:
    """What the use case asks the repository to make (and reserve) in one transaction."""

    id: str
    # What it gives back: a request's money, or (request_id None) a receipt's.
    request_id: int | None
    amount: int
    reason: str
    token_digest: str
    created_at: datetime
    expires_at: datetime
    # A refund asked in fiat: {"amount": "5.00", "currency": "EUR"} (converted when sent).
    price: dict[str, str] | None = None
    receipt_id: int | None = None


@dataclass(frozen=True, slots=True)
class Refund:
    """One refund as stored."""

    id: str
    store_id: str
    # The request it gives money back of; None for an unmatched receipt's refund.
    request_id: int | None
    # The address the money came to (the request's, or the receipt's).
    request_address: str
    amount: int
    reason: str
    status: RefundStatus
    created_at: datetime
    expires_at: datetime
    claim_address: str | None = None
    claimed_at: datetime | None = None
    sent_at: datetime | None = None
    tx_hash_list: tuple[str, ...] = ()
    tx_key: str | None = None
    fee: int | None = None
    # True when the merchant paid by hand and recorded it (POST /refunds/{id}/paid).
    manual: bool = False
    confirmed_at: datetime | None = None
    cancelled_at: datetime | None = None
    # The payout journal's row of the send (GET /payouts), when the gateway sent it.
    payout_id: int | None = None
    # The last thing that went wrong (a refused or unknown send), for the operator.
    error: str | None = None
    price: dict[str, str] | None = None
    # The SHA-256 of its claim token, compared in constant time by the claim (never shown).
    token_digest: str = ""
    # The unmatched receipt it gives back (``request_id`` None), when it is one's.
    receipt_id: int | None = None

    def expired_at(self, now: datetime) -> bool:
        """An open refund past its link's life (the sweep may not have marked it yet)."""
        return self.status is RefundStatus.OPEN and self.expires_at <= now

    def shown_status(self, now: datetime) -> RefundStatus:
        """The status to show: an open refund past its life is expired."""
        return RefundStatus.EXPIRED if self.expired_at(now) else self.status


def new_refund_id() -> str:
    """A public refund id: ``rf_`` and 20 lowercase base32 characters."""
    import base64

    raw = base64.b32encode(secrets.token_bytes(13)).decode("ascii").lower().rstrip("=")
    return ID_PREFIX + raw[:20]


def new_claim_token() -> str:
    """A claim token: 192 random bits, URL-safe base64 (32 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_digest(token: str) -> str:
    """What is stored of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_matches(token: str, digest: str) -> bool:
    """Constant-time check of a presented token against a stored digest."""
    return hmac.compare_digest(token_digest(token), digest)


def looks_like_token(token: str) -> bool:
    """Cheap shape check before any lookup: URL-safe base64 of the right length."""
    return len(token) == 32 and all(c.isascii() and (c.isalnum() or c in "-_") for c in token)


def rfc3339(value: datetime | None) -> str | None:
    """``2026-11-26T02:00:00Z``-style text (seconds), or None."""
    if value is None:
        return None
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def refund_json(refund: Refund, now: datetime, claim_url: str | None = None) -> dict[str, Any]:
    """The API's view of a refund (``GET /refunds/{id}``); ``claim_url`` only once made."""
    body: dict[str, Any] = {
        "id": refund.id,
        "address": refund.request_address,
        "status": refund.shown_status(now).value,
        "amount": refund.amount,
        "reason": refund.reason,
        "created_at": rfc3339(refund.created_at),
        "expires_at": rfc3339(refund.expires_at),
        "claim_address": refund.claim_address,
        "claimed_at": rfc3339(refund.claimed_at),
        "sent_at": rfc3339(refund.sent_at),
        "tx_hash_list": list(refund.tx_hash_list),
        "fee": refund.fee,
        "manual": refund.manual,
        "confirmed_at": rfc3339(refund.confirmed_at),
        "cancelled_at": rfc3339(refund.cancelled_at),
        "error": refund.error,
    }
    if refund.price is not None:
        body["price"] = dict(refund.price)
    if refund.receipt_id is not None:
        body["unmatched_id"] = refund.receipt_id
    if claim_url is not None:
        body["claim_url"] = claim_url
    return body


def refund_event_payload(refund: Refund, kind: RefundEventKind, now: datetime) -> dict[str, Any]:
    """The body of a refund callback and feed entry: the event, the request, the refund."""
    return {
        "event": kind.value,
        "address": refund.request_address,
        "refund": refund_json(refund, now),
    }
