"""Unmatched receipts of one store: list them, look at one, dismiss one with a note.

The sync tick records them (``domain/unmatched.py``); this use case is what the merchant
does with them. A dismissed receipt is kept, never deleted: the money is in the wallet
whatever the merchant decided, and the record says who was told what.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from xmrgate.core.invoices import MAX_LIMIT, decode_cursor, encode_cursor
from xmrgate.domain.errors import Conflict, InvalidInput, NotFound
from xmrgate.domain.unmatched import MAX_NOTE, ReceiptStatus, UnmatchedReceipt


@dataclass(frozen=True, slots=True)
class ReceiptPage:
    """One page of receipts (newest first), the next page's cursor and the chain height
    their confirmations are counted at."""

    receipts: list[UnmatchedReceipt]
    next_cursor: str | None
    chain_height: int


@dataclass(frozen=True, slots=True)
class ReceiptTotals:
    """Open receipts of a store: how many, how much (not gone), the oldest's creation."""

    count: int
    amount: int
    oldest: datetime | None


class ReceiptRepository(Protocol):
    """One store's receipts in storage (``adapters/store/unmatched.py``)."""

    async def page(
        self, status: ReceiptStatus | None, limit: int, after: tuple[datetime, int] | None
    ) -> list[UnmatchedReceipt]:
        """Up to ``limit`` receipts newest first, after the cursor's row."""
        ...

    async def get(self, receipt_id: int) -> UnmatchedReceipt | None:
        """The store's receipt, or None (another store's is None too)."""
        ...

    async def dismiss(self, receipt_id: int, note: str, now: datetime) -> UnmatchedReceipt | None:
        """Open -> dismissed with the note, in one conditional statement; None when the
        receipt is not this store's or not open."""
        ...

    async def chain_height(self) -> int:
        """The height the sync last saw (0 before the first tick)."""
        ...

    async def totals(self) -> ReceiptTotals:
        """The store's open receipts that are not gone."""
        ...


class UnmatchedReceipts:
    """What a merchant does with money no request owns."""

    def __init__(
        self,
        repository: ReceiptRepository,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._repository = repository
        self._clock = clock

    async def page(
        self, status: ReceiptStatus | None, limit: int, cursor: str | None
    ) -> ReceiptPage:
        """One page of the store's receipts, newest first."""
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
        after = decode_cursor(cursor) if cursor else None
        rows = await self._repository.page(status, limit + 1, after)
        shown = rows[:limit]
        more = len(rows) > limit
        next_cursor = encode_cursor(shown[-1].created_at, shown[-1].id) if more and shown else None
        return ReceiptPage(shown, next_cursor, await self._repository.chain_height())

    async def get(self, receipt_id: int) -> tuple[UnmatchedReceipt, int]:
        """The receipt and the chain height; NotFound when it is not this store's."""
        receipt = await self._repository.get(receipt_id)
        if receipt is None:
            raise NotFound(f"no unmatched receipt {receipt_id}")
        return receipt, await self._repository.chain_height()

    async def dismiss(self, receipt_id: int, note: str) -> tuple[UnmatchedReceipt, int]:
        """Dismiss an open receipt with a note (why: returned by hand, a test, ...)."""
        note = note.strip()
        if not note:
            raise InvalidInput("note must say why the receipt is dismissed")
        if len(note) > MAX_NOTE:
            raise InvalidInput(f"note must be at most {MAX_NOTE} characters")
        if any(ord(c) < 32 and c not in "\n\t" for c in note):
            raise InvalidInput("note must not contain control characters")
        dismissed = await self._repository.dismiss(receipt_id, note, self._clock())
        if dismissed is None:
            receipt, _height = await self.get(receipt_id)
            raise Conflict(f"unmatched receipt {receipt_id} is {receipt.status.value} already")
        return dismissed, await self._repository.chain_height()

    async def totals(self) -> ReceiptTotals:
        """The store's open receipts (the metrics and the dashboard's overview)."""
        return await self._repository.totals()
