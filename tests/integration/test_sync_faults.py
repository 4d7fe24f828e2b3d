"""The sync tick under faults: wallet-rpc down, and idle ticks that must write nothing."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.integration.callback_support import (
    XMR,
    db_scalar,
    log_mark,
    mine_until_unlocked,
    transfer_height,
    wait_kinds,
    wait_log,
)
from tests.integration.receiver import Receiver
from testsupport.gateway import FAST_POLL, SYNC_WAIT, Gateway, count_rows
from testsupport.processes import wait_until
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

# The receiver listens on loopback, an internal address the gateway calls only if allowed.
GATEWAY_ARGS = [
    "--callback-allow",
    "127.0.0.1",
    "--callback-retry-base",
    "0.5s",
    "--callback-timeout",
    "2s",
    # The poll these tests count ticks of (the tests' gateways poll every 2 s otherwise).
    *FAST_POLL,
]
POLL = 0.5  # the gateway's --poll-frequency above


def test_wallet_down_payment_not_missed(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """A payment made while wallet-rpc is down is synced, and called back, once it is back."""
    created = gateway.receive(XMR, callback_url=receiver.url)
    address = created["address"]
    mark = log_mark(gateway)
    gateway.wallet.kill()
    try:
        tx_hash = devnet.pay(address, XMR, mine_blocks=1)
        wait_log(gateway, "sync tick failed", since=mark)
        # Reads come from the database: they keep answering while ticks fail.
        status = gateway.status(address)
        assert status["transactions"] == [] and status["amount"]["expected"] == XMR
        assert receiver.attempts == []
    finally:
        gateway.wallet.restart()
    [confirmed] = wait_kinds(receiver, address, ["transfer.confirmed"], timeout=60)
    assert confirmed.json["transaction"]["tx_hash"] == tx_hash
    assert confirmed.json["amount"]["covered"] == {"total": XMR, "unlocked": 0}
    status = gateway.status(address)
    assert [t["tx_hash"] for t in status["transactions"]] == [tx_hash]
    assert status["amount"]["covered"]["total"] == XMR
    wait_log(gateway, "sync resumed after", since=mark)  # logged right after that tick
    gateway.wait_ready()
    # The restarted wallet may have forgotten subaddresses it handed out: never reuse one.
    assert gateway.receive(1)["address"] != address


def test_gateway_down_while_paid_and_unlocked(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """Paid and unlocked while the gateway was dead: after restart both callbacks, in order."""
    address = gateway.receive(XMR, callback_url=receiver.url)["address"]
    gateway.kill()
    try:
        tx_hash = devnet.pay(address, XMR, mine_blocks=1)
        mine_until_unlocked(devnet, devnet.height() - 1)
        devnet.mine(5)  # well past the unlock, beyond one tick's worth of blocks
    finally:
        gateway.start()
    confirmed, unlocked = wait_kinds(
        receiver, address, ["transfer.confirmed", "transfer.unlocked"], timeout=60
    )
    assert confirmed.json["transaction"]["tx_hash"] == unlocked.json["transaction"]["tx_hash"]
    assert confirmed.json["transaction"]["tx_hash"] == tx_hash
    assert confirmed.json["transaction"]["locked"] is True and confirmed.json["complete"] is False
    assert confirmed.json["amount"]["covered"] == {"total": XMR, "unlocked": 0}
    assert unlocked.json["transaction"]["locked"] is False and unlocked.json["complete"] is True
    assert gateway.status(address)["complete"] is True


def test_idle_ticks_write_nothing(gateway: Gateway, devnet: Devnet, receiver: Receiver) -> None:
    """Ticks that see no new block and no new transfer leave every row untouched."""
    address = gateway.receive(XMR, callback_url=receiver.url)["address"]
    tx_hash = devnet.pay(address, XMR, mine_blocks=1)
    mine_until_unlocked(devnet, transfer_height(gateway, address, tx_hash))
    wait_kinds(receiver, address, ["transfer.confirmed", "transfer.unlocked"])
    height = devnet.height()

    def wallet_height() -> int:
        return int(db_scalar(gateway, "SELECT wallet_height FROM sync_state"))

    def synced_to(target: int) -> Callable[[], tuple[bool, int]]:
        def probe() -> tuple[bool, int]:
            stored = wallet_height()
            return stored == target, stored

        return probe

    wait_until(
        f"the stored wallet height to reach the chain's {height}",
        synced_to(height),
        timeout=SYNC_WAIT,
        log=gateway.log_path,
        proc=gateway.proc,
    )

    def snapshot() -> tuple[object, ...]:
        return (
            count_rows(gateway, "transfers"),
            count_rows(gateway, "events"),
            db_scalar(gateway, "SELECT max(seq) FROM events"),
            db_scalar(gateway, "SELECT max(updated_at) FROM transfers"),
            db_scalar(gateway, "SELECT updated_at FROM sync_state"),
            wallet_height(),
        )

    before = snapshot()
    time.sleep(8 * POLL)
    assert snapshot() == before
    assert devnet.height() == height, "nobody mined meanwhile"

    # The ticks were running all along: a new block is written at once.
    devnet.mine(1)
    wait_until(
        f"the stored wallet height to follow a new block to {height + 1}",
        synced_to(height + 1),
        timeout=SYNC_WAIT,
        log=gateway.log_path,
        proc=gateway.proc,
    )
    assert db_scalar(gateway, "SELECT updated_at FROM sync_state") != before[4]
    assert count_rows(gateway, "events") == before[1]
