"""A Greenfield invoice's row and its payment request are one commit, on
SQLite and PostgreSQL, on both paths of ``PaymentRequests.create``: the address pool's
take (one statement on PostgreSQL) and the wallet's subaddress (``PaymentStore.create``).

If the row cannot be written, neither is, and the pool's subaddress stays in the pool
(before, the request was committed first and deleted again when the row failed: the
subaddress was spent, and an interruption between the two left a request no shop
knows of).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import event, func, select

from tests.unit.fakes import AllowAll, FakeOutbox, FakeWallet, address_of
from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.greenfield_invoices import SqlGreenfieldInvoices
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.tables import greenfield_invoices, payment_requests
from xmrgate.core import greenfield_invoices as invoices_module
from xmrgate.core.greenfield_invoices import GreenfieldInvoices, NewInvoice
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.domain.errors import AlreadyExists
from xmrgate.domain.stores import DEFAULT_STORE

PATHS = ("pool", "wallet")


class Interrupted(BaseException):
    """The work stopped at the row's INSERT (a cancelled task, a process stopped)."""


def _invoices(db: Database, path: str, wallet: FakeWallet | None = None) -> GreenfieldInvoices:
    pool = SqlAddressPool(db) if path == "pool" else None
    requests = PaymentRequests(
        wallet or FakeWallet(), PaymentStore(db), FakeOutbox(), AllowAll(), pool=pool
    )
    return GreenfieldInvoices(
        SqlGreenfieldInvoices(db, DEFAULT_STORE), requests, AllowAll(), store_id=DEFAULT_STORE
    )


async def _count(db: Database, table: Any) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())


@contextmanager
def _row_insert_interrupted(db: Database) -> Iterator[None]:
    """Every statement that writes ``greenfield_invoices`` stops before it runs."""

    def stop(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if "INSERT INTO greenfield_invoices" in statement:
            raise Interrupted()

    sync_engine = db.engine.sync_engine
    event.listen(sync_engine, "before_cursor_execute", stop)
    try:
        yield
    finally:
        event.remove(sync_engine, "before_cursor_execute", stop)


@pytest.mark.parametrize("path", PATHS)
def test_a_created_invoice_is_its_request_and_its_row_together(on_database: Any, path: str) -> None:
    async def scenario(db: Database) -> None:
        await SqlAddressPool(db).add([(address_of(1), 1)])
        made = await _invoices(db, path).create(NewInvoice(Decimal(1), "XMR", order_id="o-1"))
        async with db.read() as conn:
            joined = (
                await conn.execute(
                    select(greenfield_invoices.c.id, payment_requests.c.address).join(
                        payment_requests,
                        payment_requests.c.id == greenfield_invoices.c.request_id,
                    )
                )
            ).all()
        assert [tuple(r) for r in joined] == [(made.invoice.id, made.payment.request.address)]
        assert made.invoice.request_id == made.payment.request.id
        assert (await _invoices(db, path).get(made.invoice.id)).invoice == made.invoice

    on_database(scenario)


@pytest.mark.parametrize("path", PATHS)
def test_a_row_that_cannot_be_written_leaves_no_request_and_the_subaddress_pooled(
    on_database: Any, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario(db: Database) -> None:
        pool = SqlAddressPool(db)
        await pool.add([(address_of(1), 1), (address_of(2), 2)])
        wallet = FakeWallet(next_index=10)
        invoices = _invoices(db, path, wallet)
        # The same invoice id twice: the second row breaks the table's primary key.
        monkeypatch.setattr(invoices_module, "new_invoice_id", lambda: "same-id")
        first = await invoices.create(NewInvoice(Decimal(1), "XMR", order_id="o-1"))
        with pytest.raises(AlreadyExists):
            await invoices.create(NewInvoice(Decimal(2), "XMR", order_id="o-2"))
        assert await _count(db, payment_requests) == 1
        assert await _count(db, greenfield_invoices) == 1
        if path == "pool":
            # Rolled back with the request: the second subaddress is still offered.
            assert await pool.size() == 1
            monkeypatch.setattr(invoices_module, "new_invoice_id", lambda: "other-id")
            again = await invoices.create(NewInvoice(Decimal(2), "XMR", order_id="o-2"))
            assert again.payment.request.subaddr_index == 2
        else:
            # The row's duplicate is not the subaddress's: the wallet skips nothing.
            assert wallet.skipped == []
        assert first.payment.request.subaddr_index == (1 if path == "pool" else 10)

    on_database(scenario)


@pytest.mark.parametrize("path", PATHS)
def test_an_interruption_at_the_row_writes_neither(on_database: Any, path: str) -> None:
    async def scenario(db: Database) -> None:
        pool = SqlAddressPool(db)
        await pool.add([(address_of(1), 1)])
        invoices = _invoices(db, path)
        with _row_insert_interrupted(db), pytest.raises(Interrupted):
            await invoices.create(NewInvoice(Decimal(1), "XMR", order_id="o-1"))
        assert await _count(db, payment_requests) == 0
        assert await _count(db, greenfield_invoices) == 0
        assert await pool.size() == 1

    on_database(scenario)
