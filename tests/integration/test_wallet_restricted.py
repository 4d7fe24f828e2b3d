"""A real monero-wallet-rpc started with --restricted-rpc: it opens wallets and hands out
subaddresses, but refuses refresh, get_transfers and store (-7). A gateway on it used to
answer /health 200 "full" and take orders whose payments it could never see. Now it says
why in /health (503, "wallet": "restricted"), hands out no subaddress (with or without the
address pool), and resumes once wallet-rpc runs without the flag: a payment is then seen.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from testsupport.gateway import SYNC_WAIT, GatewayProcess, count_rows
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

XMR = 10**12


@pytest.mark.parametrize(
    "pool_args",
    [["--address-pool-size", "0"], ["--address-pool-size", "20", "--address-pool-low-water", "5"]],
    ids=["no pool", "pool"],
)
def test_restricted_wallet_rpc_is_refused_until_it_runs_without_the_flag(
    devnet: Devnet, tmp_path: Path, pool_args: list[str]
) -> None:
    wallet = devnet.start_wallet_rpc(f"restricted-{os.getpid()}-{time.monotonic_ns()}")
    wallet.cmd.append("--restricted-rpc")
    wallet.restart()
    gw = GatewayProcess(
        tmp_path, wallet.url, str(tmp_path / "x.sqlite3"), ["--poll-frequency", "0.5s", *pool_args]
    )
    try:
        gw.start(wait=False)

        health = gw.wait_for(
            "health to name --restricted-rpc",
            gw.health,
            lambda body: "--restricted-rpc" in str(body.get("message", "")),
            timeout=60,
        )
        assert health["status"] == 503 and health["wallet"] == "restricted", health
        refused = gw.post("/receive", json={"amount": XMR})
        assert refused.status_code == 503, refused.text
        assert "--restricted-rpc" in refused.json()["message"]
        time.sleep(2)  # a few ticks and pool rounds: still nothing made or offered
        assert gw.get("/receive").json()["requests"] == []
        assert count_rows(gw, "address_pool") == 0

        wallet.cmd.remove("--restricted-rpc")
        wallet.restart()  # no wallet open now: the gateway reopens its own
        gw.wait_ready(timeout=60)
        assert gw.get("/health").json()["wallet"] == "full"
        address = gw.receive(XMR)["address"]
        devnet.pay(address, XMR, mine_blocks=1)
        status = gw.wait_status(
            address, lambda s: s["amount"]["covered"]["total"] == XMR, SYNC_WAIT
        )
        assert status["complete"] is False and len(status["transactions"]) == 1
    finally:
        gw.close()
        wallet.stop()
