"""Idle wallet-rpc processes of a test network, handed to the next test gateway.

Every ``monero-wallet-rpc`` 0.18 spins on its clock for about its first second (1.0
CPU-s each, whatever it is asked: ``perf`` shows ``clock_gettime`` in a loop), and the
integration tests start a gateway, each on a new wallet-rpc, about a hundred times on two
cores. A gateway's wallet is not reused: when it ends, its wallet is closed and its files
are removed, so the next gateway finds an empty wallet folder and creates a new wallet,
as on a new wallet-rpc. A process that was changed (its command), stopped, or does not
close its wallet in time is ended instead of kept.
"""

from __future__ import annotations

import contextlib
import threading

from xmrgate.adapters.wallet_rpc_connection import WALLET_RPC_ERROR_CODE_NOT_OPEN
from xmrgate.devnet import Devnet, WalletRpc
from xmrgate.devnet.errors import DevnetError

#: How long a returned wallet-rpc gets to save and close its wallet.
CLOSE_TIMEOUT = 20.0

# Idle processes by network (``id`` of its Devnet: one network per test process, or per
# module in test_devnet.py), and the command each was started with.
_IDLE: dict[int, list[WalletRpc]] = {}
_STARTED_AS: dict[int, list[str]] = {}
_LOCK = threading.Lock()  # some modules start their gateways in threads


def _idle_one(devnet: Devnet) -> WalletRpc | None:
    with _LOCK:
        idle = _IDLE.get(id(devnet))
        return idle.pop() if idle else None


def take_wallet_rpc(devnet: Devnet, name: str) -> WalletRpc:
    """An idle wallet-rpc of ``devnet`` with no wallet open and an empty wallet folder, or
    a new one named ``name``."""
    while (wallet := _idle_one(devnet)) is not None:
        if f"127.0.0.1:{devnet.daemon_rpc_port}" not in wallet.cmd:  # another network's
            wallet.stop()
            continue
        try:
            wallet.call("get_version", timeout=5)
        except DevnetError:
            wallet.stop()
            continue
        return wallet
    wallet = devnet.start_wallet_rpc(name)
    with _LOCK:
        _STARTED_AS[wallet.port] = list(wallet.cmd)
    return wallet


def give_back(devnet: Devnet, wallet: WalletRpc) -> None:
    """Close ``wallet``'s wallet, remove its files and keep the process for the next
    gateway; or end it when it cannot be reused as it was started."""
    if wallet.cmd != _STARTED_AS.get(wallet.port) or not wallet.alive():
        wallet.stop()
        return
    try:
        wallet.call("close_wallet", timeout=CLOSE_TIMEOUT)
    except DevnetError as exc:
        if exc.code != WALLET_RPC_ERROR_CODE_NOT_OPEN:  # "none was open" is as good
            wallet.stop()
            return
    for entry in wallet.wallet_dir.iterdir():
        if entry.is_file():  # the wallet's files; the shared ring database folder stays
            with contextlib.suppress(OSError):
                entry.unlink()
    with _LOCK:
        _IDLE.setdefault(id(devnet), []).append(wallet)
