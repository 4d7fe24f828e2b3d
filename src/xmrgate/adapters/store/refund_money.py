"""What a refund gives back, in SQL: its source's reservation and the refund's reads.

A refund gives back money of a payment request or of an unmatched receipt (its
``Source``). Each keeps what its refunds in a holding state reserve in a ``refunded``
column: reserving is ONE conditional UPDATE (``refunded + amount <= received``), so of
two racing refunds for the same money the database lets exactly one through, on
PostgreSQL (the second UPDATE waits for the first's row lock, then re-checks its WHERE
against the committed row) and on SQLite (one writer at a time). What a request received
is the sum of its mined transfers that are not gone; what a receipt received is its
amount once mined and not gone (pool money may still vanish).
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, RowMapping, Table, case, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import as_utc
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.tables import (
    payment_requests,
    refunds,
    transfers,
    unmatched_receipts,
)
from xmrgate.domain.errors import NotFound
from xmrgate.domain.ledger import TransferState
from xmrgate.domain.refunds import (
    Refund,
    RefundEventKind,
    RefundStatus,
    RefundTooLarge,
    refund_event_payload,
)

# Transfers that count as received: mined and not gone (pool money may still vanish).
RECEIVED_STATES = (TransferState.CONFIRMED.value, TransferState.UNLOCKED.value)

_P = payment_requests.c
_U = unmatched_receipts.c

# A refund with its source's address (the record's) and callback URL (its events'; a
# receipt has none).
READ = (
    select(
        refunds,
        func.coalesce(_P.address, _U.address).label("request_address"),
        _P.callback_url.label("request_callback_url"),
    )
    .select_from(refunds)
    .outerjoin(payment_requests, refunds.c.request_id == _P.id)
    .outerjoin(unmatched_receipts, refunds.c.receipt_id == _U.id)
)


@dataclass(frozen=True, slots=True)
class Source:
    """What a refund gives back: a request (``receipt`` False) or a receipt, by id."""

    id: int
    receipt: bool = False

    @property
    def table(self) -> Table:
        """The table holding its ``refunded`` reservation."""
        return unmatched_receipts if self.receipt else payment_requests

    @property
    def column(self) -> str:
        """The refunds column naming it."""
        return "receipt_id" if self.receipt else "request_id"

    def of_refund(self) -> ColumnElement[bool]:
        """The refunds of this source."""
        return refunds.c[self.column] == self.id


def source_of(request_id: int | None, receipt_id: int | None) -> Source:
    """The source a refund row names."""
    if request_id is not None:
        return Source(int(request_id))
    if receipt_id is None:
        raise ValueError("a refund names neither a request nor a receipt")
    return Source(int(receipt_id), receipt=True)


def received(source: Source) -> Any:
    """What the source received, as a scalar subquery (or expression) in the UPDATE."""
    if source.receipt:
        return case((_U.state.in_(RECEIVED_STATES), _U.amount), else_=0)
    return (
        select(func.coalesce(func.sum(transfers.c.amount), 0))
        .where(transfers.c.request_id == source.id, transfers.c.state.in_(RECEIVED_STATES))
        .scalar_subquery()
    )


def reservation(source: Source, store_id: str, amount: int) -> Any:
    """The conditional UPDATE reserving ``amount`` more of this store's source: it changes
    no row when the source would then have refunded more than it received."""
    table = source.table
    return (
        update(table)
        .where(
            table.c.id == source.id,
            table.c.store_id == store_id,
            table.c.refunded + amount <= received(source),
        )
        .values(refunded=table.c.refunded + amount)
    )


async def refused(conn: AsyncConnection, source: Source, store_id: str, amount: int) -> Exception:
    """Why a reservation changed nothing, read in its transaction: the source is not this
    store's (``NotFound``), or the amount does not fit (``RefundTooLarge``)."""
    table = source.table
    row = (
        await conn.execute(
            select(received(source), table.c.refunded).where(
                table.c.id == source.id, table.c.store_id == store_id
            )
        )
    ).first()
    what = "unmatched receipt" if source.receipt else "request"
    if row is None:
        return NotFound(f"no {what} with this id in this store")
    got, refunded = int(row[0]), int(row[1])
    return RefundTooLarge(
        f"a refund of {amount} piconero is more than is left to refund: the {what} "
        f"received {got} piconero in mined transactions and {refunded} piconero "
        f"of it is already refunded ({max(got - refunded, 0)} left)"
    )


async def release(conn: AsyncConnection, freed: Iterable[Any]) -> None:
    """Subtract amounts no longer held from their sources (rows of request id, receipt
    id, amount), one UPDATE per source in a fixed order (requests, then receipts, by id)."""
    by_source: dict[Source, int] = defaultdict(int)
    for request_id, receipt_id, amount in freed:
        by_source[source_of(request_id, receipt_id)] += int(amount)
    for source in sorted(by_source, key=lambda s: (s.receipt, s.id)):
        table = source.table
        await conn.execute(
            update(table)
            .where(table.c.id == source.id)
            .values(refunded=table.c.refunded - by_source[source])
        )


def _opt(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)


def refund_of(row: RowMapping) -> Refund:
    """A refund as ``READ`` returns it."""
    return Refund(
        id=row["id"],
        store_id=row["store_id"],
        request_id=row["request_id"],
        receipt_id=row["receipt_id"],
        request_address=row["request_address"],
        amount=int(row["amount"]),
        reason=row["reason"],
        status=RefundStatus(row["status"]),
        created_at=as_utc(row["created_at"]),
        expires_at=as_utc(row["expires_at"]),
        claim_address=row["claim_address"],
        claimed_at=_opt(row["claimed_at"]),
        sent_at=_opt(row["sent_at"]),
        tx_hash_list=tuple(json.loads(row["tx_hash_list"])) if row["tx_hash_list"] else (),
        tx_key=row["tx_key"],
        fee=row["fee"],
        manual=bool(row["manual"]),
        confirmed_at=_opt(row["confirmed_at"]),
        cancelled_at=_opt(row["cancelled_at"]),
        payout_id=row["payout_id"],
        error=row["error"],
        price=json.loads(row["price"]) if row["price"] is not None else None,
        token_digest=row["token_digest"],
    )


# What a state change that frees money returns: the refund's source and amount.
FREED = (refunds.c.request_id, refunds.c.receipt_id, refunds.c.amount)


async def expire_open(
    conn: AsyncConnection, store_id: str, now: datetime, *where: Any, lock: bool
) -> int:
    """Open refunds of the store past their link's life (and ``where``) -> expired, their
    money freed; how many. ``lock`` (PostgreSQL): lock them in id order first, since a
    sweep and a create expiring the same refunds through different indexes would
    otherwise each hold one the other wants."""
    due = (
        select(refunds.c.id)
        .where(
            refunds.c.store_id == store_id,
            refunds.c.status == RefundStatus.OPEN.value,
            refunds.c.expires_at <= now,
            *where,
        )
        .order_by(refunds.c.id)
    )
    if lock:
        due = due.with_for_update()
    expired = await conn.execute(
        update(refunds)
        .where(refunds.c.id.in_(due.scalar_subquery()), refunds.c.status == RefundStatus.OPEN.value)
        .values(status=RefundStatus.EXPIRED.value)
        .returning(*FREED)
    )
    rows = expired.all()
    await release(conn, rows)
    return len(rows)


async def add_event(
    conn: AsyncConnection,
    mine: ColumnElement[bool],
    store_id: str,
    kind: RefundEventKind,
    now: datetime,
) -> Refund:
    """The refund (``mine``) as just changed, with its event row added in the same
    transaction; a receipt's refund has no callback URL (feed only)."""
    row = (await conn.execute(READ.where(mine))).mappings().one()
    refund = refund_of(row)
    body = refund_event_payload(refund, kind, now)
    # A claim has no transaction yet; a send and its confirmation name the first of the
    # refund's own transactions (never one of the request's).
    tx_hash = ""
    if kind is not RefundEventKind.CLAIMED and refund.tx_hash_list:
        tx_hash = refund.tx_hash_list[0]
    await insert_events(
        conn,
        [
            {
                "id": str(uuid.uuid4()),
                "request_id": refund.request_id,
                "receipt_id": refund.receipt_id,
                "store_id": store_id,
                "kind": kind.value,
                "tx_hash": tx_hash,
                "callback_url": row["request_callback_url"] or None,
                "payload": json.dumps(body, separators=(",", ":")),
            }
        ],
    )
    return refund
