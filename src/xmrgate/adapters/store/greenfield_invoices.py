"""One store's Greenfield invoice rows in SQL (``core.greenfield_invoices`` port).

A new row is written by the request's own INSERT (``address_pool.take``,
``PaymentStore.create``), in its transaction, with the functions at the end of this
module: one commit for the invoice and its request.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, bindparam, insert, select, true, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import Insert

from xmrgate.adapters.store.db import Database, as_utc
from xmrgate.adapters.store.tables import greenfield_invoices, payment_requests
from xmrgate.domain.greenfield.invoice_row import GreenfieldInvoice, InvoiceRow
from xmrgate.domain.greenfield.speed import SpeedPolicy
from xmrgate.domain.greenfield.states import Status

_G = greenfield_invoices.c
_P = payment_requests.c
# Each row with its request's address (the request's ledger is read by address).
_WITH_ADDRESS = select(greenfield_invoices, _P.address).join(
    payment_requests, _P.id == _G.request_id
)


def _invoice(row: Any) -> GreenfieldInvoice:
    return GreenfieldInvoice(
        id=row["id"],
        store_id=row["store_id"],
        request_id=row["request_id"],
        order_id=row["order_id"],
        currency=row["currency"],
        amount=row["amount"],
        metadata=row["metadata"],
        speed_policy=None if row["speed_policy"] is None else SpeedPolicy(row["speed_policy"]),
        confirmations=row["confirmations"],
        monitoring_minutes=row["monitoring_minutes"],
        redirect_url=row["redirect_url"],
        redirect_automatically=bool(row["redirect_automatically"]),
        marked=None if row["marked"] is None else Status(row["marked"]),
        created_at=as_utc(row["created_at"]),
    )


class SqlGreenfieldInvoices:
    """The invoice rows of ONE store: every read and write is scoped by it (None: every
    store's, for the buyer's link ``/i/{invoiceId}``, which reads only)."""

    def __init__(self, db: Database, store_id: str | None) -> None:
        self._db = db
        self._store_id = store_id
        self._mine = true() if store_id is None else _G.store_id == store_id

    async def insert(self, invoice: GreenfieldInvoice) -> None:
        """A row beside a request that exists already, in its own transaction (tests
        and tools; an invoice is made with its request, ``PaymentRequests.create``)."""
        async with self._db.write() as conn:
            await insert_row(conn, invoice, invoice.request_id)

    async def get(self, invoice_id: str) -> tuple[GreenfieldInvoice, str] | None:
        """The store's row and its request's address, or None."""
        statement = _WITH_ADDRESS.where(_G.id == invoice_id, self._mine)
        async with self._db.read(autocommit=True) as conn:
            row = (await conn.execute(statement)).mappings().first()
        return None if row is None else (_invoice(row), row["address"])

    async def page(
        self, order_ids: tuple[str, ...], skip: int, take: int
    ) -> list[tuple[GreenfieldInvoice, str]]:
        """Newest first (``ix_greenfield_invoices_created``); by order id when given
        (``ix_greenfield_invoices_order``)."""
        statement = _WITH_ADDRESS.where(self._mine)
        if order_ids:
            statement = statement.where(_G.order_id.in_(order_ids))
        statement = statement.order_by(_G.created_at.desc(), _G.id.desc()).offset(skip).limit(take)
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(statement)).mappings().all()
        return [(_invoice(row), row["address"]) for row in rows]

    async def set_mark(self, invoice_id: str, marked: Status) -> bool:
        """Record the merchant's mark; False when the row is not this store's."""
        async with self._db.write() as conn:
            changed = await conn.execute(
                update(greenfield_invoices)
                .where(_G.id == invoice_id, self._mine)
                # Watched again: the mark is a change the store's webhooks are told of.
                .values(marked=marked.value, watching=True)
            )
        return bool(changed.rowcount == 1)


# The row's columns but its request's id (and the announcer's, which start empty).
_ROW_COLUMNS = (
    "id",
    "store_id",
    "order_id",
    "currency",
    "amount",
    "metadata",
    "speed_policy",
    "confirmations",
    "monitoring_minutes",
    "redirect_url",
    "redirect_automatically",
    "marked",
    "created_at",
)
# Bound beside the request's own values in one statement: the tables share names
# (``amount``, ``store_id``, ``created_at``), so the row's are prefixed.
_PREFIX = "gf_"


def row_values(row: InvoiceRow) -> dict[str, Any]:
    """The row's column values (without ``request_id``)."""
    return {
        "id": row.id,
        "store_id": row.store_id,
        "order_id": row.order_id,
        "currency": row.currency,
        "amount": row.amount,
        "metadata": row.metadata,
        "speed_policy": None if row.speed_policy is None else row.speed_policy.value,
        "confirmations": row.confirmations,
        "monitoring_minutes": row.monitoring_minutes,
        "redirect_url": row.redirect_url,
        "redirect_automatically": row.redirect_automatically,
        "marked": None if row.marked is None else row.marked.value,
        "created_at": row.created_at,
    }


async def insert_row(conn: AsyncConnection, row: InvoiceRow, request_id: int) -> None:
    """Insert the row beside request ``request_id``, in the caller's transaction."""
    await conn.execute(insert(greenfield_invoices).values(**row_values(row), request_id=request_id))


def bound_row_values(row: InvoiceRow) -> dict[str, Any]:
    """The values ``insert_beside`` binds, by their prefixed names."""
    return {_PREFIX + name: value for name, value in row_values(row).items()}


def insert_beside(request_id: ColumnElement[Any], source: Any) -> Insert:
    """``INSERT ... SELECT`` of the row (values bound by ``bound_row_values``) with
    ``request_id`` read from ``source``: a CTE of a statement that inserts the request,
    so that the two are one statement (PostgreSQL)."""
    values = [bindparam(_PREFIX + n, type_=greenfield_invoices.c[n].type) for n in _ROW_COLUMNS]
    return insert(greenfield_invoices).from_select(
        ["request_id", *_ROW_COLUMNS], select(request_id, *values).select_from(source)
    )
