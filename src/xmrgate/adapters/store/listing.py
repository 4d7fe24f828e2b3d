"""The list of payment requests and the event feed (implement ``core.invoices`` ports).

The list is index-backed whatever the filter: without a status filter one range scan
of ``ix_payment_requests_created`` (``created_at``, ``id``) read backwards; with one,
a UNION ALL of one such scan per recorded status (``ix_payment_requests_status_created``),
each stopping after ``limit + 1`` rows, merged and cut. An open request whose expiry
has passed counts as ``expired`` before the sync tick records it: those rows come from
``ix_payment_requests_status_expires``, and there are only ever a few of them. The
cursor is a row-value comparison ``(created_at, id) < (...)``, an index range too.

``search`` (the dashboard's search box) filters the rows those scans read: a rare
match reads many of them, which is fine for an operator's search but is no way to
look a request up (``GET /receive/:address`` is).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, or_, select, true, tuple_, union_all

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.payments import request_from_row
from xmrgate.adapters.store.tables import events, payment_requests, unmatched_receipts
from xmrgate.core.invoices import FeedEvent, ListQuery
from xmrgate.domain.invoice import InvoiceStatus
from xmrgate.domain.records import PaymentRequest

_R = payment_requests.c
WAITING = InvoiceStatus.WAITING.value
PARTIAL = InvoiceStatus.PARTIAL.value


def _branches(
    wanted: frozenset[InvoiceStatus], now: datetime
) -> list[tuple[ColumnElement[bool], bool]]:
    """Disjoint predicates on the recorded status whose union is the wanted statuses.

    Each comes with whether to read it newest first with a LIMIT. The open requests past
    their expiry (only those the tick has not recorded yet: a handful) are read whole
    through ``ix_payment_requests_status_expires``: ordered and limited, PostgreSQL
    would walk ``(status, created_at)`` backwards through every open request instead,
    misled by statistics that cannot know that few open requests are past their expiry.
    """
    not_due = or_(_R.expires_at.is_(None), _R.expires_at > now)
    found: list[tuple[ColumnElement[bool], bool]] = []
    for status in sorted(wanted):
        if status is InvoiceStatus.EXPIRED:
            found += [
                (_R.status == InvoiceStatus.EXPIRED.value, True),
                (and_(_R.status == WAITING, _R.expires_at <= now), False),
                (and_(_R.status == PARTIAL, _R.expires_at <= now), False),
            ]
        elif status in (InvoiceStatus.WAITING, InvoiceStatus.PARTIAL):
            found.append((and_(_R.status == status.value, not_due), True))
        else:
            found.append((_R.status == status.value, True))
    return found


def _common(query: ListQuery, store_id: str | None) -> ColumnElement[bool]:
    conditions: list[ColumnElement[bool]] = []
    if store_id is not None:
        conditions.append(_R.store_id == store_id)
    if query.link is not None:
        conditions.append(_R.link_id == query.link)
    if query.created_after is not None:
        conditions.append(_R.created_at > query.created_after)
    if query.created_before is not None:
        conditions.append(_R.created_at < query.created_before)
    if query.after_key is not None:
        at, request_id = query.after_key
        # A row-value comparison, not "a < x OR (a = x AND b < y)": PostgreSQL turns it
        # into an index range, so a page deep in the list costs what the first one does.
        conditions.append(tuple_(_R.created_at, _R.id) < tuple_(at, request_id))
    if query.search:
        # autoescape: a % or _ typed in the box is matched literally.
        conditions.append(
            or_(
                _R.address.istartswith(query.search, autoescape=True),
                _R.description.icontains(query.search, autoescape=True),
            )
        )
    return and_(true(), *conditions)


def list_statement(query: ListQuery, now: datetime, store_id: str | None = None) -> Select[Any]:
    """The SELECT of one page (``limit + 1`` rows: the extra one says a next page exists),
    of one store's requests (every store's when ``store_id`` is None)."""
    newest_first = (_R.created_at.desc(), _R.id.desc())
    take = query.limit + 1
    if not query.statuses:
        return (
            select(payment_requests)
            .where(_common(query, store_id))
            .order_by(*newest_first)
            .limit(take)
        )
    parts = []
    for branch, ordered in _branches(query.statuses, now):
        part = select(payment_requests).where(_common(query, store_id), branch)
        parts.append((part.order_by(*newest_first).limit(take) if ordered else part).subquery())
    # Each branch as "SELECT * FROM (... ORDER BY ... LIMIT n)": SQLite allows no
    # ORDER BY/LIMIT directly in a compound SELECT's members.
    merged = parts[0] if len(parts) == 1 else union_all(*(select(p) for p in parts)).subquery()
    return select(merged).order_by(merged.c.created_at.desc(), merged.c.id.desc()).limit(take)


class SqlListing:
    """``GET /receive`` and ``GET /events`` in SQL."""

    def __init__(self, db: Database, store_id: str | None = None) -> None:
        self._db = db
        # One store's requests and events (None: every store's).
        self._store_id = store_id

    async def page(self, query: ListQuery, now: datetime) -> list[PaymentRequest]:
        """Up to ``limit + 1`` requests, newest first, after the cursor's row."""
        async with self._db.read(autocommit=True) as conn:
            statement = list_statement(query, now, self._store_id)
            rows = (await conn.execute(statement)).mappings().all()
        return [request_from_row(row) for row in rows]

    async def after(self, seq: int, limit: int) -> list[FeedEvent]:
        """Up to ``limit`` events after ``seq``, oldest first (the primary key's order)."""
        statement = (
            # A receipt's event (``transfer.unmatched``) has no request: its address is
            # the receipt's.
            select(
                events.c.seq,
                func.coalesce(_R.address, unmatched_receipts.c.address),
                events.c.kind,
                events.c.payload,
            )
            .outerjoin(payment_requests, payment_requests.c.id == events.c.request_id)
            .outerjoin(unmatched_receipts, unmatched_receipts.c.id == events.c.receipt_id)
            .where(events.c.seq > seq)
            .order_by(events.c.seq)
            .limit(limit)
        )
        if self._store_id is not None:
            statement = statement.where(events.c.store_id == self._store_id)
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(statement)).all()
        return [FeedEvent(seq=r[0], address=r[1], kind=r[2], payload=r[3]) for r in rows]
