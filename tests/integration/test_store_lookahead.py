"""A wallet restored from keys: every store's account is reached again.

wallet-rpc looks ahead 50 accounts and 200 subaddresses in each. A wallet restored
from the main wallet's keys holds account 0 alone: a payment to a store on account 52,
or to a subaddress past 200 of the store on account 1, stays unseen until the gateway
creates those accounts and subaddresses again and rescans (``core/account_lookahead.py``,
called before every sync tick from ``core/wallet_checks.py``).

POST /stores took 0.4-0.9 s each in runs here, nearly all of it wallet-rpc's
``create_account``: the 52 stores are most of the test's time.

One gateway on SQLite, on a wallet-rpc of its own. The wallet is replaced behind the
gateway's back, as in ``test_address_pool.py``: wallet-rpc restarted with
``--wallet-file`` on a wallet restored from the same keys opens it by itself, so the
gateway sees no reopen and only its check of the number of accounts before every tick
can find what is missing.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

import pytest

from tests.integration.test_address_pool import XMR, _restore_from_keys
from testsupport.gateway import SYNC_WAIT, GatewayProcess
from xmrgate.devnet import Devnet, WalletRpc

pytestmark = pytest.mark.integration

OPERATOR_KEY = "operator-key-0123456789abcdef"
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}
# Past the 50 accounts wallet-rpc looks ahead (the restored wallet holds account 0 only).
FAR_ACCOUNT = 52
# Past the 200 subaddresses wallet-rpc looks ahead in each account.
FAR_INDEX = 200
GATEWAY_ARGS = [
    "--poll-frequency",
    "1s",
    "--api-key",
    OPERATOR_KEY,
    # Every store fills its pool when created: a small one keeps 52 of them cheap.
    "--address-pool-size",
    "2",
    "--address-pool-low-water",
    "1",
]


def _new_store(gw: GatewayProcess, store_id: str) -> int:
    """POST /stores on a new account of the main wallet; its account index."""
    r = gw.post("/stores", json={"id": store_id, "wallet": {"account": "new"}}, headers=OPERATOR)
    assert r.status_code == 200, r.text
    return int(r.json()["wallet"]["account"])


def _store_key(gw: GatewayProcess, store_id: str) -> dict[str, str]:
    """Headers of a new key of ``store_id`` (read and receive)."""
    r = gw.post(f"/stores/{store_id}/keys", json={"scopes": ["read", "receive"]}, headers=OPERATOR)
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['key']}"}


def _request(gw: GatewayProcess, wallet: WalletRpc, auth: dict[str, str]) -> tuple[str, int, int]:
    """POST /receive with a store's key: the address and its (account, index)."""
    r = gw.post("/receive", json={"amount": XMR}, headers=auth)
    assert r.status_code == 200, r.text
    address: str = r.json()["address"]
    index = wallet.call("get_address_index", {"address": address})["index"]
    return address, int(index["major"]), int(index["minor"])


def _covered(
    gw: GatewayProcess, address: str, auth: dict[str, str], timeout: float
) -> dict[str, Any]:
    """Wait until GET /receive/{address} with the store's key shows the payment covered."""

    def fetch() -> dict[str, Any]:
        r = gw.get(f"/receive/{address}", headers=auth)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    return gw.wait_for(
        f"the payment to {address[:12]}... to be seen",
        fetch,
        lambda body: body["amount"]["covered"]["total"] == XMR,
        timeout=timeout,
    )


def test_restored_wallet_reaches_every_stores_account_and_subaddress(
    devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> None:
    wallet = devnet.start_wallet_rpc(f"store-lookahead-{os.getpid()}-{int(time.time())}")
    workdir = tmp_path_factory.mktemp("store-lookahead")
    gw = GatewayProcess(workdir, wallet.url, str(workdir / "x.sqlite3"), GATEWAY_ARGS)
    restored = None
    try:
        gw.start()
        # An early store whose subaddresses go past the 200 looked ahead: the wallet's
        # counter of account 1 is moved on (as another user of the wallet would), so the
        # store's pool refills past it.
        assert _new_store(gw, "early") == 1
        early_auth = _store_key(gw, "early")
        for _ in range(4):
            wallet.call("create_address", {"account_index": 1, "count": 64})
        for _ in range(4):
            early, major, early_index = _request(gw, wallet, early_auth)
            if early_index > FAR_INDEX:
                break
        assert major == 1 and early_index > FAR_INDEX, (major, early_index)

        account = 1
        started = time.monotonic()
        while account < FAR_ACCOUNT:
            account = _new_store(gw, f"s{account + 1}")
        # The restored wallet creates the same accounts again before its rescan.
        creating = time.monotonic() - started
        far_id = f"s{account}"
        far_auth = _store_key(gw, far_id)
        far, major, _ = _request(gw, wallet, far_auth)
        assert major == account == FAR_ACCOUNT

        # The same keys restored in another wallet-rpc: account 0 alone.
        primary = wallet.call("get_address", {"account_index": 0, "address_index": [0]})
        restored = _restore_from_keys(devnet, wallet, "store-lookahead-restored")
        assert len(restored.call("get_accounts")["subaddress_accounts"]) == 1
        restored.stop()  # writes the restored files
        wallet.stop()
        for path in restored.wallet_dir.glob("wallet*"):
            shutil.copyfile(path, wallet.wallet_dir / path.name)
        at = wallet.cmd.index("--wallet-dir")
        wallet.cmd[at : at + 2] = [
            "--wallet-file",
            str(wallet.wallet_dir / "wallet"),
            "--password",
            "",
        ]
        wallet.restart()  # with the restored wallet open, by wallet-rpc itself
        reopened = wallet.call("get_address", {"account_index": 0, "address_index": [0]})
        assert reopened["address"] == primary["address"]

        devnet.pay_many([(far, XMR), (early, XMR)], mine_blocks=1)
        # Liveness: the accounts created again (it took the stores' time at most in runs
        # here, 2-5 s), then the rescan of the short regtest chain and a tick in SYNC_WAIT.
        _covered(gw, far, far_auth, SYNC_WAIT + creating)
        _covered(gw, early, early_auth, SYNC_WAIT)
        accounts = wallet.call("get_accounts")["subaddress_accounts"]
        assert len(accounts) >= FAR_ACCOUNT + 1
        log = gw.log_tail(2000)
        assert f"but a store uses account {FAR_ACCOUNT} (restored wallet?)" in log
        assert "store accounts did not reach the highest index handed out (accounts 1" in log
    finally:
        gw.close()
        wallet.stop()
        if restored is not None:
            restored.stop()
