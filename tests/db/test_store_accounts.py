"""``SqlStoreAccounts`` on SQLite and PostgreSQL: what the lookahead after a restore reads.

The regtest test (``tests/integration/test_store_lookahead.py``: a payment to account 52
and one past index 200 of account 1 seen after a restore from keys) runs on SQLite
only, for the suite's time; the lookahead's whole view of the database is these two
reads, so they are shown here on both databases.
"""

from __future__ import annotations

from typing import Any

from tests.unit.fakes import FakeIdentityStore
from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.stores_accounts import SqlStoreAccounts
from xmrgate.core.wallet_checks import WalletChecks
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.stores import OwnWallet, Store

# A store on a wallet-rpc of its own (account 0 of its own wallet).
OWN_WALLET_STORE = Store(
    id="apart",
    name="Apart",
    account_index=0,
    own_wallet=OwnWallet(
        rpc_address="http://127.0.0.1:1/json_rpc", primary_address="4" + "A" * 94, wallet_no=2
    ),
)


async def _request(db: Database, store: str, index: int) -> None:
    await PaymentStore(db, store).create(
        address=f"{store}-{index}",
        subaddr_index=index,
        amount=1,
        description="",
        callback_url=None,
        return_url=None,
    )


def test_every_accounts_highest_index_in_requests_or_pool(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[list[int], dict[int, int]]:
        stores = SqlStores(db)
        await stores.insert(Store(id="cafe", name="Cafe", account_index=1))
        await stores.insert(Store(id="far", name="Far", account_index=52))
        await stores.insert(Store(id="idle", name="Idle", account_index=7))
        await _request(db, "default", 3)
        await _request(db, "cafe", 5)
        await _request(db, "cafe", 217)  # past wallet-rpc's lookahead of 200 subaddresses
        await _request(db, "far", 2)
        # A pooled subaddress was handed out by the wallet too: it counts.
        await SqlAddressPool(db, "far").add([("far-pooled-60", 60)])
        accounts = SqlStoreAccounts(db)
        return await accounts.accounts(), await accounts.highest_by_account()

    listed, highest = on_database(scenario)
    assert listed == [0, 1, 7, 52]
    assert highest == {0: 3, 1: 217, 7: 0, 52: 60}


def test_an_own_wallet_store_is_not_an_account_of_the_main_wallet(on_database: Any) -> None:
    async def scenario(db: Database) -> list[int]:
        await SqlStores(db).insert(OWN_WALLET_STORE)
        return await SqlStoreAccounts(db).accounts()

    assert on_database(scenario) == [0]


class AccountsTables:
    """A main wallet as the lookahead checks see it: one subaddress table per account."""

    def __init__(self, tables: list[int]) -> None:
        self.tables = tables
        self.reopens = 0
        self.rescans = 0

    async def primary_address(self) -> str:
        return "4Primary"

    async def account_count(self) -> int:
        return len(self.tables)

    async def create_account(self, label: str = "") -> int:
        self.tables.append(200)
        return len(self.tables) - 1

    async def has_subaddress(self, index: int, *, account: int = 0) -> bool:
        return index < self.tables[account]

    async def create_addresses(self, count: int, *, account: int = 0) -> list[tuple[str, int]]:
        first = self.tables[account]
        self.tables[account] += count
        return [(f"8addr{account}-{i}", i) for i in range(first, first + count)]

    async def label_address(self, index: int, label: str) -> None:
        return None

    async def save(self) -> None:
        return None

    async def rescan(self) -> None:
        self.rescans += 1


def test_the_full_check_past_its_interval_with_every_kind_of_store(on_database: Any) -> None:
    """Regression: the full lookahead check read the account of every store, an
    own-wallet store's NULL among them, and ``int(None)`` failed every tick of the main
    wallet from the first full check after start on (payments never credited). With the
    default store, a store on account 1 and one on its own wallet, ticks past several
    intervals all run, and account 1's table is extended to the index handed out."""

    async def scenario(db: Database) -> tuple[list[bool], int, int]:
        stores = SqlStores(db)
        await stores.insert(Store(id="cafe", name="Cafe", account_index=1))
        await stores.insert(OWN_WALLET_STORE)
        await _request(db, "default", 3)
        await _request(db, "apart", 9)
        wallet = AccountsTables([200, 200])
        now = [0.0]
        rewinds: list[int] = []

        async def rewind() -> None:
            rewinds.append(1)

        checks = WalletChecks(
            wallet,
            FakeIdentityStore("4Primary"),
            WalletIdentity(),
            SqlAddressPool(db),
            rewind,
            accounts=SqlStoreAccounts(db),
            accounts_wallet=wallet,
            clock=lambda: now[0],
            full_every=2.0,
        )
        ran = []
        for step in range(6):
            if step == 3:
                # Handed out past account 1's table after start: the next full check sees it.
                await _request(db, "cafe", 230)
            ran.append(await checks.before_tick())
            now[0] += 1.5
        return ran, wallet.tables[1], wallet.rescans

    ran, account_one, rescans = on_database(scenario)
    assert ran == [True] * 6
    assert account_one == 231
    assert rescans == 1
