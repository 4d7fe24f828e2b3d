"""One payment of a Greenfield invoice: its id, its status and its JSON (§2.3, §2.7).

A Greenfield payment is one of our transfers (``ledger.Transfer``: one transaction's
outputs to one subaddress). Its id is ``"{txid}#{accountIndex}#{subaddressIndex}"`` as the
Monero plugin writes it, so the same transaction
paying two invoices gives two payments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from xmrgate.domain.greenfield.amounts import xmr_string
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.invoice import in_time_before
from xmrgate.domain.ledger import Transfer, TransferState, counts_toward_total

_TXID = re.compile(r"[0-9a-fA-F]{64}")
_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")
# Account and subaddress indices are uint32 in the wallet.
MAX_INDEX = 2**32 - 1


class PaymentStatus(StrEnum):
    """A payment's ``status`` (§2.3)."""

    INVALID = "Invalid"
    PROCESSING = "Processing"
    SETTLED = "Settled"


@dataclass(frozen=True, slots=True)
class PaymentId:
    """The parts of a payment id; ``str()`` gives the id."""

    txid: str
    account: int
    index: int

    def __str__(self) -> str:
        return format_payment_id(self.txid, self.account, self.index)


def format_payment_id(txid: str, account: int, index: int) -> str:
    """``"<txid>#<account>#<index>"``, the txid in lower case (as the wallet gives it)."""
    if not _TXID.fullmatch(txid):
        raise ValueError("a txid is 64 hex digits")
    if not (0 <= account <= MAX_INDEX and 0 <= index <= MAX_INDEX):
        raise ValueError("account and subaddress indices are 32-bit unsigned")
    return f"{txid.lower()}#{account}#{index}"


def parse_payment_id(value: object, path: str = "paymentId") -> PaymentId:
    """``"<txid>#<account>#<index>"`` back to its parts, or a ``FieldError`` at ``path``.

    Strict: 64 hex digits (either case, kept lower), then two decimal indices without
    signs or leading zeros, each a uint32; so one payment has exactly one spelling.
    """
    if isinstance(value, str):
        parts = value.split("#")
        if (
            len(parts) == 3
            and _TXID.fullmatch(parts[0])
            and all(_INDEX.fullmatch(p) and int(p) <= MAX_INDEX for p in parts[1:])
        ):
            return PaymentId(parts[0].lower(), int(parts[1]), int(parts[2]))
    raise FieldError(path, f"{path} must be <txid>#<account>#<subaddress index>", value)


def payment_status(transfer: Transfer, chain_height: int, required: int) -> PaymentStatus:
    """Where one payment stands for an invoice asking ``required`` confirmations.

    Invalid: gone (dropped, reorged out) or a pool transaction whose inputs were spent
    elsewhere, the transfers our ledger does not count. Settled: spendable, or confirmed
    ``required`` times (0: already in the pool, HighSpeed). A transfer time-locked by its
    sender (``unlock_time``) is settled only once it unlocks: money the merchant cannot
    spend yet is not settled, whatever the policy (the plugin also waits for LockTime).
    """
    if not counts_toward_total(transfer):
        return PaymentStatus.INVALID
    if transfer.state is TransferState.UNLOCKED:
        return PaymentStatus.SETTLED
    if transfer.unlock_time == 0 and transfer.confirmations(chain_height) >= required:
        return PaymentStatus.SETTLED
    return PaymentStatus.PROCESSING


def settled_total(transfers: Iterable[Transfer], chain_height: int, required: int) -> int:
    """Piconero of the payments that are Settled (what ``states.InvoiceFacts.settled`` is)."""
    return sum(
        t.amount
        for t in transfers
        if payment_status(t, chain_height, required) is PaymentStatus.SETTLED
    )


def after_expiration(transfer: Transfer, expires_at: float | None) -> bool:
    """``afterExpiration`` of a payment: it first appeared once the invoice had expired.

    The same rule as our statuses (``invoice.in_time_before``), so a payment is late
    here exactly when it makes our request ``paid_late``.
    """
    return expires_at is not None and transfer.seen_at >= in_time_before(expires_at)


def payment_json(
    transfer: Transfer, *, account: int, destination: str, chain_height: int, required: int
) -> dict[str, Any]:
    """A ``payments[]`` item (§2.3), also the ``payment`` of a payment webhook (§2.7).

    ``fee`` is ``"0"``: in Greenfield it is the network-fee surcharge the invoice charged
    for this payment, which we never charge; the sender's own transaction fee is not
    the merchant's business. ``receivedDate`` is when the transfer first appeared.
    """
    return {
        "id": format_payment_id(transfer.tx_hash, account, transfer.subaddr_index),
        "receivedDate": transfer.seen_at,
        "value": xmr_string(transfer.amount),
        "fee": "0",
        "status": payment_status(transfer, chain_height, required).value,
        "destination": destination,
    }
