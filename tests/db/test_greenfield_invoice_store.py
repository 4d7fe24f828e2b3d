"""Greenfield invoices on SQLite and PostgreSQL: the rows beside their
requests, scoped by store, found by order id newest first, the merchant's mark, deleted
with their request, and the use case over them (``core/greenfield_invoices.py``) with
a fake wallet: the request made, the row written (a row that cannot be written:
``test_greenfield_one_commit.py``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import func, select

from tests.unit.fakes import AllowAll, FakeOutbox, FakeWallet
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.greenfield_invoices import SqlGreenfieldInvoices
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.tables import greenfield_invoices, payment_requests
from xmrgate.core.greenfield_invoices import GreenfieldInvoices, NewInvoice
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.speed import SpeedPolicy
from xmrgate.domain.greenfield.states import AdditionalStatus, Status
from xmrgate.domain.stores import DEFAULT_STORE, Store

XMR = 10**12
SHOP = "shop"


def _use_case(db: Database, store: str = DEFAULT_STORE, repo: Any = None) -> GreenfieldInvoices:
    requests = PaymentRequests(FakeWallet(), PaymentStore(db, store), FakeOutbox(), AllowAll())
    return GreenfieldInvoices(
        repo or SqlGreenfieldInvoices(db, store), requests, AllowAll(), store_id=store
    )


async def _count(db: Database, table: Any) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())


def test_an_invoice_is_a_request_with_its_row(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        invoices = _use_case(db)
        made = await invoices.create(
            NewInvoice(
                amount=Decimal("1.5"),
                currency="XMR",
                order_id="order-1",
                metadata='{"orderId": "order-1"}',
                speed_policy=SpeedPolicy.LOW,
                payment_tolerance=Decimal("10"),
                redirect_url="https://shop.example/thanks",
            )
        )
        request = made.payment.request
        assert request.amount == 3 * XMR // 2
        assert request.underpay_tolerance == 3 * XMR // 20  # 10 % of the amount
        assert request.expires_at is not None
        # BTCPay's default: 15 minutes to pay (both times are read apart: a second's play).
        lasts = request.expires_at - request.created_at
        assert abs(lasts - timedelta(minutes=15)) < timedelta(seconds=1)
        assert made.invoice.confirmations == 6 and made.invoice.amount == "1.5"
        assert made.state.status is Status.NEW
        assert made.state.additional is AdditionalStatus.NONE
        again = await invoices.get(made.invoice.id)
        assert again.invoice == made.invoice
        assert again.payment.request.address == request.address
        assert await _count(db, greenfield_invoices) == 1

    on_database(scenario)


def test_rows_are_the_stores_own_and_listed_by_order_newest_first(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        await SqlStores(db).insert(Store(id=SHOP, name="Shop", account_index=1))
        mine, theirs = _use_case(db), _use_case(db, SHOP)
        start = datetime.now(UTC)
        made = []
        for n, order in enumerate(("a", "b", "a")):
            mine = GreenfieldInvoices(
                SqlGreenfieldInvoices(db, DEFAULT_STORE),
                PaymentRequests(
                    FakeWallet(next_index=10 + n), PaymentStore(db), FakeOutbox(), AllowAll()
                ),
                AllowAll(),
                store_id=DEFAULT_STORE,
                # Made a second apart, in this order (the list is newest first).
                clock=lambda n=n: start + timedelta(seconds=n),  # type: ignore[misc]
            )
            made.append(await mine.create(NewInvoice(Decimal(1), "XMR", order_id=order)))
        other = await theirs.create(NewInvoice(Decimal(1), "XMR", order_id="a"))
        listed = await mine.listing(order_ids=("a",))
        assert [v.invoice.id for v in listed] == [made[2].invoice.id, made[0].invoice.id]
        assert [v.invoice.id for v in await mine.listing(skip=1, take=1)] == [made[1].invoice.id]
        assert len(await mine.listing()) == 3
        assert [v.invoice.id for v in await theirs.listing()] == [other.invoice.id]
        # Another store's invoice is not found, by id or in a list.
        with pytest.raises(Exception, match="not found"):
            await mine.get(other.invoice.id)
        assert await mine.listing(statuses=(Status.SETTLED,)) == []

    on_database(scenario)


def test_a_mark_is_kept_and_checked(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        invoices = _use_case(db)
        made = await invoices.create(NewInvoice(Decimal(2), "XMR"))
        marked = await invoices.mark(made.invoice.id, Status.INVALID)
        assert (marked.state.status, marked.state.additional) == (
            Status.INVALID,
            AdditionalStatus.MARKED,
        )
        settled = await invoices.mark(made.invoice.id, Status.SETTLED)
        assert settled.state.status is Status.SETTLED
        assert (await invoices.get(made.invoice.id)).invoice.marked is Status.SETTLED
        # Settled by the merchant: back to Invalid only, never Settled twice.
        with pytest.raises(FieldError):
            await invoices.mark(made.invoice.id, Status.SETTLED)

    on_database(scenario)


def test_the_row_goes_with_its_request(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        invoices = _use_case(db)
        made = await invoices.create(NewInvoice(Decimal(2), "XMR"))
        await PaymentStore(db).delete(made.payment.request.address)
        assert await _count(db, greenfield_invoices) == 0

    on_database(scenario)


@pytest.mark.parametrize(
    ("new", "path"),
    [
        (NewInvoice(Decimal(1), "EUR"), "currency"),
        (NewInvoice(Decimal(1), "XMR", expiration_minutes=0), "checkout.expirationMinutes"),
        (NewInvoice(Decimal(1), "XMR", monitoring_minutes=10**6), "checkout.monitoringMinutes"),
        (
            NewInvoice(Decimal(1), "XMR", payment_tolerance=Decimal(101)),
            "checkout.paymentTolerance",
        ),
        (NewInvoice(Decimal(1), "XMR", metadata='"' + "x" * 65536 + '"'), "metadata"),
    ],
)
def test_bad_terms_are_refused_before_anything_is_written(
    on_database: Any, new: NewInvoice, path: str
) -> None:
    async def scenario(db: Database) -> None:
        with pytest.raises(FieldError) as refused:
            await _use_case(db).create(new)
        assert refused.value.path == path
        assert await _count(db, payment_requests) == 0

    on_database(scenario)


def test_fiat_without_rates_names_the_currency(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        base = _use_case(db)
        fiat = GreenfieldInvoices(
            SqlGreenfieldInvoices(db, DEFAULT_STORE),
            PaymentRequests(FakeWallet(), PaymentStore(db), FakeOutbox(), AllowAll()),
            AllowAll(),
            store_id=DEFAULT_STORE,
            currencies=("EUR",),
        )
        del base
        with pytest.raises(FieldError) as refused:
            await fiat.create(replace(NewInvoice(Decimal(0), "EUR")))
        assert refused.value.path == "amount"

    on_database(scenario)
