"""The point of sale's API (``/pos/*``, scope ``pos``) on the real app over fakes.

``PosSite`` builds ``create_app`` over a registry of two stores besides the default one
(``shop-a``, ``shop-b``), each a ``Gateway`` of the real use cases on in-memory fakes
(``FakeWallet``, ``FakePaymentStore``) and one real ``RateBook`` fed by a fake source
(1 XMR = 150 EUR, 160 USD). Keys: an operator key (every scope), an operator key with
read+receive, and per store a till key (``pos`` alone) and a read+receive key.

- A till key makes and follows sales of its own store and does nothing else: not
  ``/receive``, ``/transfer``, ``/balance``, the list; another store's sale is 404.
- A key without ``pos`` (read, receive) cannot use ``/pos/*``.
- Bad amounts, notes and fields are 400; a fiat price is converted at the book's rate.
- The state: seen at zero confirmations (pool), ``complete`` once the total covers the
  sale, the confirmations of the least-confirmed transfer, what a partial payment leaves due.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.unit.fakes import (
    AllowAll,
    FakeOutbox,
    FakePaymentStore,
    FakeWallet,
)
from tests.unit.gateway_builder import StoreRows, fake_app, fake_gateway, fake_stores
from xmrgate.config import Settings
from xmrgate.core.gateway import Gateway
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.rates import RateBook
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.api_keys import parse_api_keys
from xmrgate.domain.ledger import Transfer, TransferState
from xmrgate.domain.records import PaymentStatus
from xmrgate.domain.stores import DEFAULT_STORE, Store, StoreKey, key_digest

XMR = 10**12
OPERATOR = "operator-key-0123456789"  # every scope, pos included
OP_READER = "operator-reader-0123456789"  # read+receive only
TILL_A = "xgs_till-a-key-0123456789abcdef"  # pos alone, shop-a
TILL_B = "xgs_till-b-key-0123456789abcdef"  # pos alone, shop-b
SHOP_A = "xgs_shop-a-key-0123456789abcdef"  # read+receive, shop-a
HEIGHT = 100
FOREIGN_URL = re.compile(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


@dataclass
class Payments(FakePaymentStore):
    """Requests and transfers in memory, at a chain height the test moves."""

    height: int = HEIGHT

    async def status(self, address: str) -> PaymentStatus | None:
        found = await super().status(address)
        return None if found is None else PaymentStatus(found.request, found.transfers, self.height)

    def pay(self, address: str, amount: int, height: int = 0) -> None:
        """A transfer to ``address``: in the pool (height 0) or mined at ``height``."""
        transfers = self.transfers.setdefault(address, [])
        transfers.append(
            Transfer(
                tx_hash=f"{len(transfers) + 1:02d}" + "cd" * 31,
                subaddr_index=self.requests[address].subaddr_index,
                amount=amount,
                fee=30_000_000,
                height=height,
                timestamp=int(time.time()),
                unlock_time=0,
                double_spend_seen=False,
                state=TransferState.CONFIRMED if height else TransferState.POOL,
            )
        )

    def mine(self, address: str, height: int) -> None:
        """Every pool transfer of ``address`` mined at ``height``."""
        self.transfers[address] = [
            t
            if t.state is not TransferState.POOL
            else Transfer(
                tx_hash=t.tx_hash,
                subaddr_index=t.subaddr_index,
                amount=t.amount,
                fee=t.fee,
                height=height,
                timestamp=t.timestamp,
                unlock_time=0,
                double_spend_seen=False,
                state=TransferState.CONFIRMED,
            )
            for t in self.transfers[address]
        ]


@dataclass
class AnyStore(Payments):
    """The checkout's view: a request found by its address in any store's fakes."""

    stores: dict[str, Payments] = field(default_factory=dict)

    async def status(self, address: str) -> PaymentStatus | None:
        for payments in self.stores.values():
            found = await payments.status(address)
            if found is not None:
                return found
        return None


class FixedSource:
    """A rate source that always answers the same prices."""

    name = "fixed"
    prices = {"EUR": Decimal("150"), "USD": Decimal("160")}

    async def fetch(self, currency: str) -> Decimal:
        return self.prices[currency]


def _key(number: int, store: str, token: str, scopes: set[str]) -> StoreKey:
    return StoreKey(
        id=f"{number:016x}", store_id=store, digest=key_digest(token), scopes=frozenset(scopes)
    )


class PosSite:
    """The app over fakes: the default store and shop-a, shop-b, each on its own fakes."""

    def __init__(self) -> None:
        self.book = RateBook(
            [FixedSource()],
            ["EUR", "USD"],
            refresh=60,
            max_age=600,
            max_spread=0.05,
            min_sources=1,
        )
        asyncio.run(self.book.refresh_once())
        self.payments: dict[str, Payments] = {}
        self.wallets: dict[str, FakeWallet] = {}
        operator_keys = parse_api_keys(f"{OPERATOR} {OP_READER}:read+receive")
        self.identity = WalletIdentity()
        self.default = self._gateway(DEFAULT_STORE, 1, operator_keys)
        rows = StoreRows(
            stores=[
                Store(id="shop-a", name="Café Alpha", account_index=1, accent="#0f766e"),
                Store(id="shop-b", name="Shop B", account_index=2),
            ],
            keys=[
                _key(1, "shop-a", TILL_A, {"pos"}),
                _key(2, "shop-b", TILL_B, {"pos"}),
                _key(3, "shop-a", SHOP_A, {"read", "receive"}),
            ],
        )
        self.rows = rows  # a test changes a store's settings, then reloads the registry
        starts = {"shop-a": 1000, "shop-b": 2000}
        self.stores = fake_stores(
            lambda store: (
                self.default
                if store.id == DEFAULT_STORE
                else self._gateway(store.id, starts[store.id], operator_keys)
            ),
            rows,
            operator_keys=operator_keys,
        )
        # The checkout's pages (the QR code) find a request in any store.
        public = self._gateway(DEFAULT_STORE, 9000, operator_keys, AnyStore(stores=self.payments))
        self.app: FastAPI = fake_app(Settings(), self.stores, rows=rows, public_gateway=public)

    def _gateway(
        self, store_id: str, first_index: int, keys: Any, public: Payments | None = None
    ) -> Gateway:
        wallet = FakeWallet(next_index=first_index)
        payments = public or Payments()
        if public is None:
            self.wallets[store_id] = wallet
            self.payments[store_id] = payments

        return fake_gateway(
            store_id,
            wallet=wallet,
            payment_requests=PaymentRequests(
                wallet, payments, FakeOutbox(), AllowAll(), pricing=self.book, rate_lock=900
            ),
            identity=self.identity,
            api_keys=keys,
            rates=self.book,
        )

    def store_of(self, address: str) -> str:
        return next(s for s, p in self.payments.items() if address in p.requests)


def auth(key: str, store: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {key}"}
    if store is not None:
        headers["X-Xmrgate-Store"] = store
    return headers


@pytest.fixture
def site() -> PosSite:
    return PosSite()


@pytest.fixture
def client(site: PosSite) -> TestClient:
    return TestClient(site.app)


def sale(client: TestClient, key: str, **body: Any) -> dict[str, Any]:
    answer = client.post("/pos/sales", json=body, headers=auth(key))
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def state(client: TestClient, key: str, address: str) -> dict[str, Any]:
    answer = client.get(f"/pos/sales/{address}", headers=auth(key))
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def refused(answer: Any, status: int) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == status and body["message"]


# ------------------------------------------------------------------ making a sale


def test_a_till_makes_a_sale_of_its_store_that_expires_in_15_minutes(
    site: PosSite, client: TestClient
) -> None:
    before = time.time()
    made = sale(client, TILL_A, amount=XMR // 4, note="2 coffees")
    assert set(made) == {"address", "amount", "amount_xmr", "note", "uri", "expires_at"}
    assert (made["amount"], made["amount_xmr"], made["note"]) == (XMR // 4, "0.25", "2 coffees")
    assert made["uri"] == f"monero:{made['address']}?tx_amount=0.25&tx_description=2%20coffees"
    assert site.store_of(made["address"]) == "shop-a"
    request = site.payments["shop-a"].requests[made["address"]]
    assert request.description == "2 coffees" and request.callback_url is None
    assert request.expires_at is not None
    assert before + 899 <= request.expires_at.timestamp() <= time.time() + 901

    body = state(client, TILL_A, made["address"])
    assert body["state"] == "waiting" and body["status"] == "waiting"
    assert (body["received"], body["due"], body["due_xmr"]) == (0, XMR // 4, "0.25")
    assert (body["seen"], body["complete"], body["confirmations"]) == (False, False, 0)
    assert 890 <= body["seconds_left"] <= 900
    assert body["uri"] == made["uri"]


def test_an_idempotency_key_makes_one_sale(site: PosSite, client: TestClient) -> None:
    headers = {**auth(TILL_B), "Idempotency-Key": "charge-1"}
    first = client.post("/pos/sales", json={"amount": 5}, headers=headers)
    again = client.post("/pos/sales", json={"amount": 5}, headers=headers)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert len(site.payments["shop-b"].requests) == 1


def test_a_fiat_price_is_converted_and_expires_with_its_rate_lock(
    site: PosSite, client: TestClient
) -> None:
    made = sale(client, TILL_A, price={"amount": "7.50", "currency": "eur"})
    assert made["amount"] == XMR // 20  # 7.50 EUR at 150 EUR/XMR
    assert made["price"]["amount"] == "7.50" and made["price"]["currency"] == "EUR"
    assert made["price"]["rate"] == "150"
    body = state(client, TILL_A, made["address"])
    assert body["price"]["currency"] == "EUR" and body["amount_xmr"] == "0.05"
    config = client.get("/pos/config", headers=auth(TILL_A)).json()
    assert config == {
        "store": "shop-a",
        "name": "Café Alpha",
        "accent": "#0f766e",
        "currencies": ["EUR", "USD"],
        "confirmations": 1,  # the store's pos_confirmations (its default)
    }
    refused(
        client.post(
            "/pos/sales", json={"price": {"amount": "1", "currency": "GBP"}}, headers=auth(TILL_A)
        ),
        400,
    )


def test_a_fiat_sale_lives_no_longer_than_a_shorter_rate_lock(site: PosSite) -> None:
    site.app.state.rate_lock = 300
    made = sale(TestClient(site.app), TILL_A, price={"amount": "3", "currency": "USD"})
    request = site.payments["shop-a"].requests[made["address"]]
    assert request.expires_at is not None
    assert request.expires_at.timestamp() <= time.time() + 301


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"amount": 0},
        {"amount": -1},
        {"amount": 1.5},
        {"amount": "100"},
        {"amount": 2**64},
        {"amount": True},
        {"amount": 5, "price": {"amount": "1", "currency": "EUR"}},
        {"price": {"amount": "0", "currency": "EUR"}},
        {"price": {"amount": "-1", "currency": "EUR"}},
        {"price": {"amount": "1.234", "currency": "EUR"}},
        {"price": {"amount": 12, "currency": "EUR"}},
        {"amount": 5, "note": "x" * 201},
        {"amount": 5, "note": "nul\x00"},
        {"amount": 5, "note": 7},
        {"amount": 5, "callback_url": "https://shop.example/cb"},
        {"amount": 5, "expires_in": 60},
    ],
)
def test_bad_sales_are_400(site: PosSite, client: TestClient, body: dict[str, Any]) -> None:
    refused(client.post("/pos/sales", json=body, headers=auth(TILL_A)), 400)
    assert not site.payments["shop-a"].requests


def test_a_note_of_200_characters_is_taken(client: TestClient) -> None:
    assert sale(client, TILL_A, amount=5, note="é" * 200)["note"] == "é" * 200


# ------------------------------------------------------------------ what a till key may do


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/receive", {"amount": 5}),
        ("GET", "/receive", None),
        ("POST", "/transfer", {"destinations": [{"amount": 1, "address": "4A"}]}),
        ("GET", "/balance", None),
        ("GET", "/rates", None),
        ("GET", "/store", None),
        ("GET", "/status", None),
        ("GET", "/stores", None),
        ("GET", "/refunds", None),
        ("GET", "/links", None),
        ("GET", "/payouts", None),
        ("GET", "/openapi.json", None),
    ],
)
def test_a_till_key_may_do_nothing_else(
    site: PosSite, client: TestClient, method: str, path: str, body: Any
) -> None:
    for key in (TILL_A, TILL_B):
        refused(client.request(method, path, json=body, headers=auth(key)), 403)
    assert all(not p.requests for p in site.payments.values())
    assert all(not w.sent for w in site.wallets.values())


def test_a_till_reads_only_its_own_stores_sales(site: PosSite, client: TestClient) -> None:
    mine = sale(client, TILL_A, amount=5)["address"]
    theirs = sale(client, TILL_B, amount=6)["address"]
    made_by_api = client.post("/receive", json={"amount": 7}, headers=auth(OPERATOR)).json()
    for address in (theirs, made_by_api["address"], "8" + "Z" * 94, "not-an-address"):
        refused(client.get(f"/pos/sales/{address}", headers=auth(TILL_A)), 404)
    assert state(client, TILL_A, mine)["amount"] == 5
    assert state(client, TILL_B, theirs)["amount"] == 6
    # Nor by naming the other store: a store key acts on its own store only.
    refused(client.get(f"/pos/sales/{theirs}", headers=auth(TILL_A, "shop-b")), 403)
    refused(client.post("/pos/sales", json={"amount": 5}, headers=auth(TILL_A, "shop-b")), 403)
    # The read endpoints of the request stay closed to the till, its own sale too.
    refused(client.get(f"/receive/{mine}", headers=auth(TILL_A)), 403)
    refused(client.get(f"/receive/{mine}/callbacks", headers=auth(TILL_A)), 403)
    refused(client.delete(f"/receive/{mine}", headers=auth(TILL_A)), 403)


def test_keys_without_pos_cannot_use_the_point_of_sale(site: PosSite, client: TestClient) -> None:
    mine = sale(client, TILL_A, amount=5)["address"]
    for key in (SHOP_A, OP_READER):
        refused(client.post("/pos/sales", json={"amount": 5}, headers=auth(key)), 403)
        refused(client.get(f"/pos/sales/{mine}", headers=auth(key, None)), 403)
        refused(client.get("/pos/config", headers=auth(key)), 403)
    refused(client.post("/pos/sales", json={"amount": 5}), 401)
    refused(client.get("/pos/config"), 401)
    refused(
        client.post("/pos/sales", json={"amount": 5}, headers=auth("xgs_unknown-key-abcdef")), 401
    )
    assert len(site.payments["shop-a"].requests) == 1


def test_an_operator_key_without_scopes_has_pos(site: PosSite, client: TestClient) -> None:
    made = sale(client, OPERATOR, amount=9)
    assert site.store_of(made["address"]) == DEFAULT_STORE
    assert client.get("/pos/config", headers=auth(OPERATOR)).json()["store"] == DEFAULT_STORE
    other = client.post("/pos/sales", json={"amount": 9}, headers=auth(OPERATOR, "shop-b"))
    assert site.store_of(other.json()["address"]) == "shop-b"


def test_the_shell_is_public_and_strict(client: TestClient) -> None:
    page = client.get("/pos")
    assert page.status_code == 200
    assert "x-moneropay-address" not in page.headers
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "img-src 'self' data:" in csp
    assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert "<script>" not in page.text and " style=" not in page.text
    for name in ("pos.js", "pos.css", "format.js"):
        found = client.get(f"/pos/static/{name}")
        assert found.status_code == 200 and found.headers["etag"], name
        again = client.get(f"/pos/static/{name}", headers={"If-None-Match": found.headers["etag"]})
        assert again.status_code == 304
    admin_format = client.get("/admin/static/format.js").content
    assert client.get("/pos/static/format.js").content == admin_format
    for path in ("/pos/static/admin.js", "/pos/", "/pos/static/nope.js", "/posx"):
        refused(client.get(path), 401)  # not a shell path: a key is required
    # The shell's files name no other host.
    for name in ("pos.js", "pos.css"):
        assert not FOREIGN_URL.search(client.get(f"/pos/static/{name}").text), name
    assert not FOREIGN_URL.search(page.text)
    refused(client.get("/pos/sales"), 401)


def test_the_screen_goes_with_the_dashboard_and_the_checkout(site: PosSite) -> None:
    for settings in (Settings(admin=False), Settings(checkout=False)):
        app = fake_app(settings, site.stores)
        client = TestClient(app)
        assert client.get("/pos", headers=auth(OPERATOR)).status_code == 404
        assert (
            client.post("/pos/sales", json={"amount": 1}, headers=auth(TILL_A)).status_code == 200
        )


# ------------------------------------------------------------------ the state of a sale


def test_seen_in_the_pool_then_confirmed(site: PosSite, client: TestClient) -> None:
    address = sale(client, TILL_A, amount=XMR)["address"]
    payments = site.payments["shop-a"]
    payments.pay(address, XMR)  # in the pool: seen at zero confirmations, complete
    body = state(client, TILL_A, address)
    assert (body["seen"], body["complete"], body["confirmations"]) == (True, True, 0)
    assert (body["received"], body["due"], body["state"]) == (XMR, 0, "seen")
    payments.mine(address, HEIGHT)
    payments.height = HEIGHT + 1
    body = state(client, TILL_A, address)
    assert (body["complete"], body["confirmations"], body["status"]) == (True, 1, "paid")
    payments.height = HEIGHT + 3
    assert state(client, TILL_A, address)["confirmations"] == 3


def test_a_partial_payment_leaves_the_rest_due(site: PosSite, client: TestClient) -> None:
    address = sale(client, TILL_A, amount=XMR)["address"]
    payments = site.payments["shop-a"]
    payments.pay(address, XMR // 4, height=HEIGHT - 5)
    body = state(client, TILL_A, address)
    assert (body["seen"], body["complete"], body["status"]) == (True, False, "partial")
    assert (body["received_xmr"], body["due"], body["due_xmr"]) == ("0.25", 3 * XMR // 4, "0.75")
    assert body["uri"] == f"monero:{address}?tx_amount=0.75"  # the QR code asks for the rest
    assert body["confirmations"] == 5
    payments.pay(address, 3 * XMR // 4)  # the rest, in the pool: the least-confirmed counts
    body = state(client, TILL_A, address)
    assert (body["complete"], body["due"], body["confirmations"]) == (True, 0, 0)
