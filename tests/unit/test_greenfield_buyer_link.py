"""The buyer's link of a Greenfield invoice (``/i/{invoiceId}``, ``/invoice?id=``) on the
real app over a migrated SQLite copy: it leads to the checkout page of the invoice's
request in any store, without a key; an unknown id is the checkout's HTML 404."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from testsupport.migrated import MigratedTemplates
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.greenfield_invoices import SqlGreenfieldInvoices
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.config import Settings
from xmrgate.core.greenfield_invoices import GreenfieldInvoice, fill_redirect
from xmrgate.domain.stores import Store
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services

ADDRESS = "8" + "G" * 94
INVOICE = "gf-invoice-id-0123456789"
NO_WALLET = "http://127.0.0.1:9/json_rpc"


def _seed(url: str) -> None:
    async def main() -> None:
        db = Database(url)
        try:
            await SqlStores(db).insert(Store(id="shop", name="Shop", account_index=1))
            request = await PaymentStore(db, "shop").create(
                address=ADDRESS,
                subaddr_index=3,
                amount=10**12,
                description="Order 7",
                callback_url=None,
                return_url="https://shop.example/done?order=7",
            )
            await SqlGreenfieldInvoices(db, "shop").insert(
                GreenfieldInvoice(
                    id=INVOICE,
                    store_id="shop",
                    request_id=request.id,
                    order_id="7",
                    currency="XMR",
                    amount="1",
                    metadata="{}",
                    speed_policy=None,
                    confirmations=1,
                    monitoring_minutes=60,
                    redirect_url="https://shop.example/done?order={OrderId}",
                    redirect_automatically=False,
                    marked=None,
                    created_at=datetime.now(UTC),
                )
            )
        finally:
            await db.dispose()

    asyncio.run(main())


@pytest.fixture
def client(tmp_path: Path, migrated_templates: MigratedTemplates) -> TestClient:
    path = tmp_path / "buyer.sqlite3"
    _seed(migrated_templates.sqlite_copy(path))
    # Keys configured: the buyer's link needs none.
    settings = Settings(sqlite=str(path), api_keys="operator-key-0123456789", rpc_address=NO_WALLET)
    services = Services.build(settings)
    asyncio.run(services.stores.load())
    return TestClient(build_app(settings, services), follow_redirects=False)


def test_the_link_leads_to_the_checkout_of_its_request(client: TestClient) -> None:
    for path in (f"/i/{INVOICE}", f"/invoice?id={INVOICE}"):
        answer = client.get(path)
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == f"/pay/{ADDRESS}"
        assert "x-moneropay-address" not in answer.headers


def test_an_unknown_invoice_is_the_checkouts_404_page(client: TestClient) -> None:
    for path in ("/i/no-such-invoice", "/invoice?id=no-such", "/invoice", "/i/" + "x" * 65):
        answer = client.get(path)
        assert answer.status_code in (404, 422), (path, answer.text)
        if answer.status_code == 404:
            assert answer.headers["content-type"].startswith("text/html")


def test_the_redirect_is_filled_in_and_encoded() -> None:
    filled = fill_redirect("https://s.example/r?o={orderid}&i={InvoiceId}", "a b&c", "ID")
    assert filled == "https://s.example/r?o=a%20b%26c&i=ID"
    assert fill_redirect(None, "1", "ID") is None
