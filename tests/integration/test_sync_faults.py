"""The sync tick under faults: wallet-rpc down, and idle ticks that must write nothing."""

from __future__ import annotations

import time

import pytest

from tests.integration.callback_support import (
    SYNC_WAIT,
    XMR,
    db_scalar,
    mine_until_unlocked,
    transfer_height,
    wait_kinds,
)
from tests.integration.gateway import Gateway, count_rows
from tests.integration.receiver import Receiver
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

GATEWAY_ARGS = ["--callback-retry-base", "0.5s", "--callback-timeout", "2s"]
POLL = 0.5  # the test gateway's --poll-frequency


def test_wallet_down_payment_not_missed(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """A payment made while wallet-rpc is down is synced, and called back, once it is back."""
    created = gateway.receive(XMR, callback_url=receiver.url)
    address = created["address"]
    gateway.wallet.kill()
    try:
        tx_hash = devnet.pay(address, XMR, mine_blocks=1)
        time.sleep(4 * POLL)
        # Reads come from the database: they keep answering while ticks fail.
        status = gateway.status(address)
        assert status["transactions"] == [] and status["amount"]["expected"] == XMR
        assert "sync tick failed" in gateway.log_tail(400)
        assert receiver.attempts == []
    finally:
        gateway.wallet.restart()
    [confirmed] = wait_kinds(receiver, address, ["transfer.confirmed"], timeout=60)
    assert confirmed.json["transaction"]["tx_hash"] == tx_hash
    assert confirmed.json["amount"]["covered"] == {"total": XMR, "unlocked": 0}
    status = gateway.status(address)
    assert [t["tx_hash"] for t in status["transactions"]] == [tx_hash]
    assert status["amount"]["covered"]["total"] == XMR
    assert "sync resumed after" in gateway.log_tail(400)
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

    deadline = time.monotonic() + SYNC_WAIT
    while wallet_height() != height:
        assert time.monotonic() < deadline, "the gateway never caught up with the chain"
        time.sleep(0.1)

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
    deadline = time.monotonic() + SYNC_WAIT
    while wallet_height() != height + 1:
        assert time.monotonic() < deadline, "the gateway stopped syncing"
        time.sleep(0.1)
    assert db_scalar(gateway, "SELECT updated_at FROM sync_state") != before[4]
    assert count_rows(gateway, "events") == before[1]
