"""The identity guard of a store on its own wallet-rpc, on the real app with fake wallets.

The process is built as the gateway builds it (``Services.build``: the store's unit in
``runtime/store_units.py``, its ``WalletChecks`` over ``FixedIdentity``), with every
wallet-rpc client replaced by a ``FakeWallet`` chosen by URL. The supervisor's part is
played by hand: the main wallet is checked as at start, and the store's wallet is
checked as its sync loop does before each tick. When the store's wallet-rpc turns out to
hold another wallet, that store's wallet-path requests, payouts and ``/health`` are
refused (503 naming the store's wallet, nothing asked of the wallet), its history stays
readable, and the default store goes on as before.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.unit.fakes import FakeWallet, address_of
from testsupport.migrated import MigratedTemplates
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.config import Settings
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import verify_identity
from xmrgate.domain.stores import OwnWallet, Store, StoreKey
from xmrgate.runtime import main_wallet, store_units
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services

OPERATOR = "operator-key-0123456789"
STORE_KEY = "xgs_own-shop-key-0123456789abcdef"
MAIN_URL = "http://127.0.0.1:18082/json_rpc"
STORE_URL = "http://127.0.0.1:18090/json_rpc"
MAIN_WALLET = "4" + "M" * 94
STORE_WALLET = "4" + "S" * 94
ANOTHER_WALLET = "4" + "X" * 94
PAYEE = "4" + "P" * 94


@dataclass
class NamedWallet(FakeWallet):
    """A FakeWallet that names its wallet (``get_address``) and counts reopens, as the
    identity guard asks; its subaddress table reaches whatever is asked."""

    primary: str = MAIN_WALLET
    reopens: int = 0

    async def primary_address(self) -> str:
        return self.primary

    async def create_address(self, label: str = "") -> tuple[str, int]:
        # Two wallets never hand out one address (addresses are unique across stores).
        address, index = await super().create_address(label)
        return self.primary[:2] + address[2:], index

    async def has_subaddress(self, index: int) -> bool:
        return True

    async def account_address(self, account: int) -> str:
        return address_of(account)


@dataclass
class Gateway:
    client: TestClient
    services: Services
    main: NamedWallet
    store: NamedWallet


def _seed(url: str) -> None:
    """A store on its own wallet-rpc (recorded with STORE_WALLET) and a key of it."""

    async def main() -> None:
        db = Database(url)
        try:
            stores = SqlStores(db)
            own = OwnWallet(rpc_address=STORE_URL, primary_address=STORE_WALLET, wallet_no=0)
            await stores.insert(Store(id="own-shop", name="Own", account_index=0, own_wallet=own))
            await stores.add_key(
                StoreKey(
                    id="1" * 16,
                    store_id="own-shop",
                    digest=hashlib.sha256(STORE_KEY.encode()).digest(),
                    scopes=frozenset({"read", "receive", "transfer"}),
                )
            )
        finally:
            await db.dispose()

    asyncio.run(main())


@pytest.fixture
def gateway(
    tmp_path: Path, migrated_templates: MigratedTemplates, monkeypatch: pytest.MonkeyPatch
) -> Gateway:
    path = tmp_path / "guard.sqlite3"
    _seed(migrated_templates.sqlite_copy(path))
    main, store = NamedWallet(primary=MAIN_WALLET), NamedWallet(primary=STORE_WALLET)
    wallets = {MAIN_URL: main, STORE_URL: store}

    def client(url: str, **_options: object) -> NamedWallet:
        return wallets[url]

    # Every wallet-rpc client the process builds, the store's own included.
    monkeypatch.setattr(main_wallet, "WalletClient", client)
    monkeypatch.setattr(store_units, "WalletClient", client)
    # No pool: a request asks the wallet for its subaddress (the path the guard stops).
    settings = Settings(
        sqlite=str(path), api_keys=OPERATOR, rpc_address=MAIN_URL, address_pool_size=0
    )
    services = Services.build(settings)

    async def start() -> None:
        await services.stores.load()  # builds the store's unit on its own (fake) client
        # The main wallet checked as the supervisor's start does.
        identity = services.gateway.identity
        assert await verify_identity(main, services.main.identity_store, identity)
        await WalletMode(main, identity).detect()
        identity.ready.set()

    asyncio.run(start())
    return Gateway(TestClient(build_app(settings, services)), services, main, store)


def _tick_check(gateway: Gateway) -> bool:
    """What the store's sync loop runs before each tick (and its start-up until usable)."""
    own = gateway.services.store_units["own-shop"].own
    assert own is not None
    client: object = own.wallet
    assert client is gateway.store  # the unit talks to the store's wallet-rpc only
    usable = asyncio.run(own.checks.before_tick())
    if usable:
        own.identity.ready.set()
    return usable


def _as(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _payout() -> dict[str, object]:
    return {"destinations": [{"address": PAYEE, "amount": 1000}]}


def test_a_store_wallet_that_is_another_wallet_stops_that_store_only(gateway: Gateway) -> None:
    client, main, store = gateway.client, gateway.main, gateway.store
    # The right wallet: the store works on its own wallet-rpc.
    assert _tick_check(gateway)
    made = client.post("/receive", json={"amount": 5}, headers=_as(STORE_KEY))
    assert made.status_code == 200, made.text
    store_address = made.json()["address"]
    assert store_address.startswith("4S") and store.next_index == 2
    assert client.post("/transfer", json=_payout(), headers=_as(STORE_KEY)).status_code == 200
    assert len(store.sent) == 1 and main.sent == []

    # wallet-rpc restarted with another wallet: the next tick's check finds out.
    store.primary = ANOTHER_WALLET
    assert not _tick_check(gateway)

    for answer in (
        client.post("/receive", json={"amount": 5}, headers=_as(STORE_KEY)),
        client.post("/transfer", json=_payout(), headers=_as(STORE_KEY)),
    ):
        assert answer.status_code == 503, answer.text
        message = answer.json()["message"]
        assert STORE_WALLET in message and ANOTHER_WALLET in message
    assert store.next_index == 2 and len(store.sent) == 1  # nothing asked of the wallet
    payouts = client.get("/payouts", headers=_as(STORE_KEY)).json()["payouts"]
    assert len(payouts) == 1  # the refused payout was never journaled
    health = client.get("/health", headers=_as(STORE_KEY))
    assert health.status_code == 503 and STORE_WALLET in health.json()["message"]
    # Its history stays readable.
    listed = client.get("/receive", headers=_as(STORE_KEY)).json()["requests"]
    assert [r["address"] for r in listed] == [store_address]

    # The default store keeps working on the main wallet.
    made = client.post("/receive", json={"amount": 7}, headers=_as(OPERATOR))
    assert made.status_code == 200, made.text
    assert main.next_index == 2
    assert client.post("/transfer", json=_payout(), headers=_as(OPERATOR)).status_code == 200
    assert len(main.sent) == 1
    assert client.get("/health").status_code == 200
    # The operator naming the store is refused the same way (the guard is the store's).
    named = {**_as(OPERATOR), "X-Xmrgate-Store": "own-shop"}
    assert client.post("/receive", json={"amount": 5}, headers=named).status_code == 503

    # The right wallet back: the store resumes at its next tick.
    store.primary = STORE_WALLET
    assert _tick_check(gateway)
    assert client.post("/receive", json={"amount": 5}, headers=_as(STORE_KEY)).status_code == 200
    assert store.next_index == 3
