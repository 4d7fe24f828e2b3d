"""The callback outbox: events written by the sync tick, claimed and delivered by workers.

A worker claims a row by stamping ``claimed_by``/``claimed_until`` in one conditional
UPDATE, so two workers (or processes) never deliver the same event at once; a claim
of a crashed worker expires. Only the oldest pending event of each payment request
is claimable, which keeps one request's callbacks in order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, exists, func, insert, or_, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import Database, as_utc, utcnow
from xmrgate.adapters.store.tables import callback_tries, events
from xmrgate.domain.errors import Conflict
from xmrgate.domain.records import CallbackTry, OutboxEvent

PENDING = "pending"
DELIVERED = "delivered"
FAILED = "failed"
# An event of a request without callback_url: in the feed (GET /events), never sent.
NO_CALLBACK = "no_callback"
# The kinds of refund events (``domain.refunds.RefundEventKind``), as a LIKE pattern.
REFUND_EVENTS = "refund.%"
# Deliveries of Greenfield webhooks ("gf." and BTCPay's event type), as a LIKE pattern.
WEBHOOK_EVENTS = "gf.%"


def _opt(value: datetime | None) -> datetime | None:
    return as_utc(value) if value is not None else None


def _event(row: RowMapping) -> OutboxEvent:
    return OutboxEvent(
        seq=row["seq"],
        id=row["id"],
        request_id=row["request_id"],
        kind=row["kind"],
        tx_hash=row["tx_hash"],
        callback_url=row["callback_url"] or "",
        payload=row["payload"],
        status=row["status"],
        attempts=row["attempts"],
        created_at=as_utc(row["created_at"]),
        next_attempt_at=_opt(row["next_attempt_at"]),
        last_attempt_at=_opt(row["last_attempt_at"]),
        delivered_at=_opt(row["delivered_at"]),
        last_status=row["last_status"],
        last_error=row["last_error"],
        store_id=row.get("store_id") or "default",
        webhook_id=row.get("webhook_id"),
    )


async def insert_events(conn: AsyncConnection, rows: Iterable[dict[str, Any]]) -> None:
    """Add events in the caller's transaction (the one that changed the state)."""
    now = utcnow()
    values = [
        {
            **row,
            "status": PENDING if row["callback_url"] else NO_CALLBACK,
            "attempts": 0,
            "created_at": now,
            "next_attempt_at": now if row["callback_url"] else None,
        }
        for row in rows
    ]
    if values:
        await conn.execute(insert(events), values)


async def last_event_kinds(
    conn: AsyncConnection, request_ids: Collection[int]
) -> dict[tuple[int, str], str]:
    """The kind of the newest transfer event of each (request id, tx hash), in the caller's
    transaction.

    Refund events (``refund.*``) and webhook deliveries (``gf.*``) are left out: the
    sync decides a request's next event from this, and a refund's ``refund.sent`` (keyed
    by the refund's own tx hash), ``refund.claimed`` (tx hash "") or a Greenfield
    announcement is no step of an incoming transfer.
    """
    ids = sorted(request_ids)
    found: dict[tuple[int, str], str] = {}
    for i in range(0, len(ids), 500):
        rows = await conn.execute(
            select(events.c.request_id, events.c.tx_hash, events.c.kind)
            .where(
                events.c.request_id.in_(ids[i : i + 500]),
                events.c.kind.not_like(REFUND_EVENTS),
                events.c.kind.not_like(WEBHOOK_EVENTS),
            )
            .order_by(events.c.seq)
        )
        for request_id, tx_hash, kind in rows:
            found[(request_id, tx_hash)] = kind
    return found


class OutboxStore:
    """Queries of the delivery worker and the callbacks endpoints."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def claim_due(self, worker: str, limit: int, lease: float) -> list[OutboxEvent]:
        """Claim up to ``limit`` due events, at most one per payment request and
        destination (its callbacks, or one Greenfield webhook)."""
        now = utcnow()
        earlier = events.alias("earlier")
        unclaimed = or_(events.c.claimed_until.is_(None), events.c.claimed_until < now)
        heads = (
            select(events.c.seq)
            .where(
                events.c.status == PENDING,
                events.c.next_attempt_at <= now,
                unclaimed,
                # In order per request and destination: a webhook that is down holds back
                # its own deliveries only, never another webhook's nor the callbacks.
                ~exists().where(
                    and_(
                        earlier.c.request_id == events.c.request_id,
                        earlier.c.webhook_id.is_not_distinct_from(events.c.webhook_id),
                        earlier.c.status == PENDING,
                        earlier.c.seq < events.c.seq,
                    )
                ),
            )
            .order_by(events.c.next_attempt_at, events.c.seq)
            .limit(limit)
            .scalar_subquery()
        )
        async with self._db.write() as conn:
            rows = await conn.execute(
                update(events)
                .where(events.c.seq.in_(heads), events.c.status == PENDING, unclaimed)
                .values(claimed_by=worker, claimed_until=now + timedelta(seconds=lease))
                .returning(*events.c)
            )
            return sorted((_event(r) for r in rows.mappings()), key=lambda e: e.seq)

    async def record_attempt(
        self,
        event_id: str,
        worker: str,
        *,
        delivered: bool,
        status_code: int | None,
        error: str | None,
        next_attempt_at: datetime | None,
    ) -> None:
        """Store the outcome of one try and release the claim.

        Not delivered and no next attempt means the event has failed for good.
        """
        now = utcnow()
        values: dict[str, Any] = {
            "attempts": events.c.attempts + 1,
            "last_attempt_at": now,
            "last_status": status_code,
            "last_error": error,
            "claimed_by": None,
            "claimed_until": None,
        }
        if delivered:
            values.update(status=DELIVERED, delivered_at=now, next_attempt_at=None)
        elif next_attempt_at is None:
            values.update(status=FAILED, next_attempt_at=None)
        else:
            values.update(next_attempt_at=next_attempt_at)
        async with self._db.write() as conn:
            updated = await conn.execute(
                update(events)
                .where(events.c.id == event_id, events.c.claimed_by == worker)
                .values(**values)
                .returning(events.c.seq)
            )
            seq = updated.scalar()
            if seq is not None:  # the claim was still ours: this try counted, so keep it
                await conn.execute(
                    insert(callback_tries).values(
                        event_seq=seq,
                        attempted_at=now,
                        delivered=delivered,
                        status_code=status_code,
                        error=error,
                    )
                )

    async def for_request(self, request_id: int) -> list[OutboxEvent]:
        """Every callback event of a payment request with its tries, oldest first
        (feed-only ones left out)."""
        async with self._db.read() as conn:
            rows = await conn.execute(
                select(events)
                .where(events.c.request_id == request_id, events.c.callback_url.is_not(None))
                .order_by(events.c.seq)
            )
            found = [_event(r) for r in rows.mappings()]
            tries = await conn.execute(
                select(callback_tries)
                .join(events, events.c.seq == callback_tries.c.event_seq)
                .where(events.c.request_id == request_id)
                .order_by(callback_tries.c.event_seq, callback_tries.c.id)
            )
            by_event: dict[int, list[CallbackTry]] = defaultdict(list)
            for t in tries.mappings():
                by_event[t["event_seq"]].append(
                    CallbackTry(
                        at=as_utc(t["attempted_at"]),
                        delivered=bool(t["delivered"]),
                        status_code=t["status_code"],
                        error=t["error"],
                    )
                )
        return [replace(e, tries=tuple(by_event.get(e.seq, ()))) for e in found]

    async def retry_now(self, request_id: int, event_id: str) -> OutboxEvent | None:
        """Make an event due now (again, if it was delivered or failed).

        None when there is no such event; raises Conflict while a worker is
        delivering it (clearing its claim would let two deliveries run at once).
        """
        now = utcnow()
        async with self._db.write() as conn:
            rows = await conn.execute(
                update(events)
                .where(
                    events.c.request_id == request_id,
                    events.c.id == event_id,
                    events.c.callback_url.is_not(None),
                    or_(events.c.claimed_until.is_(None), events.c.claimed_until < now),
                )
                .values(status=PENDING, next_attempt_at=now, claimed_by=None, claimed_until=None)
                .returning(*events.c)
            )
            row = rows.mappings().first()
            if row is not None:
                return _event(row)
            exists_now = (
                await conn.execute(
                    select(events.c.seq).where(
                        events.c.request_id == request_id,
                        events.c.id == event_id,
                        events.c.callback_url.is_not(None),
                    )
                )
            ).first()
        if exists_now is not None:
            raise Conflict("this callback is being delivered right now; try again shortly")
        return None

    async def next_due(self) -> datetime | None:
        """When the earliest claimable event becomes due (None when nothing is pending).

        Only the head of each request counts (the events queued behind it wait for it,
        whatever their own ``next_attempt_at``), and a claimed head is due when its
        claim expires: otherwise a request with one event in backoff, or one delivery
        in flight, would make the worker poll in a tight loop.
        """
        earlier = events.alias("earlier")
        due = case(
            (events.c.claimed_until > events.c.next_attempt_at, events.c.claimed_until),
            else_=events.c.next_attempt_at,
        )
        async with self._db.read() as conn:
            value = (
                await conn.execute(
                    select(func.min(due)).where(
                        events.c.status == PENDING,
                        ~exists().where(
                            and_(
                                earlier.c.request_id == events.c.request_id,
                                earlier.c.status == PENDING,
                                earlier.c.seq < events.c.seq,
                            )
                        ),
                    )
                )
            ).scalar()
            return _opt(value)
