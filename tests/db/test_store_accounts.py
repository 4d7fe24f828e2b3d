"""``SqlStoreAccounts`` on SQLite and PostgreSQL: what the lookahead after a restore reads.

The regtest test (``tests/integration/test_store_lookahead.py``: a payment to account 52
and one past index 200 of account 1 seen after a restore from keys) runs on SQLite
only, for the suite's time; the lookahead's whole view of the database is these two
reads, so they are shown here on both databases.
"""

from __future__ import annotations

from typing import Any

from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.stores_accounts import SqlStoreAccounts
from xmrgate.domain.stores import OwnWallet, Store


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
        await SqlStores(db).insert(
            Store(
                id="apart",
                name="Apart",
                account_index=0,  # account 0 of its own wallet
                own_wallet=OwnWallet(
                    rpc_address="http://127.0.0.1:1/json_rpc",
                    primary_address="4" + "A" * 94,
                    wallet_no=2,
                ),
            )
        )
        return await SqlStoreAccounts(db).accounts()

    assert on_database(scenario) == [0]
