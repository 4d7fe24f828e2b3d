"""What the refunds use case needs from storage (``adapters/store/refunds.py``).

One repository is bound to one store: it never reads or changes another store's refunds
(``by_token`` alone looks across stores, for the public claim page, and says which store
the refund is of). Every state change is one conditional statement in one transaction,
together with the event it makes (``refund.claimed``, ``refund.sent``,
``refund.confirmed``), so that two racing calls never both win.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from xmrgate.domain.refunds import NewRefund, Refund, RefundStatus


class RefundRepository(Protocol):
    """The refunds of one store, and the reservation of the money they give back."""

    async def refundable(self, address: str) -> tuple[int, int, int] | None:
        """(request id, received, refunded) of this store's request; None if not this store's.

        ``received`` counts the request's transfers mined in a block and not gone
        (money still in the pool may vanish); ``refunded`` is what refunds in a
        holding state reserve (``domain.refunds.HOLDING``).
        """
        ...

    async def refundable_receipt(self, receipt_id: int) -> tuple[int, int, int] | None:
        """(receipt id, received, refunded) of this store's unmatched receipt; None if not
        this store's. ``received`` is its amount once mined and not gone."""
        ...

    async def for_receipt(self, receipt_id: int) -> list[Refund]:
        """This store's refunds of one unmatched receipt, oldest first."""
        ...

    async def create(self, refund: NewRefund, now: datetime) -> Refund:
        """Reserve ``refund.amount`` and insert the refund, in one transaction.

        First marks this request's open refunds whose link expired (``now``) as
        expired, freeing their money. The reservation is a single conditional UPDATE
        of the request's ``refunded`` column (``refunded + amount <= received``):
        of two racing refunds for the same money one wins, the other raises
        ``RefundTooLarge`` with nothing written.
        """
        ...

    async def get(self, refund_id: str) -> Refund | None:
        """One refund of this store; None when unknown or another store's."""
        ...

    async def by_token(self, digest: str) -> Refund | None:
        """The refund whose claim token has this SHA-256 digest, of any store."""
        ...

    async def listing(self, status: RefundStatus | None, limit: int) -> list[Refund]:
        """This store's refunds: claimed (waiting for approval) first, then newest first."""
        ...

    async def for_request(self, request_id: int) -> list[Refund]:
        """This store's refunds of one request, oldest first."""
        ...

    async def claim(self, refund_id: str, address: str, now: datetime) -> Refund | None:
        """open and not expired -> claimed with ``address``, plus its ``refund.claimed``
        event; None (nothing written) when it was not open or its link expired."""
        ...

    async def start_sending(self, refund_id: str, amount: int | None = None) -> Refund | None:
        """claimed -> sending; None when it was not claimed (a second send loses here).

        ``amount``: a new amount (a fiat refund converted now); the reservation moves
        with it under the same rule as ``create`` (``RefundTooLarge``, nothing written).
        """
        ...

    async def mark_sent(
        self,
        refund_id: str,
        *,
        tx_hash_list: Sequence[str],
        fee: int | None,
        tx_key: str | None,
        payout_id: int | None,
        manual: bool,
        now: datetime,
    ) -> Refund | None:
        """sending (or claimed, for a refund paid by hand) -> sent, plus ``refund.sent``;
        None when it was in neither state."""
        ...

    async def send_failed(self, refund_id: str, error: str) -> None:
        """sending -> claimed: the wallet refused or was never reached (nothing left)."""
        ...

    async def send_unknown(self, refund_id: str, error: str, payout_id: int | None) -> None:
        """Stays sending, with the error: the wallet may have sent; never sent again."""
        ...

    async def cancel(self, refund_id: str, now: datetime) -> Refund | None:
        """open or claimed -> cancelled, its money freed; None when in another state."""
        ...

    async def expire_due(self, now: datetime) -> int:
        """Every open refund of this store whose link expired -> expired, money freed."""
        ...

    async def awaiting_confirmation(self, limit: int = 100) -> list[Refund]:
        """This store's sent refunds, oldest first (the confirmation watcher's work)."""
        ...

    async def mark_confirmed(self, refund_id: str, now: datetime) -> Refund | None:
        """sent -> confirmed, plus ``refund.confirmed``; None when it was not sent."""
        ...
