"""An in-memory ``RefundRepository`` (``core/refund_ports.py``) for use-case and page tests.

It follows the same rules as the SQL store (``adapters/store/refunds.py``): one store's
view, the reservation against what the request received, conditional transitions, one
event per claim, send and confirmation (kept in ``events``). Several stores share one
``RefundBook``; each gets its own ``FakeRefundStore`` over it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from xmrgate.domain.refunds import (
    HOLDING,
    NewRefund,
    Refund,
    RefundEventKind,
    RefundStatus,
    RefundTooLarge,
)


@dataclass
class FakeRequest:
    """A payment request as refunds see it."""

    id: int
    address: str
    store_id: str
    received: int
    refunded: int = 0


@dataclass
class RefundBook:
    """What every store's fake repository shares: requests, refunds, the events made."""

    requests: dict[str, FakeRequest] = field(default_factory=dict)
    # Unmatched receipts by id (their ``received``: the amount once mined).
    receipts: dict[int, FakeRequest] = field(default_factory=dict)
    refunds: dict[str, Refund] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # digest -> refund id
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, refund id, store)

    def add_request(self, address: str, received: int, store_id: str = "default") -> FakeRequest:
        """A request of ``store_id`` that received ``received`` piconero in mined txs."""
        request = FakeRequest(len(self.requests) + 1, address, store_id, received)
        self.requests[address] = request
        return request


class FakeRefundStore:
    """One store's view of a ``RefundBook``."""

    def __init__(self, book: RefundBook, store_id: str = "default") -> None:
        self.book = book
        self.store_id = store_id

    def _request_by_id(self, request_id: int | None) -> FakeRequest:
        return next(r for r in self.book.requests.values() if r.id == request_id)

    def _source(self, refund: Refund | NewRefund) -> FakeRequest:
        if refund.receipt_id is not None:
            return self.book.receipts[refund.receipt_id]
        return self._request_by_id(refund.request_id)

    def _mine(self, refund_id: str) -> Refund | None:
        refund = self.book.refunds.get(refund_id)
        return refund if refund is not None and refund.store_id == self.store_id else None

    def _set(self, refund: Refund) -> Refund:
        self.book.refunds[refund.id] = refund
        return refund

    def _free(self, refund: Refund) -> None:
        self._source(refund).refunded -= refund.amount

    async def refundable(self, address: str) -> tuple[int, int, int] | None:
        request = self.book.requests.get(address)
        if request is None or request.store_id != self.store_id:
            return None
        return request.id, request.received, request.refunded

    async def refundable_receipt(self, receipt_id: int) -> tuple[int, int, int] | None:
        receipt = self.book.receipts.get(receipt_id)
        if receipt is None or receipt.store_id != self.store_id:
            return None
        return receipt.id, receipt.received, receipt.refunded

    async def for_receipt(self, receipt_id: int) -> list[Refund]:
        return sorted(
            (
                r
                for r in self.book.refunds.values()
                if r.receipt_id == receipt_id and r.store_id == self.store_id
            ),
            key=lambda r: r.created_at,
        )

    async def create(self, refund: NewRefund, now: datetime) -> Refund:
        request = self._source(refund)
        for old in list(self.book.refunds.values()):
            same = (old.receipt_id, old.request_id) == (refund.receipt_id, refund.request_id)
            if same and old.expired_at(now):
                self._free(old)
                self._set(replace(old, status=RefundStatus.EXPIRED))
        if request.refunded + refund.amount > request.received:
            raise RefundTooLarge(
                f"the request received {request.received} piconero and "
                f"{request.refunded} is already refunded"
            )
        request.refunded += refund.amount
        self.book.digests[refund.token_digest] = refund.id
        return self._set(
            Refund(
                id=refund.id,
                store_id=self.store_id,
                request_id=refund.request_id,
                receipt_id=refund.receipt_id,
                request_address=request.address,
                amount=refund.amount,
                reason=refund.reason,
                status=RefundStatus.OPEN,
                created_at=refund.created_at,
                expires_at=refund.expires_at,
                price=refund.price,
                token_digest=refund.token_digest,
            )
        )

    async def get(self, refund_id: str) -> Refund | None:
        return self._mine(refund_id)

    async def by_token(self, digest: str) -> Refund | None:
        refund_id = self.book.digests.get(digest)
        return None if refund_id is None else self.book.refunds[refund_id]

    async def listing(self, status: RefundStatus | None, limit: int) -> list[Refund]:
        mine = [r for r in self.book.refunds.values() if r.store_id == self.store_id]
        if status is not None:
            mine = [r for r in mine if r.status is status]
        mine.sort(key=lambda r: r.created_at, reverse=True)
        mine.sort(key=lambda r: r.status is not RefundStatus.CLAIMED)
        return mine[:limit]

    async def for_request(self, request_id: int) -> list[Refund]:
        return sorted(
            (
                r
                for r in self.book.refunds.values()
                if r.request_id == request_id and r.store_id == self.store_id
            ),
            key=lambda r: r.created_at,
        )

    async def claim(self, refund_id: str, address: str, now: datetime) -> Refund | None:
        refund = self._mine(refund_id)
        if refund is None or refund.status is not RefundStatus.OPEN or refund.expires_at <= now:
            return None
        claimed = self._set(
            replace(refund, status=RefundStatus.CLAIMED, claim_address=address, claimed_at=now)
        )
        self.book.events.append((RefundEventKind.CLAIMED.value, refund_id, self.store_id))
        return claimed

    async def start_sending(self, refund_id: str, amount: int | None = None) -> Refund | None:
        refund = self._mine(refund_id)
        if refund is None or refund.status is not RefundStatus.CLAIMED:
            return None
        if amount is not None and amount != refund.amount:
            request = self._source(refund)
            moved = request.refunded - refund.amount + amount
            if moved > request.received:
                raise RefundTooLarge("the converted amount is more than remains refundable")
            request.refunded = moved
            refund = replace(refund, amount=amount)
        return self._set(replace(refund, status=RefundStatus.SENDING, error=None))

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
        refund = self._mine(refund_id)
        allowed = {RefundStatus.SENDING} | ({RefundStatus.CLAIMED} if manual else set())
        if refund is None or refund.status not in allowed:
            return None
        sent = self._set(
            replace(
                refund,
                status=RefundStatus.SENT,
                tx_hash_list=tuple(tx_hash_list),
                fee=fee,
                tx_key=tx_key,
                payout_id=payout_id,
                manual=manual,
                sent_at=now,
                error=None,
            )
        )
        self.book.events.append((RefundEventKind.SENT.value, refund_id, self.store_id))
        return sent

    async def send_failed(self, refund_id: str, error: str) -> None:
        refund = self._mine(refund_id)
        if refund is not None and refund.status is RefundStatus.SENDING:
            self._set(replace(refund, status=RefundStatus.CLAIMED, error=error))

    async def send_unknown(self, refund_id: str, error: str, payout_id: int | None) -> None:
        refund = self._mine(refund_id)
        if refund is not None and refund.status is RefundStatus.SENDING:
            self._set(replace(refund, error=error, payout_id=payout_id))

    async def cancel(self, refund_id: str, now: datetime) -> Refund | None:
        refund = self._mine(refund_id)
        if refund is None or refund.status not in (RefundStatus.OPEN, RefundStatus.CLAIMED):
            return None
        self._free(refund)
        return self._set(replace(refund, status=RefundStatus.CANCELLED, cancelled_at=now))

    async def expire_due(self, now: datetime) -> int:
        due = [
            r
            for r in self.book.refunds.values()
            if r.store_id == self.store_id and r.expired_at(now)
        ]
        for refund in due:
            self._free(refund)
            self._set(replace(refund, status=RefundStatus.EXPIRED))
        return len(due)

    async def awaiting_confirmation(self, limit: int = 100) -> list[Refund]:
        sent = [
            r
            for r in self.book.refunds.values()
            if r.store_id == self.store_id and r.status is RefundStatus.SENT
        ]
        return sorted(sent, key=lambda r: r.created_at)[:limit]

    async def mark_confirmed(self, refund_id: str, now: datetime) -> Refund | None:
        refund = self._mine(refund_id)
        if refund is None or refund.status is not RefundStatus.SENT:
            return None
        confirmed = self._set(replace(refund, status=RefundStatus.CONFIRMED, confirmed_at=now))
        self.book.events.append((RefundEventKind.CONFIRMED.value, refund_id, self.store_id))
        return confirmed


def holding_total(book: RefundBook, request_id: int) -> int:
    """What refunds in a holding state reserve of one request (to check ``refunded``)."""
    return sum(
        r.amount
        for r in book.refunds.values()
        if r.request_id == request_id and r.status in HOLDING
    )
