"""testsupport/wallet_pool.py: a test gateway's wallet-rpc is kept for the next one, which
gets a new wallet in it; a wallet-rpc that was changed is ended, not kept."""

from __future__ import annotations

import pytest

from testsupport.gateway import close_gateway, start_gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration


def test_the_next_gateway_gets_the_same_process_and_a_new_wallet(
    devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> None:
    first = start_gateway(devnet, "sqlite", tmp_path_factory.mktemp("pool-first"))
    try:
        pid = first.wallet.pid
        address = first.wallet.call("get_address", {"account_index": 0})["address"]
    finally:
        close_gateway(first)
    assert first.wallet.alive() and not any(p.is_file() for p in first.wallet.wallet_dir.iterdir())

    second = start_gateway(devnet, "sqlite", tmp_path_factory.mktemp("pool-second"))
    try:
        assert second.wallet.pid == pid  # no second start of wallet-rpc
        assert second.wallet.call("get_address", {"account_index": 0})["address"] != address
        # A process whose command a test changed is not handed on.
        second.wallet.cmd = [*second.wallet.cmd, "--log-level", "1"]
    finally:
        close_gateway(second)
    assert not second.wallet.alive()
    third = start_gateway(devnet, "sqlite", tmp_path_factory.mktemp("pool-third"))
    try:
        assert third.wallet.pid != pid
    finally:
        close_gateway(third)
