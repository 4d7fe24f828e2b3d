"""Zero-conf callbacks: transfers announced from the pool on, on both databases."""

from __future__ import annotations

import pytest

from tests.integration.callback_support import (
    SYNC_WAIT,
    XMR,
    callbacks,
    events_of,
    kinds,
    mine_until_unlocked,
    transfer_height,
    wait_kinds,
)
from tests.integration.receiver import Receiver
from testsupport.gateway import FAST_POLL, Gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

# The receiver listens on loopback, an internal address the gateway calls only if allowed.
GATEWAY_ARGS = [
    # A pool transaction dropped (flush_txpool) is not announced by monerod: only the
    # poll sees it (the tests' gateways poll every 2 s otherwise).
    *FAST_POLL,
    "--zero-conf",
    "--callback-allow",
    "127.0.0.1",
    "--callback-retry-base",
    "0.5s",
    "--callback-timeout",
    "2s",
]


def test_zero_conf_announces_pool_confirmed_unlocked(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """Each transfer gets three callbacks in order: pool, confirmed, unlocked."""
    created = gateway.receive(3 * XMR, description="zero conf", callback_url=receiver.url)
    address = created["address"]
    tx1 = devnet.pay(address, 1 * XMR)
    [pool] = wait_kinds(receiver, address, ["transfer.pool"])
    body = pool.json
    assert body["transaction"]["tx_hash"] == tx1
    assert body["transaction"]["height"] == 0 and body["transaction"]["confirmations"] == 0
    assert body["transaction"]["locked"] is True
    assert body["amount"]["covered"] == {"total": 1 * XMR, "unlocked": 0}
    assert body["complete"] is False
    [listed] = gateway.status(address)["transactions"]
    assert listed["tx_hash"] == tx1 and listed["height"] == 0

    tx2 = devnet.pay(address, 2 * XMR)
    # (pay() may mine blocks before sending, confirming tx1 first: only wait for tx2.)
    receiver.wait_for(
        lambda d: any(r.json["transaction"]["tx_hash"] == tx2 for r in events_of(d, address)),
        timeout=SYNC_WAIT,
        what="a callback about the second transfer (in the pool)",
    )
    devnet.mine(1)
    heights = [transfer_height(gateway, address, tx) for tx in (tx1, tx2)]
    mine_until_unlocked(devnet, max(heights))
    receiver.wait_for(
        lambda d: len(events_of(d, address)) >= 6,
        timeout=SYNC_WAIT,
        what="6 callbacks (pool, confirmed, unlocked for each transfer)",
    )
    got = events_of(receiver.delivered(), address)
    assert len(got) == 6, kinds(got)
    for tx in (tx1, tx2):
        mine = [r for r in got if r.json["transaction"]["tx_hash"] == tx]
        assert kinds(mine) == ["transfer.pool", "transfer.confirmed", "transfer.unlocked"]
        assert [r.json["transaction"]["locked"] for r in mine] == [True, True, False]
        assert mine[1].json["transaction"]["height"] > 0
    assert got[-1].json["amount"]["covered"] == {"total": 3 * XMR, "unlocked": 3 * XMR}
    assert got[-1].json["complete"] is True
    assert gateway.status(address)["amount"] == got[-1].json["amount"]
    ids = [r.headers["x-xmrgate-event-id"] for r in got]
    assert len(set(ids)) == 6
    assert ids == [c["id"] for c in callbacks(gateway, address)]


def test_zero_conf_dropped_pool_transfer_is_gone(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """A pool transfer that leaves the pool unmined is announced gone and stops counting."""
    address = gateway.receive(XMR, callback_url=receiver.url)["address"]
    devnet.mine(1)  # whatever else waits in the pool goes into a block first
    tx = devnet.pay(address, XMR)
    wait_kinds(receiver, address, ["transfer.pool"])
    devnet.flush_txpool()
    _, gone = wait_kinds(receiver, address, ["transfer.pool", "transfer.gone"])
    assert gone.json["transaction"]["tx_hash"] == tx
    assert gone.json["amount"]["covered"] == {"total": 0, "unlocked": 0}
    assert gone.json["complete"] is False
    status = gateway.status(address)
    assert status["transactions"] == []
    assert status["amount"]["covered"] == {"total": 0, "unlocked": 0}
