"""The regtest devnet itself: start, pay, reorg, restart, stop."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from xmrgate.devnet import Devnet, DevnetError, WalletRpc, free_port

pytestmark = pytest.mark.integration


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@pytest.fixture(scope="module")
def devnet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Devnet]:
    net = Devnet(tmp_path_factory.mktemp("devnet"))
    net.start()
    try:
        yield net
    finally:
        net.stop()


@pytest.fixture(scope="module")
def merchant(devnet: Devnet) -> tuple[WalletRpc, str]:
    rpc = devnet.start_wallet_rpc("merchant")
    rpc.call("create_wallet", {"filename": "merchant", "language": "English"})  # also opens it
    address = rpc.call("get_address", {"account_index": 0})["address"]
    return rpc, address


def test_free_port() -> None:
    port = free_port()
    assert 1024 < port < 65536


def test_started(devnet: Devnet) -> None:
    assert devnet.height() >= 80
    assert devnet.daemon_url == f"http://127.0.0.1:{devnet.daemon_rpc_port}"
    assert devnet.funder_address.startswith("4")
    balance = devnet.funder.call("get_balance", {"account_index": 0})
    assert balance["unlocked_balance"] > 10**13


def test_pay_and_reorg(devnet: Devnet, merchant: tuple[WalletRpc, str]) -> None:
    rpc, address = merchant
    amount = 10**12
    start = devnet.height()
    txid = devnet.pay(address, amount, mine_blocks=1)
    assert len(txid) == 64
    assert devnet.height() == start + 1
    assert txid not in devnet.pool_hashes()

    rpc.call("refresh")
    transfers = rpc.call("get_transfers", {"in": True, "pool": True})
    incoming = [t for t in transfers.get("in", []) if t["txid"] == txid]
    assert len(incoming) == 1
    assert incoming[0]["amount"] == amount
    assert incoming[0]["height"] == start  # index of the block that confirmed it

    # Reorg: the confirming block goes away, its tx is flushed, the chain grows past it.
    devnet.pop_blocks(1)
    assert txid in devnet.pool_hashes()
    devnet.flush_txpool()
    assert devnet.pool_hashes() == []
    devnet.mine(2)
    assert devnet.height() == start + 2
    rpc.call("refresh")
    with pytest.raises(DevnetError, match="Transaction not found") as info:
        rpc.call("get_transfer_by_txid", {"txid": txid})
    assert info.value.code == -8


def test_pay_unconfirmed_and_pay_many(devnet: Devnet, merchant: tuple[WalletRpc, str]) -> None:
    rpc, address = merchant
    sub = rpc.call("create_address", {"account_index": 0})["address"]
    txid = devnet.pay(address, 10**9)
    assert txid in devnet.pool_hashes()
    txid2 = devnet.pay_many([(address, 2 * 10**9), (sub, 3 * 10**9)], mine_blocks=1)
    assert devnet.pool_hashes() == []
    rpc.call("refresh")
    got = rpc.call("get_transfer_by_txid", {"txid": txid2})["transfers"]
    assert sorted(t["amount"] for t in got) == [2 * 10**9, 3 * 10**9]
    assert rpc.call("get_transfer_by_txid", {"txid": txid})["transfer"]["amount"] == 10**9


def test_pay_after_funder_runs_dry(devnet: Devnet, merchant: tuple[WalletRpc, str]) -> None:
    """pay() mines more blocks by itself when the funder has no unlocked outputs left."""
    _, address = merchant
    funder = devnet.funder
    funder.call("refresh")
    outs = funder.call("incoming_transfers", {"transfer_type": "available"})["transfers"]
    frozen = [o["key_image"] for o in outs if o["unlocked"]]
    for key_image in frozen:  # make every spendable output unusable for now
        funder.call("freeze", {"key_image": key_image})
    try:
        assert funder.call("get_balance")["unlocked_balance"] == 0
        before = devnet.height()
        txid = devnet.pay(address, 5 * 10**12, mine_blocks=1)
        assert len(txid) == 64
        assert devnet.height() > before + 1  # it had to mine before paying
        assert devnet.pool_hashes() == []
    finally:
        for key_image in frozen:
            funder.call("thaw", {"key_image": key_image})


def test_consecutive_payments(devnet: Devnet, merchant: tuple[WalletRpc, str]) -> None:
    _, address = merchant
    hashes = [devnet.pay(address, 10**9 * (i + 1)) for i in range(8)]
    assert len(set(hashes)) == 8
    assert set(hashes) <= set(devnet.pool_hashes())
    devnet.mine(1)
    assert devnet.pool_hashes() == []


def _preloads_the_quick_key(wallet: WalletRpc) -> bool:
    """Whether the process mapped ``quick_rsa.c``'s library (``quick_certificate.py``)."""
    return "/quick_rsa-" in Path(f"/proc/{wallet.pid}/maps").read_text()


def test_wallet_rpcs_get_the_quick_key_and_monerod_does_not(
    devnet: Devnet, merchant: tuple[WalletRpc, str]
) -> None:
    """Every wallet-rpc of the network runs with the quick certificate key (its wallets
    were created and opened with it: the funder's and the merchant's); monerod never
    loads it."""
    assert devnet.wallets and all(_preloads_the_quick_key(w) for w in devnet.wallets)
    assert devnet.daemon_pid is not None
    assert "/quick_rsa-" not in Path(f"/proc/{devnet.daemon_pid}/maps").read_text()


def test_wallet_rpc_kill_and_restart(devnet: Devnet) -> None:
    rpc = devnet.start_wallet_rpc("restartable")
    old_pid, port = rpc.pid, rpc.port
    rpc.kill()
    assert _pid_gone(old_pid)
    with pytest.raises(DevnetError):
        rpc.call("get_version", timeout=2)
    rpc.restart()
    assert rpc.port == port and rpc.pid != old_pid
    assert _preloads_the_quick_key(rpc)  # restarted with the environment it started with
    with pytest.raises(DevnetError) as info:
        rpc.call("store")  # no wallet open after a restart
    assert info.value.code == -13
    rpc.stop()
    rpc.stop()  # idempotent
    assert _pid_gone(rpc.pid)


def test_state_file_attach(devnet: Devnet, merchant: tuple[WalletRpc, str], tmp_path: Path) -> None:
    _, address = merchant
    state = tmp_path / "devnet.json"
    devnet.write_state(state)
    other = Devnet.attach(state)
    assert other.funder_address == devnet.funder_address
    before = other.height()
    assert other.mine(1) == before + 1
    txid = other.pay(address, 10**9, mine_blocks=1)
    assert len(txid) == 64
    other.stop()  # must not end processes it did not start
    assert devnet.height() == before + 2
    devnet.funder.call("get_version")


def test_failed_start_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wallet-rpc that cannot start: monerod (already running) is ended too."""
    import xmrgate.devnet.network as network_module

    monkeypatch.setattr(network_module, "WALLET_RPC", "false")
    net = Devnet(tmp_path / "broken")
    with pytest.raises(DevnetError, match="exited"):
        net.start()
    assert net.daemon_pid is not None
    assert _pid_gone(net.daemon_pid)
    assert all(_pid_gone(p) for p in net.pids())


def test_stop_ends_everything(devnet: Devnet) -> None:
    """Runs last in this module: stop() ends monerod and every wallet-rpc."""
    devnet.start_wallet_rpc("extra")
    pids = devnet.pids()
    assert len(pids) >= 4  # monerod, funder, merchant, extra (+ stopped ones)
    devnet.stop()
    assert all(_pid_gone(p) for p in pids)
    devnet.stop()  # idempotent
