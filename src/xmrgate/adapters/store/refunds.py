"""Refunds in SQL (implements ``core.refund_ports.RefundRepository``).

The money a refund gives back is reserved in ``payment_requests.refunded``: creating a
refund adds its amount with ONE conditional UPDATE (``refunded + amount <= received``),
so of two racing refunds for the same money the database lets exactly one through,
on PostgreSQL (the second UPDATE waits for the first's row lock, then re-checks its
WHERE against the committed row) and on SQLite (one writer at a time). Leaving a
holding state (cancelled, expired) subtracts it again in the same transaction.

Every state change is an UPDATE conditional on the refund's status and store, so two
racing calls never both win; the loser gets None and nothing is written. Locks are
always taken refunds first, then the request (the reservation), so two transactions
never wait for each other in a circle.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, RowMapping, case, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import Database, as_utc
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.tables import payment_requests, refunds, transfers
from xmrgate.domain.errors import InvalidInput, NotFound
from xmrgate.domain.ledger import TransferState
from xmrgate.domain.refunds import (
    NewRefund,
    Refund,
    RefundEventKind,
    RefundStatus,
    RefundTooLarge,
    refund_event_payload,
)

# Transfers that count as received: mined and not gone (pool money may still vanish).
RECEIVED_STATES = (TransferState.CONFIRMED.value, TransferState.UNLOCKED.value)

_OPEN = RefundStatus.OPEN.value
_CLAIMED = RefundStatus.CLAIMED.value
_SENDING = RefundStatus.SENDING.value
_SENT = RefundStatus.SENT.value

# A refund with its request's address (the record's) and callback URL (its events').
_READ = select(
    refunds,
    payment_requests.c.address.label("request_address"),
    payment_requests.c.callback_url.label("request_callback_url"),
).join_from(refunds, payment_requests, refunds.c.request_id == payment_requests.c.id)


def _received(request_id: int | ColumnElement[int]) -> Any:
    """What a request received: the sum of its mined transfers that are not gone."""
    return (
        select(func.coalesce(func.sum(transfers.c.amount), 0))
        .where(transfers.c.request_id == request_id, transfers.c.state.in_(RECEIVED_STATES))
        .scalar_subquery()
    )


def _opt(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)


def _refund(row: RowMapping) -> Refund:
    return Refund(
        id=row["id"],
        store_id=row["store_id"],
        request_id=row["request_id"],
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


class _Lost(Exception):
    """A transition lost its race after writing: its transaction must roll back."""


class SqlRefundStore:
    """The refunds of one store, and the reservation of the money they give back."""

    def __init__(self, db: Database, store_id: str) -> None:
        self._db = db
        self._store_id = store_id

    @property
    def store_id(self) -> str:
        """The store whose refunds this repository reads and writes."""
        return self._store_id

    def _mine(self, refund_id: str) -> ColumnElement[bool]:
        return (refunds.c.id == refund_id) & (refunds.c.store_id == self._store_id)

    # -- reads ---------------------------------------------------------------------------

    async def refundable(self, address: str) -> tuple[int, int, int] | None:
        """(request id, received, refunded) of this store's request; None if not this store's.

        ``refunded`` is the reservation column: it still holds an open refund whose link
        expired until a sweep (``expire_due``) or the next ``create`` marks it expired.
        """
        query = select(
            payment_requests.c.id,
            _received(payment_requests.c.id),
            payment_requests.c.refunded,
        ).where(
            payment_requests.c.address == address,
            payment_requests.c.store_id == self._store_id,
        )
        async with self._db.read(autocommit=True) as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            return None
        return int(row[0]), int(row[1]), int(row[2])

    async def get(self, refund_id: str) -> Refund | None:
        """One refund of this store; None when unknown or another store's."""
        async with self._db.read(autocommit=True) as conn:
            return await self._one(conn, refund_id)

    async def by_token(self, digest: str) -> Refund | None:
        """The refund whose claim token has this SHA-256 digest, of any store."""
        async with self._db.read(autocommit=True) as conn:
            query = _READ.where(refunds.c.token_digest == digest)
            found = (await conn.execute(query)).mappings().first()
        return None if found is None else _refund(found)

    async def listing(self, status: RefundStatus | None, limit: int) -> list[Refund]:
        """This store's refunds: claimed (waiting for approval) first, then newest first."""
        query = _READ.where(refunds.c.store_id == self._store_id)
        if status is not None:
            query = query.where(refunds.c.status == status.value)
        waiting_first = case((refunds.c.status == _CLAIMED, 0), else_=1)
        query = query.order_by(
            waiting_first, refunds.c.created_at.desc(), refunds.c.id.desc()
        ).limit(limit)
        return await self._many(query)

    async def for_request(self, request_id: int) -> list[Refund]:
        """This store's refunds of one request, oldest first."""
        query = _READ.where(
            refunds.c.store_id == self._store_id, refunds.c.request_id == request_id
        ).order_by(refunds.c.created_at, refunds.c.id)
        return await self._many(query)

    async def awaiting_confirmation(self, limit: int = 100) -> list[Refund]:
        """This store's sent refunds, oldest first (the confirmation watcher's work)."""
        query = (
            _READ.where(refunds.c.store_id == self._store_id, refunds.c.status == _SENT)
            .order_by(refunds.c.sent_at, refunds.c.id)
            .limit(limit)
        )
        return await self._many(query)

    async def _many(self, query: Any) -> list[Refund]:
        async with self._db.read(autocommit=True) as conn:
            return [_refund(row) for row in (await conn.execute(query)).mappings()]

    async def _one(self, conn: AsyncConnection, refund_id: str) -> Refund | None:
        row = (await conn.execute(_READ.where(self._mine(refund_id)))).mappings().first()
        return None if row is None else _refund(row)

    # -- creating and reserving ------------------------------------------------------------

    async def create(self, refund: NewRefund, now: datetime) -> Refund:
        """Reserve ``refund.amount`` and insert the refund, in one transaction.

        First marks this request's open refunds whose link expired (``now``) as expired,
        freeing their money. ``RefundTooLarge`` (nothing written, that expiry neither)
        when the amount does not fit; ``NotFound`` when the request is not this store's.
        """
        if refund.amount <= 0:
            raise InvalidInput("a refund's amount must be a positive number of piconero")
        async with self._db.write() as conn:
            await self._expire(conn, now, refunds.c.request_id == refund.request_id)
            reserved = await conn.execute(
                self._reservation(refund.request_id, refund.amount).returning(
                    payment_requests.c.address
                )
            )
            address = reserved.scalar()
            if address is None:
                raise await self._refused(conn, refund.request_id, refund.amount)
            await conn.execute(
                insert(refunds).values(
                    id=refund.id,
                    store_id=self._store_id,
                    request_id=refund.request_id,
                    amount=refund.amount,
                    price=None if refund.price is None else json.dumps(refund.price),
                    reason=refund.reason,
                    token_digest=refund.token_digest,
                    status=_OPEN,
                    created_at=refund.created_at,
                    expires_at=refund.expires_at,
                    manual=False,
                )
            )
        return Refund(
            id=refund.id,
            store_id=self._store_id,
            request_id=refund.request_id,
            request_address=address,
            amount=refund.amount,
            reason=refund.reason,
            status=RefundStatus.OPEN,
            created_at=refund.created_at,
            expires_at=refund.expires_at,
            price=None if refund.price is None else dict(refund.price),
            token_digest=refund.token_digest,
        )

    def _reservation(self, request_id: int, amount: int) -> Any:
        """The conditional UPDATE that reserves ``amount`` more of this store's request:
        it changes no row when the request would then have refunded more than received."""
        return (
            update(payment_requests)
            .where(
                payment_requests.c.id == request_id,
                payment_requests.c.store_id == self._store_id,
                payment_requests.c.refunded + amount <= _received(request_id),
            )
            .values(refunded=payment_requests.c.refunded + amount)
        )

    async def _refused(self, conn: AsyncConnection, request_id: int, amount: int) -> Exception:
        """Why a reservation changed nothing, read in its transaction: the request is not
        this store's (``NotFound``), or the amount does not fit (``RefundTooLarge``)."""
        row = (
            await conn.execute(
                select(_received(request_id), payment_requests.c.refunded).where(
                    payment_requests.c.id == request_id,
                    payment_requests.c.store_id == self._store_id,
                )
            )
        ).first()
        if row is None:
            return NotFound("no payment request with this id in this store")
        received, refunded = int(row[0]), int(row[1])
        return RefundTooLarge(
            f"a refund of {amount} piconero is more than is left to refund: the request "
            f"received {received} piconero in mined transactions and {refunded} piconero "
            f"of it is already refunded ({max(received - refunded, 0)} left)"
        )

    async def _release(self, conn: AsyncConnection, freed: Iterable[Any]) -> None:
        """Subtract amounts no longer held from their requests (rows of request id and
        amount), one UPDATE per request in id order."""
        by_request: dict[int, int] = defaultdict(int)
        for request_id, amount in freed:
            by_request[int(request_id)] += int(amount)
        for request_id in sorted(by_request):
            await conn.execute(
                update(payment_requests)
                .where(payment_requests.c.id == request_id)
                .values(refunded=payment_requests.c.refunded - by_request[request_id])
            )

    async def _expire(self, conn: AsyncConnection, now: datetime, *where: Any) -> int:
        """Open refunds of this store past their link's life (and ``where``) -> expired,
        their money freed; how many."""
        due = (
            select(refunds.c.id)
            .where(
                refunds.c.store_id == self._store_id,
                refunds.c.status == _OPEN,
                refunds.c.expires_at <= now,
                *where,
            )
            .order_by(refunds.c.id)
        )
        if not self._db.is_sqlite:
            # Lock them in id order: a sweep and a create expiring the same refunds
            # through different indexes would otherwise each hold one the other wants.
            due = due.with_for_update()
        expired = await conn.execute(
            update(refunds)
            .where(refunds.c.id.in_(due.scalar_subquery()), refunds.c.status == _OPEN)
            .values(status=RefundStatus.EXPIRED.value)
            .returning(refunds.c.request_id, refunds.c.amount)
        )
        rows = expired.all()
        await self._release(conn, rows)
        return len(rows)

    async def expire_due(self, now: datetime) -> int:
        """Every open refund of this store whose link expired -> expired, money freed.

        The watch asks every 10 s per store and nearly always finds none: a read first,
        so that nothing takes SQLite's write lock (or a PostgreSQL write) for nothing.
        """
        due = select(refunds.c.id).where(
            refunds.c.store_id == self._store_id,
            refunds.c.status == _OPEN,
            refunds.c.expires_at <= now,
        )
        async with self._db.read(autocommit=True) as conn:
            if (await conn.execute(due.limit(1))).first() is None:
                return 0
        async with self._db.write() as conn:
            return await self._expire(conn, now)

    # -- transitions -----------------------------------------------------------------------

    async def _event(
        self, conn: AsyncConnection, refund_id: str, kind: RefundEventKind, now: datetime
    ) -> Refund:
        """The refund as just changed, with its event row added in the same transaction."""
        row = (await conn.execute(_READ.where(self._mine(refund_id)))).mappings().one()
        refund = _refund(row)
        body = refund_event_payload(refund, kind, now)
        # A claim has no transaction yet; a send and its confirmation name the first of
        # the refund's own transactions (never one of the request's).
        tx_hash = ""
        if kind is not RefundEventKind.CLAIMED and refund.tx_hash_list:
            tx_hash = refund.tx_hash_list[0]
        await insert_events(
            conn,
            [
                {
                    "id": str(uuid.uuid4()),
                    "request_id": refund.request_id,
                    "store_id": self._store_id,
                    "kind": kind.value,
                    "tx_hash": tx_hash,
                    "callback_url": row["request_callback_url"] or None,
                    "payload": json.dumps(body, separators=(",", ":")),
                }
            ],
        )
        return refund

    async def claim(self, refund_id: str, address: str, now: datetime) -> Refund | None:
        """open and not expired -> claimed with ``address``, plus its ``refund.claimed``
        event; None (nothing written) when it was not open or its link expired."""
        async with self._db.write() as conn:
            claimed = await conn.execute(
                update(refunds)
                .where(self._mine(refund_id), refunds.c.status == _OPEN, refunds.c.expires_at > now)
                .values(status=_CLAIMED, claim_address=address, claimed_at=now)
            )
            if claimed.rowcount != 1:
                return None
            return await self._event(conn, refund_id, RefundEventKind.CLAIMED, now)

    async def start_sending(self, refund_id: str, amount: int | None = None) -> Refund | None:
        """claimed -> sending, the last try's error cleared; None when it was not claimed
        (a second send loses here).

        ``amount``: a new amount; the reservation moves by the difference under the same
        rule as ``create`` (``RefundTooLarge``, nothing written).
        """
        if amount is not None and amount <= 0:
            raise InvalidInput("a refund's amount must be a positive number of piconero")
        try:
            return await self._start_sending(refund_id, amount)
        except _Lost:
            return None

    async def _start_sending(self, refund_id: str, amount: int | None) -> Refund | None:
        async with self._db.write() as conn:
            # A new try starts without the last one's error (``send_failed`` sets it again).
            values: dict[str, Any] = {"status": _SENDING, "error": None}
            where = [self._mine(refund_id), refunds.c.status == _CLAIMED]
            if amount is not None:
                # Lock the refund first (refunds before the request, as everywhere); of
                # two racing sends the second re-reads it once the first committed, no
                # longer claimed, and gets nothing.
                query = select(refunds.c.request_id, refunds.c.amount).where(*where)
                if not self._db.is_sqlite:
                    query = query.with_for_update()
                row = (await conn.execute(query)).first()
                if row is None:
                    return None
                request_id, old = int(row[0]), int(row[1])
                if amount > old:
                    moved = await conn.execute(self._reservation(request_id, amount - old))
                    if moved.rowcount != 1:
                        raise await self._refused(conn, request_id, amount - old)
                elif amount < old:
                    # Less money held never breaks the rule, even after a reorg took some.
                    await self._release(conn, [(request_id, old - amount)])
                values["amount"] = amount
                where.append(refunds.c.amount == old)
            started = await conn.execute(update(refunds).where(*where).values(**values))
            if started.rowcount != 1:
                # Lost a race after moving the reservation (not expected: the row lock, or
                # SQLite's one writer): leave the transaction by an exception, rolled back.
                raise _Lost()
            return await self._one(conn, refund_id)

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
        None when it was in neither state.

        Clears the error of an earlier try; a ``payout_id`` of None keeps the one
        ``send_unknown`` may have recorded.
        """
        states = [_SENDING, _CLAIMED] if manual else [_SENDING]
        values: dict[str, Any] = {
            "status": _SENT,
            "tx_hash_list": json.dumps(list(tx_hash_list)),
            "fee": fee,
            "tx_key": tx_key,
            "manual": manual,
            "sent_at": now,
            "error": None,
        }
        if payout_id is not None:
            values["payout_id"] = payout_id
        async with self._db.write() as conn:
            sent = await conn.execute(
                update(refunds)
                .where(self._mine(refund_id), refunds.c.status.in_(states))
                .values(**values)
            )
            if sent.rowcount != 1:
                return None
            return await self._event(conn, refund_id, RefundEventKind.SENT, now)

    async def send_failed(self, refund_id: str, error: str) -> None:
        """sending -> claimed: the wallet refused or was never reached (nothing left)."""
        async with self._db.write(single_statement=True) as conn:
            await conn.execute(
                update(refunds)
                .where(self._mine(refund_id), refunds.c.status == _SENDING)
                .values(status=_CLAIMED, error=error)
            )

    async def send_unknown(self, refund_id: str, error: str, payout_id: int | None) -> None:
        """Stays sending, with the error (and the payout's id when known): the wallet may
        have sent; never sent again."""
        values: dict[str, Any] = {"error": error}
        if payout_id is not None:
            values["payout_id"] = payout_id
        async with self._db.write(single_statement=True) as conn:
            await conn.execute(
                update(refunds)
                .where(self._mine(refund_id), refunds.c.status == _SENDING)
                .values(**values)
            )

    async def cancel(self, refund_id: str, now: datetime) -> Refund | None:
        """open or claimed -> cancelled, its money freed; None when in another state.

        An open refund whose link expired (not swept yet) is cancelled too: its money is
        freed either way.
        """
        async with self._db.write() as conn:
            cancelled = await conn.execute(
                update(refunds)
                .where(self._mine(refund_id), refunds.c.status.in_([_OPEN, _CLAIMED]))
                .values(status=RefundStatus.CANCELLED.value, cancelled_at=now)
                .returning(refunds.c.request_id, refunds.c.amount)
            )
            rows = cancelled.all()
            if not rows:
                return None
            await self._release(conn, rows)
            return await self._one(conn, refund_id)

    async def mark_confirmed(self, refund_id: str, now: datetime) -> Refund | None:
        """sent -> confirmed, plus ``refund.confirmed``; None when it was not sent."""
        async with self._db.write() as conn:
            confirmed = await conn.execute(
                update(refunds)
                .where(self._mine(refund_id), refunds.c.status == _SENT)
                .values(status=RefundStatus.CONFIRMED.value, confirmed_at=now)
            )
            if confirmed.rowcount != 1:
                return None
            return await self._event(conn, refund_id, RefundEventKind.CONFIRMED, now)
