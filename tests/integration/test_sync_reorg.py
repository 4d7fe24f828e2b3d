"""Reorgs: a confirmed payment whose block is replaced is marked gone and called back.

Its own module: popping blocks touches the session's shared chain, and modules run one
after another, so no other test has a fresh payment in the popped block.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.callback_support import XMR, callbacks, wait_kinds
from tests.integration.receiver import Receiver
from testsupport.gateway import FAST_POLL, Gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

# The receiver listens on loopback, an internal address the gateway calls only if allowed.
GATEWAY_ARGS = [
    # Blocks popped and a pool flushed are not announced by monerod: only the poll sees
    # them (the tests' gateways poll every 2 s otherwise).
    *FAST_POLL,
    "--callback-allow",
    "127.0.0.1",
    "--callback-retry-base",
    "0.5s",
    "--callback-timeout",
    "2s",
]


def confirm_alone(gateway: Gateway, devnet: Devnet, receiver: Receiver, address: str) -> str:
    """Pay ``address`` in a block holding no other transaction; wait for the confirmed callback."""
    devnet.mine(1)  # whatever else waits in the pool goes into a block we keep
    assert devnet.pool_hashes() == []
    tx_hash = devnet.pay(address, XMR)
    assert devnet.pool_hashes() == [tx_hash]
    top = devnet.mine(1) - 1
    [confirmed] = wait_kinds(receiver, address, ["transfer.confirmed"])
    assert confirmed.json["transaction"]["height"] == top
    assert devnet.height() == top + 1, "nobody mined on top of our block"
    return tx_hash


def check_gone(gateway: Gateway, address: str, tx_hash: str, gone: dict[str, Any]) -> None:
    """The gone callback and GET /receive agree: the transfer no longer counts."""
    assert gone["event"] == "transfer.gone"
    assert gone["transaction"]["tx_hash"] == tx_hash
    assert gone["amount"]["covered"] == {"total": 0, "unlocked": 0}
    assert gone["complete"] is False
    status = gateway.status(address)
    assert status["transactions"] == []
    assert status["amount"] == gone["amount"]


def test_reorg_marks_confirmed_transfer_gone(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """pop_blocks + flush_txpool + mining: the transfer vanishes, totals drop, gone is sent."""
    address = gateway.receive(XMR, callback_url=receiver.url)["address"]
    tx_hash = confirm_alone(gateway, devnet, receiver, address)
    assert gateway.status(address)["amount"]["covered"]["total"] == XMR

    devnet.pop_blocks(1)
    devnet.flush_txpool()
    devnet.mine(2)
    _, gone = wait_kinds(receiver, address, ["transfer.confirmed", "transfer.gone"])
    check_gone(gateway, address, tx_hash, gone.json)
    assert [c["status"] for c in callbacks(gateway, address)] == ["delivered", "delivered"]


def test_reorg_back_to_pool_then_dropped_is_gone(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """A confirmed payment that a reorg returns to the pool, and that is then dropped, is gone."""
    address = gateway.receive(XMR, callback_url=receiver.url)["address"]
    tx_hash = confirm_alone(gateway, devnet, receiver, address)
    blob = devnet._daemon_other("get_transactions", {"txs_hashes": [tx_hash]})["txs"][0]["as_hex"]

    # While the gateway's wallet is down, the block is replaced and the transaction goes
    # back into the pool: the restarted wallet reports it as a pool transfer.
    gateway.wallet.kill()
    try:
        devnet.pop_blocks(1)
        devnet.flush_txpool()
        devnet.mine(2)
        devnet._daemon_other("send_raw_transaction", {"tx_as_hex": blob, "do_not_relay": False})
        assert devnet.pool_hashes() == [tx_hash]
    finally:
        gateway.wallet.restart()
    gateway.wait_status(
        address, lambda s: [t["height"] for t in s["transactions"]] == [0], timeout=60
    )
    assert gateway.status(address)["amount"]["covered"] == {"total": XMR, "unlocked": 0}

    devnet.flush_txpool()
    devnet.mine(1)
    _, gone = wait_kinds(receiver, address, ["transfer.confirmed", "transfer.gone"])
    check_gone(gateway, address, tx_hash, gone.json)
