"""Refunds in SQL (implements ``core.refund_ports.RefundRepository``).

The money a refund gives back (a request's or an unmatched receipt's) is reserved by ONE
conditional UPDATE of its source's ``refunded`` column (``refund_money.py``); leaving a
holding state (cancelled, expired) subtracts it again in the same transaction. Every
state change is an UPDATE conditional on the refund's status and store, so two racing
calls never both win; the loser gets None and nothing is written. Locks are always
taken refunds first, then the source, so two transactions never wait in a circle.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, case, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.refund_money import (
    FREED,
    READ,
    Source,
    add_event,
    expire_open,
    received,
    refund_of,
    refused,
    release,
    reservation,
    source_of,
)
from xmrgate.adapters.store.tables import payment_requests, refunds
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.refunds import (
    NewRefund,
    Refund,
    RefundEventKind,
    RefundStatus,
)

_OPEN = RefundStatus.OPEN.value
_CLAIMED = RefundStatus.CLAIMED.value
_SENDING = RefundStatus.SENDING.value
_SENT = RefundStatus.SENT.value
_READ = READ
_refund = refund_of
_FREED = FREED


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
        async with self._db.read(autocommit=True) as conn:
            found = (
                await conn.execute(
                    select(payment_requests.c.id).where(
                        payment_requests.c.address == address,
                        payment_requests.c.store_id == self._store_id,
                    )
                )
            ).first()
            if found is None:
                return None
            return await self._amounts(conn, Source(int(found[0])))

    async def refundable_receipt(self, receipt_id: int) -> tuple[int, int, int] | None:
        """(receipt id, received, refunded) of this store's unmatched receipt; None if
        not this store's. ``received`` is its amount once mined and not gone."""
        async with self._db.read(autocommit=True) as conn:
            return await self._amounts(conn, Source(receipt_id, receipt=True))

    async def _amounts(self, conn: AsyncConnection, source: Source) -> tuple[int, int, int] | None:
        table = source.table
        row = (
            await conn.execute(
                select(table.c.id, received(source), table.c.refunded).where(
                    table.c.id == source.id, table.c.store_id == self._store_id
                )
            )
        ).first()
        return None if row is None else (int(row[0]), int(row[1]), int(row[2]))

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
        return await self._of(Source(request_id))

    async def for_receipt(self, receipt_id: int) -> list[Refund]:
        """This store's refunds of one unmatched receipt, oldest first."""
        return await self._of(Source(receipt_id, receipt=True))

    async def _of(self, source: Source) -> list[Refund]:
        query = _READ.where(refunds.c.store_id == self._store_id, source.of_refund()).order_by(
            refunds.c.created_at, refunds.c.id
        )
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
        source = source_of(refund.request_id, refund.receipt_id)
        async with self._db.write() as conn:
            await self._expire(conn, now, source.of_refund())
            reserved = await conn.execute(
                reservation(source, self._store_id, refund.amount).returning(source.table.c.address)
            )
            address = reserved.scalar()
            if address is None:
                raise await refused(conn, source, self._store_id, refund.amount)
            await conn.execute(
                insert(refunds).values(
                    id=refund.id,
                    store_id=self._store_id,
                    request_id=refund.request_id,
                    receipt_id=refund.receipt_id,
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
            receipt_id=refund.receipt_id,
            request_address=address,
            amount=refund.amount,
            reason=refund.reason,
            status=RefundStatus.OPEN,
            created_at=refund.created_at,
            expires_at=refund.expires_at,
            price=None if refund.price is None else dict(refund.price),
            token_digest=refund.token_digest,
        )

    async def _expire(self, conn: AsyncConnection, now: datetime, *where: Any) -> int:
        """Open refunds of this store past their link's life (and ``where``) -> expired,
        their money freed; how many."""
        return await expire_open(conn, self._store_id, now, *where, lock=not self._db.is_sqlite)

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
        return await add_event(conn, self._mine(refund_id), self._store_id, kind, now)

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
                query = select(*_FREED).where(*where)
                if not self._db.is_sqlite:
                    query = query.with_for_update(of=refunds)
                row = (await conn.execute(query)).first()
                if row is None:
                    return None
                request_id, receipt_id, old = row[0], row[1], int(row[2])
                source = source_of(request_id, receipt_id)
                if amount > old:
                    moved = await conn.execute(reservation(source, self._store_id, amount - old))
                    if moved.rowcount != 1:
                        raise await refused(conn, source, self._store_id, amount - old)
                elif amount < old:
                    # Less money held never breaks the rule, even after a reorg took some.
                    await release(conn, [(request_id, receipt_id, old - amount)])
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
                .returning(*_FREED)
            )
            rows = cancelled.all()
            if not rows:
                return None
            await release(conn, rows)
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
