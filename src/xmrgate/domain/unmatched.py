"""Unmatched receipts: money that reached a subaddress no payment request owns (pure).

A customer can pay an address whose request is gone (a link request pruned after its
grace, a request the shop deleted while nothing had arrived), a pooled index not yet
handed out, or a subaddress the merchant made with another tool on the same account.
The sync tick records each such transfer as a receipt of its store, kept in step with
the chain by the same ledger as a request's transfers (gone on a reorg, unlocked
later), and announces it in the feed as ``transfer.unmatched``.

Which side an observed transfer goes to is decided per transfer: one already recorded
as a receipt stays a receipt (a pooled index handed out after money reached it must
not be credited that money: the request did not exist when it came); otherwise one to
a subaddress with a request is the request's, and the rest are receipts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from xmrgate.domain import ledger
from xmrgate.domain.ledger import Observation, Transfer, TransferState

UNMATCHED_EVENT = "transfer.unmatched"
MAX_NOTE = 500

# The ledger's steps a receipt's event announces: its first confirmation (pool money may
# still vanish, so a pool sighting alone is not announced) and the loss of a confirmed one.
_ANNOUNCED = frozenset({ledger.EventKind.CONFIRMED, ledger.EventKind.GONE})


class ReceiptStatus(StrEnum):
    """What the merchant made of a receipt."""

    OPEN = "open"
    DISMISSED = "dismissed"


@dataclass(frozen=True, slots=True)
class UnmatchedReceipt:
    """A stored receipt: the transfer, where it arrived, and the merchant's answer."""

    id: int
    store_id: str
    address: str
    transfer: Transfer
    status: ReceiptStatus
    note: str | None
    created_at: datetime
    dismissed_at: datetime | None = None
    # What its refunds in a holding state reserve (never more than it received).
    refunded: int = 0


@dataclass(frozen=True, slots=True)
class ReceiptOutcome:
    """What a tick changes of one store's receipts."""

    changed: list[Transfer]
    # The transfers whose step is announced (their state is the step's), in order.
    announced: list[Transfer]


def split_observations(
    observed: Iterable[Observation],
    request_indices: Collection[int],
    receipt_keys: Collection[tuple[str, int]],
) -> tuple[list[Observation], list[Observation]]:
    """(the requests' observations, the receipts' observations) of one store."""
    for_requests: list[Observation] = []
    for_receipts: list[Observation] = []
    for obs in observed:
        key = (obs.tx_hash, obs.subaddr_index)
        if key in receipt_keys or obs.subaddr_index not in request_indices:
            for_receipts.append(obs)
        else:
            for_requests.append(obs)
    return for_requests, for_receipts


def reconcile_receipts(
    *,
    stored: Iterable[Transfer],
    observed: Iterable[Observation],
    window_start: int,
    chain_height: int,
    now: int,
    announced: Collection[tuple[str, int]] = frozenset(),
) -> ReceiptOutcome:
    """``ledger.reconcile`` over receipts: ``stored`` holds every receipt the window can
    change (pool, or mined at ``window_start`` or above) and those of the observed keys.

    ``announced``: stored pool receipts whose last event said "confirmed" (a reorg put
    them back in the pool): whoever was told they confirmed must hear they are gone."""
    stored = list(stored)
    observed = list(observed)
    indices = {t.subaddr_index for t in stored} | {o.subaddr_index for o in observed}
    outcome = ledger.reconcile(
        expected_by_index=dict.fromkeys(indices, 0),
        stored=stored,
        observed=observed,
        window_start=window_start,
        chain_height=chain_height,
        now=now,
        zero_conf=False,
        announced=announced,
    )
    steps = [e.transfer for e in outcome.events if e.kind in _ANNOUNCED]
    return ReceiptOutcome(changed=outcome.changed, announced=steps)


def receipt_json(receipt: UnmatchedReceipt, chain_height: int) -> dict[str, Any]:
    """A receipt as ``GET /unmatched`` and its event show it."""
    transfer = receipt.transfer
    return {
        "id": receipt.id,
        "address": receipt.address,
        "subaddr_index": transfer.subaddr_index,
        "tx_hash": transfer.tx_hash,
        "amount": transfer.amount,
        "fee": transfer.fee,
        "height": transfer.height,
        "confirmations": transfer.confirmations(chain_height),
        "locked": transfer.locked,
        "double_spend_seen": transfer.double_spend_seen,
        "state": transfer.state.value,
        "status": receipt.status.value,
        "note": receipt.note,
        "refunded": receipt.refunded,
        "first_seen": transfer.seen_at,
        "created_at": receipt.created_at.isoformat(),
        "dismissed_at": receipt.dismissed_at.isoformat() if receipt.dismissed_at else None,
    }


def event_json(receipt: UnmatchedReceipt, chain_height: int) -> dict[str, Any]:
    """The body of a ``transfer.unmatched`` event (feed and, later, webhooks)."""
    return {"event": UNMATCHED_EVENT, "unmatched": receipt_json(receipt, chain_height)}


def counts(transfer: Transfer) -> bool:
    """Whether a receipt is money the merchant holds or may hold (not gone)."""
    return transfer.state is not TransferState.GONE and ledger.counts_toward_total(transfer)
