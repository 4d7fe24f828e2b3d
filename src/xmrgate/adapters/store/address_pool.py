"""Subaddresses created ahead, and ``POST /receive`` taking one in one statement.

The pool holds subaddresses the wallet created and saved (``store``) but nobody was
given yet. ``take`` moves the lowest one into ``payment_requests``:

- PostgreSQL: ONE statement, ``WITH taken AS (DELETE ... FOR UPDATE SKIP LOCKED
  RETURNING ...) INSERT ... SELECT FROM taken``: concurrent takers (several workers
  or hosts on one database) skip each other's rows, so no address is handed out
  twice and nobody waits on a lock;
- SQLite: DELETE ... RETURNING then INSERT in one write transaction (one writer).

A request made by a payment link (``link_id``) is taken in a transaction that first
admits it (``links.admit_link_request``: the link's row locked on PostgreSQL, active,
under its ``max_uses``), so the count and the insert are one decision for the cluster.

A Greenfield invoice's row (``greenfield``) is inserted with the request: on PostgreSQL
by one more CTE of the same statement (``WITH taken AS (DELETE ...), made AS (INSERT
... RETURNING ...), beside AS (INSERT INTO greenfield_invoices SELECT made.id, ...)
SELECT ... FROM made``), on SQLite by one more INSERT in the transaction. Either fails,
nothing is written and the subaddress stays in the pool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select

from xmrgate.adapters.store.db import Database, as_utc, utcnow
from xmrgate.adapters.store.greenfield_invoices import bound_row_values, insert_beside, insert_row
from xmrgate.adapters.store.links import admit_link_request
from xmrgate.adapters.store.payments import SYNCED_HEIGHT
from xmrgate.adapters.store.tables import address_pool, payment_requests
from xmrgate.domain.greenfield.invoice_row import InvoiceRow
from xmrgate.domain.records import PaymentRequest
from xmrgate.domain.stores import DEFAULT_STORE


class SqlAddressPool:
    """The ``address_pool`` table (implements ``core.ports.AddressPoolRepository``)."""

    def __init__(self, db: Database, store_id: str = DEFAULT_STORE) -> None:
        self._db = db
        # Each store's pool holds subaddresses of its own account.
        self._store_id = store_id
        self._mine = address_pool.c.store_id == store_id
        self._statements: dict[tuple[tuple[str, ...], bool], Any] = {}

    async def size(self) -> int:
        """Unused subaddresses in the pool."""
        async with self._db.read(autocommit=True) as conn:
            return int(
                (
                    await conn.execute(
                        select(func.count()).select_from(address_pool).where(self._mine)
                    )
                ).scalar()
                or 0
            )

    async def highest_index(self) -> int:
        """The highest subaddress index in use or in the pool (0 when none).

        One round trip (the lookahead check asks before every tick); each max is read
        from its unique index.
        """
        in_requests = (
            select(func.max(payment_requests.c.subaddr_index))
            .where(payment_requests.c.store_id == self._store_id)
            .scalar_subquery()
        )
        in_pool = select(func.max(address_pool.c.subaddr_index)).where(self._mine).scalar_subquery()
        async with self._db.read() as conn:
            row = (await conn.execute(select(in_requests, in_pool))).one()
        return max(int(row[0] or 0), int(row[1] or 0))

    async def add(self, entries: Sequence[tuple[str, int]]) -> None:
        """Add (address, index) pairs the wallet created and saved."""
        if not entries:
            return
        now = utcnow()
        rows = [
            {"address": a, "subaddr_index": i, "created_at": now, "store_id": self._store_id}
            for a, i in entries
        ]
        async with self._db.write() as conn:
            await conn.execute(insert(address_pool), rows)

    async def take(
        self, values: Mapping[str, Any], greenfield: InvoiceRow | None = None
    ) -> PaymentRequest | None:
        """A new payment request on the pool's lowest subaddress; None when the pool is empty.

        ``values``: the request's own columns (amount, description, URLs, ...). With a
        ``link_id``: LinkInactive, LinkUsedUp or MissingReference when the link may not make it
        (checked in the same transaction, after the link's row is locked). ``greenfield``:
        an invoice's row, inserted with the request's id in the same statement or
        transaction (its error raised, nothing taken).
        """
        now = utcnow()
        columns = {**values, "created_at": now, "store_id": self._store_id}
        link_id = values.get("link_id")
        if self._db.is_sqlite:
            return await self._take_sqlite(columns, link_id, greenfield)
        statement = self._statement(tuple(columns), beside=greenfield is not None)
        bound = columns if greenfield is None else {**columns, **bound_row_values(greenfield)}
        if link_id is None:
            async with self._db.write(single_statement=True) as conn:
                row = (await conn.execute(statement, bound)).first()
        else:
            async with self._db.write() as conn:
                await admit_link_request(conn, link_id, lock=True)
                row = (await conn.execute(statement, bound)).first()
        return None if row is None else _request(row, columns)

    def _statement(self, names: tuple[str, ...], *, beside: bool) -> Any:
        """The PostgreSQL take for these request columns (and an invoice's row beside
        it), built once (values are bound): building it per call cost more CPU than the
        rest of ``POST /receive``."""
        statement = self._statements.get((names, beside))
        if statement is not None:
            return statement
        lowest = (
            select(address_pool.c.subaddr_index)
            .where(self._mine)
            .order_by(address_pool.c.subaddr_index)
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        taken = (
            delete(address_pool)
            .where(self._mine, address_pool.c.subaddr_index == lowest)
            .returning(address_pool.c.address, address_pool.c.subaddr_index)
            .cte("taken")
        )
        source = select(
            taken.c.address,
            taken.c.subaddr_index,
            *[bindparam(n, type_=payment_requests.c[n].type) for n in names],
            SYNCED_HEIGHT,
        )
        statement = (
            insert(payment_requests)
            .from_select(["address", "subaddr_index", *names, "created_height"], source)
            .returning(
                payment_requests.c.id,
                payment_requests.c.address,
                payment_requests.c.subaddr_index,
                payment_requests.c.created_height,
            )
        )
        if beside:
            made = statement.cte("made")
            # The request's columns are answered as without the row (``_request``).
            statement = select(
                made.c.id, made.c.address, made.c.subaddr_index, made.c.created_height
            ).add_cte(insert_beside(made.c.id, made).cte("beside"))
        self._statements[(names, beside)] = statement
        return statement

    async def _take_sqlite(
        self, columns: dict[str, Any], link_id: str | None, greenfield: InvoiceRow | None
    ) -> PaymentRequest | None:
        lowest = select(func.min(address_pool.c.subaddr_index)).where(self._mine).scalar_subquery()
        async with self._db.write() as conn:
            if link_id is not None:
                await admit_link_request(conn, link_id, lock=False)
            found = (
                await conn.execute(
                    delete(address_pool)
                    .where(self._mine, address_pool.c.subaddr_index == lowest)
                    .returning(address_pool.c.address, address_pool.c.subaddr_index)
                )
            ).first()
            if found is None:
                return None
            row = (
                await conn.execute(
                    insert(payment_requests)
                    .values(
                        address=found[0],
                        subaddr_index=found[1],
                        **columns,
                        created_height=SYNCED_HEIGHT,
                    )
                    .returning(
                        payment_requests.c.id,
                        payment_requests.c.address,
                        payment_requests.c.subaddr_index,
                        payment_requests.c.created_height,
                    )
                )
            ).one()
            if greenfield is not None:
                await insert_row(conn, greenfield, row[0])
        return _request(row, columns)


def _request(row: Any, columns: Mapping[str, Any]) -> PaymentRequest:
    fields = {k: v for k, v in columns.items() if k in PaymentRequest.__dataclass_fields__}
    fields["created_at"] = as_utc(columns["created_at"])
    # The column and the record's field are named differently (``link_id``, ``link``).
    fields["link"] = columns.get("link_id")
    return PaymentRequest(
        id=row[0], address=row[1], subaddr_index=row[2], created_height=row[3], **fields
    )
