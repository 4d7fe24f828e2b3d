"""One builder of the Gateway a unit test runs: the parts a test gives, fakes for the rest.

Every store's Gateway is complete in the gateway (``runtime/store_units.py``); so is every
test's. A part a test does not give is an empty in-memory fake (no requests listed, no
receipts, no daily sums, an overview of nothing) or, for the parts with a store of their
own (refunds, payment links, Greenfield invoices), ``Unused``: a test that reaches one
it did not give fails at once, naming it, instead of exercising a stand-in nobody
checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from fastapi import FastAPI

from tests.unit.fakes import (
    AllowAll,
    FakeIdempotencyStore,
    FakeJournal,
    FakeOutbox,
    FakePaymentStore,
    FakeWallet,
)
from xmrgate.config import Settings
from xmrgate.core.gateway import Gateway
from xmrgate.core.greenfield_invoices import GreenfieldInvoices
from xmrgate.core.greenfield_webhooks import GreenfieldWebhooks
from xmrgate.core.idempotency import Idempotency
from xmrgate.core.invoices import Invoices
from xmrgate.core.links import Links
from xmrgate.core.overview import Overview, StoreFacts
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.payouts import Payouts
from xmrgate.core.rates import RateBook
from xmrgate.core.received import ReceivedPerDay
from xmrgate.core.refunds import Refunds
from xmrgate.core.store_directory import StoreDirectory
from xmrgate.core.store_gateways import DEFAULT_STORE_ROW, StoreGateways
from xmrgate.core.stores import StoreAdmin
from xmrgate.core.unmatched import ReceiptTotals, UnmatchedReceipts
from xmrgate.core.wallet_status import WalletIdentity, WalletStatus
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.errors import AlreadyExists
from xmrgate.domain.stores import DEFAULT_STORE, Store, StoreKey
from xmrgate.web.app import create_app

PRIMARY = "4TestGatewayPrimaryAddress"


class Unused:
    """A part the test did not give its gateway: any use fails the test, naming it."""

    def __init__(self, part: str) -> None:
        self._part = part

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"this test's gateway was given no {self._part} (asked: {name})")


class NoRequests:
    """The list and the feed of a store without requests (``core.invoices`` ports)."""

    async def page(self, query: object, now: datetime) -> list[Any]:
        return []

    async def after(self, seq: int, limit: int) -> list[Any]:
        return []


class NoDailySums:
    """A store that never received anything (``core.received.DailySums``)."""

    async def daily_sums(self, since: int, utc_offset: int) -> dict[int, tuple[int, int]]:
        return {}


class NoReceipts:
    """A store without unmatched receipts (``core.unmatched.ReceiptRepository``)."""

    async def page(self, status: object, limit: int, after: object) -> list[Any]:
        return []

    async def get(self, receipt_id: int) -> None:
        return None

    async def dismiss(self, receipt_id: int, note: str, now: datetime) -> None:
        return None

    async def chain_height(self) -> int:
        return 0

    async def totals(self) -> ReceiptTotals:
        return ReceiptTotals(0, 0, None)


class NoFacts:
    """The database's facts of an empty gateway, a wallet at height 0."""

    async def facts(self) -> StoreFacts:
        return StoreFacts(synced_height=0, callbacks_pending=0, callbacks_failed=0)

    async def get_height(self) -> int:
        return 0


async def db_up() -> None:
    """A database that always answers."""


def fake_gateway(
    store_id: str = DEFAULT_STORE,
    *,
    wallet: Any = None,
    payment_requests: PaymentRequests | None = None,
    payouts: Payouts | None = None,
    idempotency: Idempotency | None = None,
    wallet_status: WalletStatus | None = None,
    identity: WalletIdentity | None = None,
    overview: Overview | None = None,
    received: ReceivedPerDay | None = None,
    invoices: Invoices | None = None,
    refunds: Refunds | None = None,
    links: Links | None = None,
    unmatched: UnmatchedReceipts | None = None,
    greenfield: GreenfieldInvoices | None = None,
    webhooks: GreenfieldWebhooks | None = None,
    rates: RateBook | None = None,
    api_keys: Sequence[ApiKey] = (),
) -> Gateway:
    """A complete Gateway of ``store_id``: the parts given, fakes for the others."""
    wallet = FakeWallet() if wallet is None else wallet
    identity = identity or WalletIdentity(primary_address=PRIMARY)
    status = wallet_status or WalletStatus(wallet, wallet, db_up, "sqlite", identity)
    facts = NoFacts()
    return Gateway(
        store_id=store_id,
        payment_requests=payment_requests
        or PaymentRequests(wallet, FakePaymentStore(), FakeOutbox(), AllowAll()),  # type: ignore[arg-type]
        payouts=payouts or Payouts(wallet, FakeJournal(), priority=0, timeout=5),
        idempotency=idempotency or Idempotency(FakeIdempotencyStore()),
        wallet_status=status,
        identity=identity,
        overview=overview or Overview(facts, status, facts),
        received=received or ReceivedPerDay(NoDailySums()),
        invoices=invoices or Invoices(NoRequests(), NoRequests()),  # type: ignore[arg-type]
        refunds=refunds or cast(Refunds, Unused("refunds")),
        links=links or cast(Links, Unused("payment links")),
        unmatched=unmatched or UnmatchedReceipts(NoReceipts()),  # type: ignore[arg-type]
        greenfield=greenfield or cast(GreenfieldInvoices, Unused("Greenfield invoices")),
        webhooks=webhooks or cast(GreenfieldWebhooks, Unused("Greenfield webhooks")),
        rates=rates,
        api_keys=list(api_keys),
    )


class StoreRows:
    """The stores and keys tables in memory (``core.stores.StoreRepository``); the
    default store's row is there unless ``stores`` is given, as in every database."""

    def __init__(
        self, stores: Sequence[Store] | None = None, keys: Sequence[StoreKey] = ()
    ) -> None:
        self.stores = [DEFAULT_STORE_ROW] if stores is None else list(stores)
        self.key_rows = list(keys)

    async def all(self) -> list[Store]:
        return list(self.stores)

    async def get(self, store_id: str) -> Store | None:
        return next((s for s in self.stores if s.id == store_id), None)

    async def insert(self, store: Store) -> Store:
        if await self.get(store.id) is not None:
            raise AlreadyExists(f"a store '{store.id}' exists")
        self.stores.append(store)
        return store

    async def update(self, store: Store) -> Store:
        self.stores = [store if s.id == store.id else s for s in self.stores]
        return store

    async def add_key(self, key: StoreKey) -> None:
        self.key_rows.append(key)

    async def keys(self, store_id: str) -> list[StoreKey]:
        return [k for k in self.key_rows if k.store_id == store_id]

    async def revoke_key(self, store_id: str, key_id: str) -> bool:
        for i, key in enumerate(self.key_rows):
            if key.store_id == store_id and key.id == key_id and not key.revoked:
                self.key_rows[i] = replace(key, revoked=True)
                return True
        return False

    async def active_keys(self) -> list[StoreKey]:
        return [key for key in self.key_rows if not key.revoked]


class NewAccounts:
    """The main wallet's accounts: each new store gets the next one."""

    def __init__(self) -> None:
        self.made = 0

    async def create_account(self, label: str) -> int:
        self.made += 1
        return self.made


def fake_stores(
    build: Callable[[Store], Gateway] | Gateway,
    rows: StoreRows | None = None,
    *,
    operator_keys: Sequence[ApiKey] = (),
    default_secret: bytes | None = None,
) -> StoreGateways:
    """The stores' registry over ``rows`` (none: the default store only), read once;
    ``build`` makes each store's Gateway (a Gateway: the default store's, the only one)."""
    if isinstance(build, Gateway):
        only = build
        build = lambda _store: only  # noqa: E731
    rows = rows or StoreRows()
    directory = StoreDirectory(
        cast(Any, rows), operator_keys=list(operator_keys), default_secret=default_secret
    )
    stores = StoreGateways(directory, build)
    asyncio.run(stores.load())
    return stores


def fake_app(
    settings: Settings,
    stores: StoreGateways | Gateway,
    *,
    rows: StoreRows | None = None,
    store_admin: StoreAdmin | None = None,
    public_gateway: Gateway | None = None,
) -> FastAPI:
    """The app over ``stores`` (a Gateway: the default store alone, with its keys)."""
    if isinstance(stores, Gateway):
        stores = fake_stores(stores, operator_keys=stores.api_keys)
    # The administration of the stores ``rows`` holds (the default store's alone).
    admin = store_admin or StoreAdmin(cast(Any, rows or StoreRows()), NewAccounts(), stores.changed)
    return create_app(settings, stores, admin, public_gateway=public_gateway)
