"""Payment links in SQL (implements ``core.link_ports.LinkRepository``).

Every read and write is scoped by the repository's store, except ``by_slug`` (the
public page) and ``prune_unpaid`` (a sweep over every store). A link's counts are
subqueries on its requests (``ix_payment_requests_link_created``), read with it:

- ``uses``: the requests it made;
- ``paid``: those whose recorded status says the money arrived (``paid``,
  ``complete``, ``paid_late``);
- ``received``: the piconero of every transfer to them that is not ``gone`` (pool
  transfers included, as ``GET /receive`` counts them).

Deleting a request races with a sync tick recording a transfer to it, exactly as
``PaymentStore.delete`` explains: on PostgreSQL the rows are locked first and the
DELETE that follows (a new snapshot) re-checks that no transfer exists; SQLite has one
writer. Deleting a link races with a request being made by it in the same way.

A link's ``max_uses`` is enforced where its request is inserted (``admit_link_request``,
called by the address pool's ``take`` and ``PaymentStore.create`` in the inserting
transaction), so it holds for every process and host on one database.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    delete,
    exists,
    false,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import aliased

from xmrgate.adapters.store.db import Database, as_utc
from xmrgate.adapters.store.tables import links, payment_requests, transfers
from xmrgate.domain.errors import AlreadyExists, MissingReference
from xmrgate.domain.invoice import InvoiceStatus
from xmrgate.domain.ledger import TransferState
from xmrgate.domain.links import Link, LinkFields, LinkInactive, LinkUsedUp

# The recorded statuses of a request whose money arrived (``domain/invoice.py``).
PAID_STATUSES = (
    InvoiceStatus.PAID.value,
    InvoiceStatus.COMPLETE.value,
    InvoiceStatus.PAID_LATE.value,
)
GONE = TransferState.GONE.value

_L = links.c
_R = payment_requests.c

# A link's requests: made by it, in its store.
_ITS_REQUESTS = (_R.link_id == _L.id) & (_R.store_id == _L.store_id)
_USES = select(func.count()).where(_ITS_REQUESTS).scalar_subquery()
_PAID = select(func.count()).where(_ITS_REQUESTS, _R.status.in_(PAID_STATUSES)).scalar_subquery()
_RECEIVED = (
    select(func.coalesce(func.sum(transfers.c.amount), 0))
    .select_from(transfers.join(payment_requests, transfers.c.request_id == _R.id))
    .where(_ITS_REQUESTS, transfers.c.state != GONE)
    .scalar_subquery()
)
# A link with its counts.
_READ: Select[Any] = select(
    links, _USES.label("uses"), _PAID.label("paid"), _RECEIVED.label("received")
)

# A transfer to the request (any state: "ever seen" includes gone ones).
_HAS_TRANSFER = exists().where(transfers.c.request_id == _R.id)
_higher = aliased(payment_requests, name="higher")
# Another request of its store has a higher index: it is not the store's highest, from
# which the path without a pool derives the next index (``highest_subaddr_index``).
_NOT_HIGHEST = exists().where(
    _higher.c.store_id == _R.store_id, _higher.c.subaddr_index > _R.subaddr_index
)


async def admit_link_request(conn: AsyncConnection, link_id: str, *, lock: bool) -> None:
    """May ``link_id`` make one more request? Run inside the transaction that then
    inserts it: LinkInactive, LinkUsedUp (its ``max_uses`` requests exist) or
    MissingReference (deleted meanwhile, as its foreign key would say) otherwise, and the
    caller's transaction rolls back.

    ``lock`` (PostgreSQL): the link's row is locked (``FOR UPDATE``) before counting, so
    concurrent "Pay" on one link, from any process or host, count one after another:
    each count is a statement after the lock was granted, so under READ COMMITTED it
    sees the requests of every transaction that held the lock before. Without the lock
    two transactions both count 9 of 10 and both insert. SQLite has one writer.
    The count and the insert are one transaction: a use is a request, never one without
    the other.
    """
    query = select(_L.active, _L.max_uses, _L.store_id).where(_L.id == link_id)
    row = (await conn.execute(query.with_for_update() if lock else query)).first()
    if row is None:
        raise MissingReference("the link was deleted meanwhile")
    if not row.active:
        raise LinkInactive("this link is not taking payments")
    if row.max_uses is None:
        return
    used = (
        await conn.execute(
            select(func.count()).where(_R.link_id == link_id, _R.store_id == row.store_id)
        )
    ).scalar_one()
    if used >= row.max_uses:
        raise LinkUsedUp("this link has been used as often as it may be")


def _columns(fields: LinkFields) -> dict[str, Any]:
    """The row's columns of what the merchant sets."""
    return {
        "title": fields.title,
        "description": fields.description,
        "amount": fields.amount,
        "price": None if fields.price is None else json.dumps(fields.price),
        "min_amount": fields.min_amount,
        "currency": fields.currency,
        "min_price": fields.min_price,
        "callback_url": fields.callback_url,
        "return_url": fields.return_url,
        "expires_in": fields.expires_in,
        "max_uses": fields.max_uses,
        "active": fields.active,
    }


def _link(row: Any) -> Link:
    price = row["price"]
    return Link(
        id=row["id"],
        store_id=row["store_id"],
        slug=row["slug"],
        fields=LinkFields(
            title=row["title"],
            description=row["description"],
            amount=row["amount"],
            price=None if price is None else dict(json.loads(price)),
            min_amount=row["min_amount"],
            currency=row["currency"],
            min_price=row["min_price"],
            callback_url=row["callback_url"],
            return_url=row["return_url"],
            expires_in=int(row["expires_in"]),
            max_uses=row["max_uses"],
            active=bool(row["active"]),
        ),
        created_at=as_utc(row["created_at"]),
        uses=int(row["uses"]),
        paid=int(row["paid"]),
        received=int(row["received"]),
    )


class SqlLinkStore:
    """The payment links of one store."""

    def __init__(self, db: Database, store_id: str) -> None:
        self._db = db
        self._store_id = store_id

    @property
    def store_id(self) -> str:
        """The store whose links this repository reads and writes."""
        return self._store_id

    def _mine(self, link_id: str) -> ColumnElement[bool]:
        return (_L.id == link_id) & (_L.store_id == self._store_id)

    # -- reads -----------------------------------------------------------------------------

    async def get(self, link_id: str) -> Link | None:
        """One link of this store, with its counts; None when unknown or another store's."""
        async with self._db.read(autocommit=True) as conn:
            return await self._one(conn, self._mine(link_id))

    async def by_slug(self, slug: str) -> Link | None:
        """The link with this slug, of any store, with its counts."""
        async with self._db.read(autocommit=True) as conn:
            return await self._one(conn, _L.slug == slug)

    async def listing(self, limit: int) -> list[Link]:
        """This store's links, newest first, with their counts."""
        query = (
            _READ.where(_L.store_id == self._store_id)
            .order_by(_L.created_at.desc(), _L.id.desc())
            .limit(limit)
        )
        async with self._db.read(autocommit=True) as conn:
            return [_link(row) for row in (await conn.execute(query)).mappings()]

    async def open_request(self, link_id: str, address: str, now: datetime) -> bool:
        """Is ``address`` a request of this store that this link made, not expired, to
        which no transfer at all (not even one gone again) was ever seen?"""
        query = select(_R.id).where(
            _R.address == address,
            _R.store_id == self._store_id,
            _R.link_id == link_id,
            _R.expires_at > now,
            ~_HAS_TRANSFER,
        )
        async with self._db.read(autocommit=True) as conn:
            return (await conn.execute(query)).first() is not None

    @staticmethod
    async def _one(conn: AsyncConnection, where: ColumnElement[bool]) -> Link | None:
        row = (await conn.execute(_READ.where(where))).mappings().first()
        return None if row is None else _link(row)

    # -- writes ----------------------------------------------------------------------------

    async def create(self, link_id: str, slug: str, fields: LinkFields, now: datetime) -> Link:
        """Insert a link; AlreadyExists (409) when the slug is taken (by any store)."""
        try:
            async with self._db.write(single_statement=True) as conn:
                await conn.execute(
                    insert(links).values(
                        id=link_id,
                        store_id=self._store_id,
                        slug=slug,
                        created_at=now,
                        **_columns(fields),
                    )
                )
        except AlreadyExists:
            # The slug or (a one in 2^64 chance) the id: say which when it is the slug.
            if await self.by_slug(slug) is not None:
                raise AlreadyExists(f"the slug '{slug}' is taken: choose another") from None
            raise
        return Link(id=link_id, store_id=self._store_id, slug=slug, fields=fields, created_at=now)

    async def update(self, link_id: str, fields: LinkFields) -> Link | None:
        """Replace a link's fields (the slug and id stay); None when not this store's."""
        async with self._db.write() as conn:
            changed = await conn.execute(
                update(links).where(self._mine(link_id)).values(**_columns(fields))
            )
            if changed.rowcount != 1:
                return None
            return await self._one(conn, self._mine(link_id))

    async def delete(self, link_id: str) -> bool | None:
        """Delete a link that made no request (True); a link with requests is only made
        inactive (False: its requests keep their ``link``); None when not this store's.

        PostgreSQL: the link's row is locked first, so a request being made by it
        meanwhile (its foreign key holds a share lock on the row) is either committed
        and seen by the DELETE (a new snapshot), or waits and then finds the link gone.
        """
        async with self._db.write() as conn:
            if not self._db.is_sqlite:
                locked = await conn.execute(
                    select(_L.id).where(self._mine(link_id)).with_for_update()
                )
                if locked.first() is None:
                    return None
            unused = ~exists().where(_R.link_id == _L.id)
            deleted = await conn.execute(delete(links).where(self._mine(link_id), unused))
            if deleted.rowcount:
                return True
            kept = await conn.execute(
                update(links).where(self._mine(link_id)).values(active=false())
            )
            return False if kept.rowcount else None

    async def prune_unpaid(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` requests made by links (of any store) that expired
        before ``before`` with no transfer ever seen; how many (call again while that
        is ``limit``). Never a request with a transfer, and never the request holding
        its store's highest subaddress index: the path without a pool derives the next
        index from it, and would hand that index out again. Their events go with them
        (the foreign key cascades)."""
        if limit <= 0:
            return 0
        due = (
            select(_R.id)
            .where(
                _R.link_id.is_not(None),
                _R.expires_at < before,
                ~_HAS_TRANSFER,
                _NOT_HIGHEST,
            )
            .order_by(_R.id)
            .limit(limit)
        )
        async with self._db.write() as conn:
            ids: Any
            if self._db.is_sqlite:
                ids = due.scalar_subquery()
            else:
                # Lock them (skipping rows a tick is recording a transfer to); the
                # DELETE's own snapshot then sees every transfer committed before.
                locked = await conn.execute(due.with_for_update(skip_locked=True))
                ids = [row[0] for row in locked]
                if not ids:
                    return 0
            pruned = await conn.execute(
                delete(payment_requests).where(
                    _R.id.in_(ids), _R.link_id.is_not(None), ~_HAS_TRANSFER, _NOT_HIGHEST
                )
            )
        return int(pruned.rowcount or 0)
