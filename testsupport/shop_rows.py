"""A store's rows written straight into a migrated database: what every public page shows.

For tests that serve the real app without a wallet (in process, or installed elsewhere
and started as ``xmrgate serve``): a store with its name and colour, a payment request of
it, a Greenfield invoice of that request, a payment link, and an open refund of the
request with its claim token. The rows go in through the store adapters, except the
refund, written as a row: making one through ``SqlRefundStore.create`` needs money that
arrived, and the pages read only the row.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.greenfield_invoices import SqlGreenfieldInvoices
from xmrgate.adapters.store.links import SqlLinkStore
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.tables import refunds
from xmrgate.domain.greenfield.invoice_row import GreenfieldInvoice
from xmrgate.domain.links import LinkFields
from xmrgate.domain.refunds import RefundStatus, token_digest
from xmrgate.domain.stores import Store

SHOP = "shop"
# A mainnet subaddress of a throwaway wallet (tests/unit/test_refund_page.py).
ADDRESS = (
    "83rGqPx7diBcEDoKTwB65VeE4PwWsjkBDQWvKSh93cumexV"
    "xGV3exdkYsco9vmg3c7J2ijuZgs114i5YDV7kwzPKMSAWExx"
)
INVOICE = "gf-invoice-id-0123456789"
LINK_SLUG = "coffee"
# A claim token has the shape of ``new_claim_token``'s: 32 URL-safe characters.
REFUND_TOKEN = "refund-claim-token-0123456789abc"
XMR = 10**12


async def _seed(url: str) -> None:
    db = Database(url)
    now = datetime.now(UTC)
    try:
        await SqlStores(db).insert(Store(id=SHOP, name="Shop", account_index=1, accent="#0f766e"))
        request = await PaymentStore(db, SHOP).create(
            address=ADDRESS,
            subaddr_index=3,
            amount=XMR,
            description="Order 7",
            callback_url=None,
            return_url="https://shop.example/done?order=7",
            expires_at=now + timedelta(hours=1),
        )
        await SqlGreenfieldInvoices(db, SHOP).insert(
            GreenfieldInvoice(
                id=INVOICE,
                store_id=SHOP,
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
                created_at=now,
            )
        )
        await SqlLinkStore(db, SHOP).create(
            "ln_coffee", LINK_SLUG, LinkFields(title="Coffee", amount=XMR // 100), now
        )
        async with db.write() as conn:
            await conn.execute(
                insert(refunds).values(
                    id="rf_" + "a" * 20,
                    store_id=SHOP,
                    request_id=request.id,
                    amount=XMR // 2,
                    reason="A broken cup",
                    token_digest=token_digest(REFUND_TOKEN),
                    status=RefundStatus.OPEN.value,
                    created_at=now,
                    expires_at=now + timedelta(days=7),
                    manual=False,
                )
            )
    finally:
        await db.dispose()


def seed_shop(url: str) -> None:
    """Write the shop's rows into the migrated database at ``url`` (SQLAlchemy async URL)."""
    asyncio.run(_seed(url))
