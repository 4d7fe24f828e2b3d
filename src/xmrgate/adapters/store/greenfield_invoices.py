"""One store's Greenfield invoice rows in SQL (``core.greenfield_invoices`` port)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select, true, update

from xmrgate.adapters.store.db import Database, as_utc
from xmrgate.adapters.store.tables import greenfield_invoices, payment_requests
from xmrgate.core.greenfield_invoices import GreenfieldInvoice
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
        """One INSERT (its own short transaction)."""
        async with self._db.write() as conn:
            await conn.execute(
                insert(greenfield_invoices).values(
                    id=invoice.id,
                    store_id=invoice.store_id,
                    request_id=invoice.request_id,
                    order_id=invoice.order_id,
                    currency=invoice.currency,
                    amount=invoice.amount,
                    metadata=invoice.metadata,
                    speed_policy=None
                    if invoice.speed_policy is None
                    else invoice.speed_policy.value,
                    confirmations=invoice.confirmations,
                    monitoring_minutes=invoice.monitoring_minutes,
                    redirect_url=invoice.redirect_url,
                    redirect_automatically=invoice.redirect_automatically,
                    marked=None,
                    created_at=invoice.created_at,
                )
            )

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
