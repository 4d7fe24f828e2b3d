"""Finding requests and replaying events: ``GET /receive`` (the list) and ``GET /events``.

The list pages newest first with an opaque keyset cursor (``created_at``, ``id`` of
the last row), so a page costs the same however deep it is and rows created while a
client pages never shift what it sees. Status filters read the status the sync tick
recorded, with an expiry that has passed since applied (``invoice.displayed``).

The feed is every event the gateway stored, in ``seq`` order. Events are written
only by the sync tick, under its leadership and in its transaction, so ``seq``
values become visible in increasing order: a client that remembers the last ``seq``
it processed and asks for ``after=<seq>`` misses nothing.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.invoice import InvoiceStatus
from xmrgate.domain.records import PaymentRequest

MAX_LIMIT = 500
MAX_SEARCH = 200
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DEFAULT_LIMIT = 100


@dataclass(frozen=True, slots=True)
class ListQuery:
    """What ``GET /receive`` asks for; ``after_key`` is the decoded cursor."""

    statuses: frozenset[InvoiceStatus] = frozenset()
    created_after: datetime | None = None
    created_before: datetime | None = None
    limit: int = DEFAULT_LIMIT
    after_key: tuple[datetime, int] | None = None
    # Words of the description (any case) or the start of the address.
    search: str | None = None
    # Only the requests made by this payment link (its id).
    link: str | None = None


@dataclass(frozen=True, slots=True)
class RequestPage:
    """One page of the list and the cursor of the next one (None: this was the last)."""

    requests: list[PaymentRequest]
    next_cursor: str | None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass(frozen=True, slots=True)
class FeedEvent:
    """One stored event: its place in the feed, its request, kind and payload (JSON text)."""

    seq: int
    address: str
    kind: str
    payload: str


class RequestListing(Protocol):
    """The list query (``adapters/store/listing.py``)."""

    async def page(self, query: ListQuery, now: datetime) -> list[PaymentRequest]:
        """Up to ``query.limit + 1`` requests, newest first, after ``query.after_key``."""
        ...


class EventFeed(Protocol):
    """The feed query (``adapters/store/listing.py``)."""

    async def after(self, seq: int, limit: int) -> list[FeedEvent]:
        """Up to ``limit`` events with a ``seq`` above ``seq``, oldest first."""
        ...


def encode_cursor(created_at: datetime, request_id: int) -> str:
    """The opaque cursor that continues after this row."""
    micros = (created_at - EPOCH) // timedelta(microseconds=1)
    return base64.urlsafe_b64encode(f"{micros}.{request_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """The row a cursor continues after; InvalidInput for anything we did not hand out."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        micros_text, id_text = raw.split(".")
        micros, request_id = int(micros_text), int(id_text)
        when = EPOCH + timedelta(microseconds=micros)
    except (ValueError, UnicodeDecodeError, binascii.Error, OverflowError, OSError) as exc:
        raise InvalidInput("cursor is not one this gateway handed out") from exc
    if request_id < 0:
        raise InvalidInput("cursor is not one this gateway handed out")
    return when, request_id


class Invoices:
    """The list of requests and the event feed."""

    def __init__(
        self,
        listing: RequestListing,
        feed: EventFeed,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._listing = listing
        self._feed = feed
        self._clock = clock

    async def find(self, query: ListQuery) -> RequestPage:
        """One page of requests, newest first, with the cursor of the next page."""
        if not 1 <= query.limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
        if (
            query.created_after is not None
            and query.created_before is not None
            and query.created_after >= query.created_before
        ):
            raise InvalidInput("created_after must be earlier than created_before")
        if query.search is not None and len(query.search) > MAX_SEARCH:
            raise InvalidInput(f"search must be at most {MAX_SEARCH} characters")
        now = self._clock()
        rows = await self._listing.page(query, now)
        page = rows[: query.limit]
        more = len(rows) > query.limit
        cursor = encode_cursor(page[-1].created_at, page[-1].id) if more and page else None
        return RequestPage(page, cursor, now)

    async def events(self, after: int, limit: int) -> list[FeedEvent]:
        """Events after ``seq`` ``after``, oldest first."""
        if after < 0:
            raise InvalidInput("after must not be negative")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
        return await self._feed.after(after, limit)
