"""A Greenfield invoice's redirect is checked by the URL guard once: as it
will be used (``{OrderId}`` and ``{InvoiceId}`` filled in) and refused at
``checkout.redirectURL``; ``PaymentRequests.create`` does not check it again as
``return_url`` (each check resolves the host: a second DNS lookup per invoice).
A plain request's ``return_url`` is still checked there."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from tests.unit.fakes import FakeOutbox, FakePaymentStore, FakeWallet
from tests.unit.greenfield_site import InvoiceRows
from xmrgate.core.greenfield_invoices import GreenfieldInvoices, NewInvoice
from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.greenfield.errors import FieldError

SHOP = "https://shop.example"


class CountingGuard:
    """A URL guard that records every check and refuses hosts of ``.internal``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def check(self, url: str, field: str) -> None:
        self.calls.append((url, field))
        if ".internal" in url:
            raise InvalidInput(f"{field} points at a private address")


def _site() -> tuple[CountingGuard, FakePaymentStore, GreenfieldInvoices, PaymentRequests]:
    guard, store = CountingGuard(), FakePaymentStore()
    requests = PaymentRequests(FakeWallet(), store, FakeOutbox(), guard)
    rows = InvoiceRows(store.invoice_rows, store, "default")
    invoices = GreenfieldInvoices(rows, requests, guard, store_id="default")
    return guard, store, invoices, requests


def test_a_redirect_is_checked_once_filled_in() -> None:
    guard, store, invoices, _ = _site()
    new = NewInvoice(Decimal(1), "XMR", order_id="o 1", redirect_url=SHOP + "/{OrderId}")
    made = asyncio.run(invoices.create(new))
    assert guard.calls == [(SHOP + "/o%201", "redirectURL")]
    assert made.payment.request.return_url == SHOP + "/o%201"
    assert made.invoice.redirect_url == SHOP + "/{OrderId}"  # the shop's template, kept
    assert list(store.invoice_rows) == [made.invoice.id]


def test_a_refused_redirect_is_the_fields_422_and_writes_nothing() -> None:
    guard, store, invoices, _ = _site()
    new = NewInvoice(Decimal(1), "XMR", redirect_url="http://shop.internal/{InvoiceId}")
    with pytest.raises(FieldError) as refused:
        asyncio.run(invoices.create(new))
    assert refused.value.path == "checkout.redirectURL"
    assert len(guard.calls) == 1
    assert store.requests == {} and store.invoice_rows == {}


def test_a_plain_requests_return_url_is_still_checked() -> None:
    guard, _, _, requests = _site()
    asyncio.run(requests.create(NewPaymentRequest(amount=5, return_url=SHOP + "/back")))
    assert guard.calls == [(SHOP + "/back", "return_url")]
