"""JSON shapes of the spec, built from ledger values. Shared by the API and the callbacks
so that ``GET /receive/:address`` and a callback payload never disagree."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from xmrgate.ledger import Coverage, Event, Transfer, coverage, visible_transfers


class RequestLike(Protocol):
    """What the views need of a payment request."""

    @property
    def amount(self) -> int: ...
    @property
    def description(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...


def rfc3339(value: datetime) -> str:
    """RFC 3339 UTC with microseconds, e.g. ``2026-11-21T08:18:00.123456Z``."""
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def rfc3339_seconds(unix: int) -> str:
    """RFC 3339 UTC to the second from a unix time, e.g. ``2026-11-21T08:18:00Z``."""
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def transaction_json(transfer: Transfer, chain_height: int) -> dict[str, Any]:
    """One incoming transaction as the spec shapes it."""
    return {
        "amount": transfer.amount,
        "confirmations": transfer.confirmations(chain_height),
        "double_spend_seen": transfer.double_spend_seen,
        "fee": transfer.fee,
        "height": transfer.height,
        "timestamp": rfc3339_seconds(transfer.timestamp),
        "tx_hash": transfer.tx_hash,
        "unlock_time": transfer.unlock_time,
        "locked": transfer.locked,
    }


def _amount_json(cov: Coverage) -> dict[str, Any]:
    return {"expected": cov.expected, "covered": {"total": cov.total, "unlocked": cov.unlocked}}


def receive_status_json(
    request: RequestLike,
    transfers: list[Transfer],
    chain_height: int,
    min_height: int | None = None,
    max_height: int | None = None,
) -> dict[str, Any]:
    """The body of ``GET /receive/:address``; totals always cover every transfer."""
    cov = coverage(request.amount, transfers)
    shown = visible_transfers(transfers, min_height, max_height)
    return {
        "amount": _amount_json(cov),
        "complete": cov.complete,
        "description": request.description,
        "created_at": rfc3339(request.created_at),
        "transactions": [transaction_json(t, chain_height) for t in shown],
    }


def callback_json(
    request: RequestLike, address: str, event: Event, chain_height: int
) -> dict[str, Any]:
    """The body of a callback: the spec's payload at the moment of the event.

    ``event`` and ``address`` are additions; MoneroPay clients ignore unknown fields.
    """
    return {
        "amount": _amount_json(event.coverage),
        "complete": event.coverage.complete,
        "description": request.description,
        "created_at": rfc3339(request.created_at),
        "transaction": transaction_json(event.transfer, chain_height),
        "event": event.kind.value,
        "address": address,
    }
