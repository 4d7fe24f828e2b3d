"""The address pool on the real wallet: no round trip, survives a dead wallet, 503 fast when empty.

And the lookahead: a wallet restored from its keys has a subaddress table that
starts at 0; the gateway extends it to every index it handed out, rescans, and finds
the payment to the highest one.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.integration.rpc_stall_proxy import StallingRpcProxy
from testsupport.gateway import SYNC_WAIT, Gateway, GatewayProcess
from xmrgate.devnet import Devnet, WalletRpc

pytestmark = pytest.mark.integration

GATEWAY_ARGS = ["--address-pool-size", "300", "--address-pool-low-water", "20"]
XMR = 10**12


def test_receive_answers_from_the_pool_while_the_wallet_is_down_then_503_fast(
    gateway: Gateway,
) -> None:
    # The gateway is ready (fixture): its pool was filled before /health said 200.
    gateway.wallet.kill()
    try:
        made = [gateway.post("/receive", json={"amount": 1}) for _ in range(5)]
        assert [r.status_code for r in made] == [200] * 5, [r.text for r in made]
        assert len({r.json()["address"] for r in made}) == 5
    finally:
        gateway.wallet.restart()
    gateway.wait_ready()


def test_pooled_gateway_with_empty_pool_and_stopped_wallet_answers_503_after_a_silence(
    devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> None:
    wallet = devnet.start_wallet_rpc(f"pool-hung-{os.getpid()}-{int(time.time())}")
    workdir = tmp_path_factory.mktemp("pool-hung")
    gw = GatewayProcess(
        workdir,
        wallet.url,
        str(workdir / "x.sqlite3"),
        ["--poll-frequency", "0.5s", "--address-pool-size", "3", "--address-pool-low-water", "0"],
    )
    try:
        gw.start()
        os.kill(wallet.pid, signal.SIGSTOP)
        try:
            taken = [gw.post("/receive", json={"amount": 1}).status_code for _ in range(3)]
            started = time.monotonic()
            r = gw.post("/receive", json={"amount": 1})
            elapsed = time.monotonic() - started
        finally:
            os.kill(wallet.pid, signal.SIGCONT)
        assert taken == [200, 200, 200]
        assert r.status_code == 503, r.text
        assert "has not answered for 3 s" in r.json()["message"] and "retry" in r.json()["message"]
        # A stopped wallet is told from a busy one by 3 s of silence (SILENCE),
        # within the 5 s budget; it was 0.75 s, which refused bursts on a busy wallet.
        assert 2.0 < elapsed < 5.0, f"an empty pool with a stopped wallet took {elapsed:.2f}s"
    finally:
        gw.close()
        wallet.stop()


def _requests_past_the_lookahead(gw: GatewayProcess, wallet: WalletRpc) -> tuple[str, int]:
    """260 requests; the address and index of the highest (past wallet2's lookahead)."""
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda _: gw.receive(XMR), range(260)))
    index_of = {
        m["address"]: wallet.call("get_address_index", {"address": m["address"]})["index"]["minor"]
        for m in made
    }
    highest = max(index_of, key=lambda a: index_of[a])
    assert index_of[highest] > 250
    return highest, index_of[highest]


def _restore_from_keys(devnet: Devnet, wallet: WalletRpc, name: str) -> WalletRpc:
    """A new wallet-rpc with ``wallet``'s wallet restored from its keys as 'wallet'
    (its subaddress table starts at 0 again, as after any restore)."""
    keys = {k: wallet.call("query_key", {"key_type": k})["key"] for k in ("spend_key", "view_key")}
    primary = wallet.call("get_address", {"account_index": 0, "address_index": [0]})["address"]
    restored = devnet.start_wallet_rpc(f"{name}-{os.getpid()}-{int(time.time())}")
    restored.call(
        "generate_from_keys",
        {
            "filename": "wallet",
            "address": primary,
            "spendkey": keys["spend_key"],
            "viewkey": keys["view_key"],
            "password": "",
            "restore_height": 0,
        },
    )
    return restored


def _wait_for_payment(gw: GatewayProcess, address: str, index: int) -> dict[str, Any]:
    body: dict[str, Any] = gw.wait_for(
        f"the payment to subaddress {index} to be seen",
        lambda: gw.get(f"/receive/{address}").json(),
        lambda body: body["amount"]["covered"]["total"] == XMR,
        timeout=SYNC_WAIT,
    )
    return body


def test_restored_wallet_sees_a_payment_to_an_index_past_the_lookahead(
    gateway: Gateway, devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> None:
    highest, index = _requests_past_the_lookahead(gateway, gateway.wallet)
    gateway.stop()
    restored = _restore_from_keys(devnet, gateway.wallet, "restored")
    again = GatewayProcess(
        tmp_path_factory.mktemp("restored"),
        restored.url,
        gateway.database,
        ["--poll-frequency", "0.5s", *GATEWAY_ARGS],
    )
    try:
        again.start()
        assert "extending it and rescanning" in again.log_tail(400)
        devnet.pay(highest, XMR, mine_blocks=1)
        status = _wait_for_payment(again, highest, index)
        assert status["transactions"][0]["amount"] == XMR
    finally:
        again.close()
        restored.stop()
        gateway.start()


def test_wallet_identity_checks_do_not_list_every_subaddress(
    devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The identity check before every tick and around every pool batch asks for the
    primary address only: ``get_address`` without ``address_index`` lists every
    subaddress, so its answer (parsed several times a second) grew with the pool and the
    shop's history (megabytes for a pool of 10,000)."""
    wallet = devnet.start_wallet_rpc(f"pool-size-{os.getpid()}-{int(time.time())}")
    proxy = StallingRpcProxy(wallet.url)
    workdir = tmp_path_factory.mktemp("pool-size")
    gw = GatewayProcess(
        workdir,
        proxy.url,
        str(workdir / "x.sqlite3"),
        ["--poll-frequency", "0.5s", "--address-pool-size", "300", "--address-pool-low-water", "0"],
    )
    try:
        gw.start()  # ready: the pool of 300 is filled, identity checked around each batch
        time.sleep(1.5)  # and a few sync ticks (0.5 s), each checking it again
        listed = wallet.call("get_address", {"account_index": 0})
        assert len(listed["addresses"]) > 300, "the wallet should hold the pool's subaddresses"
        every = len(json.dumps({"result": listed}))
        asked = proxy.largest_reply["get_address"]
        assert asked < 2_000, f"get_address answers of {asked} bytes (all of them: {every})"
    finally:
        gw.close()
        proxy.close()
        wallet.stop()


def test_wallet_restored_behind_the_gateways_back_is_extended_without_a_reopen(
    devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """wallet-rpc restarted with ``--wallet-file`` on a wallet restored from the same keys
    opens it by itself: the running gateway never gets 'no wallet open', so it sees no
    reopen (the same as another worker process reopening it). The lookahead check before
    every tick still finds the short table, extends it, and the payment to an index past
    the wallet's lookahead is seen. (A check only after this process's own reopens
    never ran here.)"""
    wallet = devnet.start_wallet_rpc(f"unseen-{os.getpid()}-{int(time.time())}")
    workdir = tmp_path_factory.mktemp("unseen")
    gw = GatewayProcess(
        workdir,
        wallet.url,
        str(workdir / "x.sqlite3"),
        ["--poll-frequency", "0.5s", *GATEWAY_ARGS],
    )
    restored = None
    try:
        gw.start()
        highest, index = _requests_past_the_lookahead(gw, wallet)
        primary = wallet.call("get_address", {"account_index": 0, "address_index": [0]})["address"]
        restored = _restore_from_keys(devnet, wallet, "unseen-restored")
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
        assert reopened["address"] == primary
        devnet.pay(highest, XMR, mine_blocks=1)
        _wait_for_payment(gw, highest, index)
        assert "extending it and rescanning" in gw.log_tail(400)
    finally:
        gw.close()
        wallet.stop()
        if restored is not None:
            restored.stop()
