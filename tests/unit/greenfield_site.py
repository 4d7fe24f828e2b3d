"""A site of the Greenfield facade over fakes: the app, three stores, their keys.

``create_app`` over the default store, ``shop-a`` (priced in EUR by a fixed rate book),
``shop-b`` (XMR only) and ``shop-c`` (disabled). Keys: an operator key with every scope,
an operator key with ``read`` only, and store keys of ``shop-a`` (read+receive: the
WooCommerce set), ``shop-a`` (receive only), ``shop-a`` (a till: pos only) and
``shop-b`` (read+receive+refund). ``synced()`` makes the main wallet checked and usable.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from fastapi import FastAPI

from tests.unit.fakes import AllowAll, FakeOutbox, FakePaymentStore, FakeWallet
from tests.unit.gateway_builder import NoFacts, StoreRows, fake_app, fake_gateway, fake_stores
from xmrgate.config import Settings
from xmrgate.core.gateway import Gateway
from xmrgate.core.greenfield_invoices import GreenfieldInvoice, GreenfieldInvoices
from xmrgate.core.greenfield_webhooks import Delivery, GreenfieldWebhooks, Webhook
from xmrgate.core.overview import Overview, StoreFacts
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.rates import RateBook
from xmrgate.core.store_gateways import StoreGateways
from xmrgate.core.wallet_status import WalletIdentity, WalletStatus
from xmrgate.domain.api_keys import parse_api_keys
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.greenfield.states import Status
from xmrgate.domain.stores import DEFAULT_STORE, Store, StoreKey, key_digest

OPERATOR = "operator-key-0123456789"  # every scope
OP_READER = "operator-reader-0123456789"  # read only
SHOP_A = "xgs_shop-a-key-0123456789abcdef"  # read+receive, shop-a (WooCommerce's set)
RECEIVE_A = "xgs_receive-a-key-0123456789abc"  # receive only, shop-a
TILL_A = "xgs_till-a-key-0123456789abcdef"  # pos only, shop-a
SHOP_B = "xgs_shop-b-key-0123456789abcdef"  # read+receive+refund, shop-b
PRIMARY = "4GreenfieldSitePrimaryAddress"


class FixedSource:
    """A rate source that always answers the same prices."""

    name = "fixed"
    prices = {"EUR": Decimal("150"), "USD": Decimal("160")}

    async def fetch(self, currency: str) -> Decimal:
        return self.prices[currency]


class Heights(NoFacts):
    """The database's synced height and the wallet's height, as a test sets them."""

    def __init__(self) -> None:
        self.synced = 100
        self.wallet = 100

    async def facts(self) -> StoreFacts:
        return StoreFacts(synced_height=self.synced, callbacks_pending=0, callbacks_failed=0)

    async def get_height(self) -> int:
        return self.wallet


async def db_answers() -> bool:
    return True


def _key(number: int, store: str, token: str, scopes: set[str]) -> StoreKey:
    return StoreKey(
        id=f"{number:016x}", store_id=store, digest=key_digest(token), scopes=frozenset(scopes)
    )


class GreenfieldSite:
    """The app and the parts a test moves (the wallet, the heights, the identity)."""

    def __init__(self, *, operator: bool = True, rate_lock: int = 600) -> None:
        self.book = RateBook(
            [FixedSource()],
            ["EUR", "USD"],
            refresh=60,
            max_age=600,
            max_spread=0.05,
            min_sources=1,
        )
        asyncio.run(self.book.refresh_once())
        keys = parse_api_keys(f"{OPERATOR} {OP_READER}:read") if operator else []
        self.rate_lock = rate_lock
        self.payments: dict[str, FakePaymentStore] = {}
        self.invoice_rows: dict[str, GreenfieldInvoice] = {}
        self.webhook_rows = WebhookRows()
        self.identity = WalletIdentity(primary_address=PRIMARY)
        self.wallet = FakeWallet()
        self.heights = Heights()
        status = WalletStatus(self.wallet, self.wallet, db_answers, "sqlite", self.identity)
        self.default = fake_gateway(
            DEFAULT_STORE,
            wallet=self.wallet,
            wallet_status=status,
            identity=self.identity,
            overview=Overview(self.heights, status, self.heights),
            rates=self.book,
            api_keys=keys,
            webhooks=GreenfieldWebhooks(
                self.webhook_rows.of(DEFAULT_STORE), InternalRefused(), store_id=DEFAULT_STORE
            ),
        )
        rows = StoreRows(
            stores=[
                Store(id=DEFAULT_STORE, name="Default store", account_index=0),
                Store(id="shop-a", name="Café Alpha", account_index=1, accent="#0f766e"),
                Store(id="shop-b", name="Shop B", account_index=2),
                Store(id="shop-c", name="Closed", account_index=3, enabled=False),
            ],
            keys=[
                _key(1, "shop-a", SHOP_A, {"read", "receive"}),
                _key(2, "shop-a", RECEIVE_A, {"receive"}),
                _key(3, "shop-a", TILL_A, {"pos"}),
                _key(4, "shop-b", SHOP_B, {"read", "receive", "refund"}),
            ],
        )
        self.stores: StoreGateways = fake_stores(self._build, rows, operator_keys=keys)
        settings = Settings(rate_lock=rate_lock)
        self.app: FastAPI = fake_app(settings, self.stores, rows=rows)

    def _build(self, store: Store) -> Gateway:
        if store.id == DEFAULT_STORE:
            return self.default
        rates = self.book if store.id == "shop-a" else None
        # Each store's requests in memory, its subaddresses counted from its own start.
        wallet = FakeWallet(next_index=100 * store.account_index)
        # The store writes each invoice's row with its request, into the shared rows.
        payments = self.payments[store.id] = FakePaymentStore(invoice_rows=self.invoice_rows)
        requests = PaymentRequests(
            wallet, payments, FakeOutbox(), AllowAll(), pricing=rates, rate_lock=self.rate_lock
        )
        invoices = GreenfieldInvoices(
            InvoiceRows(self.invoice_rows, payments, store.id),
            requests,
            AllowAll(),
            store_id=store.id,
            currencies=() if rates is None else rates.currencies,
            rate_lock=self.rate_lock,
            # The store's default speed policy as the registry last read it, as the
            # product wires it (``runtime/store_units.py``).
            confirmations=lambda: self.stores.directory.confirmations(store.id),
        )
        webhooks = GreenfieldWebhooks(
            self.webhook_rows.of(store.id), InternalRefused(), store_id=store.id
        )
        return fake_gateway(
            store.id,
            wallet=wallet,
            payment_requests=requests,
            identity=self.identity,
            rates=rates,
            greenfield=invoices,
            webhooks=webhooks,
        )

    def synced(self) -> None:
        """The main wallet checked (the right one, full mode) and open."""
        self.identity.expected = PRIMARY
        self.identity.view_only = False
        self.identity.ready.set()


class InvoiceRows:
    """One store's Greenfield invoice rows in a dict shared by every store (so another
    store's id is really there, and must not be found)."""

    def __init__(
        self, rows: dict[str, GreenfieldInvoice], payments: FakePaymentStore, store_id: str
    ) -> None:
        self.rows = rows
        self.payments = payments
        self.store_id = store_id

    def _address(self, invoice: GreenfieldInvoice) -> str:
        return next(
            r.address for r in self.payments.requests.values() if r.id == invoice.request_id
        )

    async def get(self, invoice_id: str) -> tuple[GreenfieldInvoice, str] | None:
        found = self.rows.get(invoice_id)
        if found is None or found.store_id != self.store_id:
            return None
        return found, self._address(found)

    async def page(
        self, order_ids: tuple[str, ...], skip: int, take: int
    ) -> list[tuple[GreenfieldInvoice, str]]:
        mine = [
            r
            for r in self.rows.values()
            if r.store_id == self.store_id and (not order_ids or r.order_id in order_ids)
        ]
        mine.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return [(r, self._address(r)) for r in mine[skip : skip + take]]

    async def set_mark(self, invoice_id: str, marked: Status) -> bool:
        found = self.rows.get(invoice_id)
        if found is None or found.store_id != self.store_id:
            return False
        self.rows[invoice_id] = replace(found, marked=marked)
        return True


class InternalRefused:
    """The SSRF guard as it answers for a loopback or private host (no DNS here)."""

    refused = ("127.", "10.", "192.168.", "localhost", "[::1]")

    async def check(self, url: str, field: str) -> None:
        host = url.split("//", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
        if host.startswith(self.refused):
            raise InvalidInput(f"{field} points at an internal address")


class WebhookRows:
    """Every store's webhooks and deliveries in memory; ``of(store)`` is one store's
    ``WebhookRepository``. A test adds deliveries as the announcer would (``deliver``)."""

    def __init__(self) -> None:
        self.webhooks: dict[str, Webhook] = {}
        # Oldest first, as the outbox's seq orders them; with each one's store.
        self.deliveries: list[tuple[str, Delivery]] = []

    def of(self, store_id: str) -> StoreWebhookRows:
        return StoreWebhookRows(self, store_id)

    def deliver(self, store_id: str, delivery: Delivery) -> None:
        self.deliveries.append((store_id, delivery))


class StoreWebhookRows:
    """One store's view of ``WebhookRows`` (``core.greenfield_webhooks.WebhookRepository``)."""

    def __init__(self, rows: WebhookRows, store_id: str) -> None:
        self.rows = rows
        self.store_id = store_id

    async def insert(self, webhook: Webhook) -> None:
        self.rows.webhooks[webhook.id] = webhook

    async def all(self) -> list[Webhook]:
        return [w for w in self.rows.webhooks.values() if w.store_id == self.store_id]

    async def get(self, webhook_id: str) -> Webhook | None:
        found = self.rows.webhooks.get(webhook_id)
        return found if found is not None and found.store_id == self.store_id else None

    async def update(self, webhook: Webhook) -> bool:
        if await self.get(webhook.id) is None:
            return False
        self.rows.webhooks[webhook.id] = webhook
        return True

    async def delete(self, webhook_id: str) -> bool:
        if await self.get(webhook_id) is None:
            return False
        del self.rows.webhooks[webhook_id]
        self.rows.deliveries = [
            (s, d)
            for s, d in self.rows.deliveries
            if not (d.webhook_id == webhook_id and d.status == "pending")
        ]
        return True

    def _mine(self, webhook_id: str) -> list[Delivery]:
        return [
            d
            for s, d in reversed(self.rows.deliveries)
            if s == self.store_id and d.webhook_id == webhook_id
        ]

    async def deliveries(self, webhook_id: str, count: int) -> list[Delivery]:
        return self._mine(webhook_id)[:count]

    async def delivery(self, webhook_id: str, delivery_id: str) -> Delivery | None:
        return next((d for d in self._mine(webhook_id) if d.id == delivery_id), None)

    async def add_redelivery(
        self, original: Delivery, delivery_id: str, payload: str, url: str
    ) -> bool:
        fresh = replace(
            original,
            id=delivery_id,
            created_at=datetime.now(UTC),
            status="pending",
            attempts=0,
            last_status=None,
            last_error=None,
            payload=payload,
        )
        self.rows.deliver(self.store_id, fresh)
        return True


def auth(key: str, scheme: str = "token") -> dict[str, str]:
    """The header BTCPay's PHP client sends (``token``), or another scheme."""
    return {"Authorization": f"{scheme} {key}"}
