"""check_tx_key and address_network on a real regtest network (monero 0.18.0.0).

A sender wallet pays a receiver wallet with ``get_tx_key``; the receiver's wallet-rpc
(and any other wallet on the daemon: the funder's) then proves the payment with
``WalletClient.check_tx_key``: the amount while in the pool (0 confirmations), then
confirmations once mined. A wrong key, another transaction's key and an address the
transaction did not pay answer ``received`` 0 (wallet-rpc 0.18 raises no error for
them); a malformed key or txid, an address of another network and a transaction the
daemon does not know become WalletRejected (400) with the wallet's message.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from xmrgate.adapters.account_wallet import AccountWallet
from xmrgate.adapters.wallet_rpc import WalletClient
from xmrgate.devnet import Devnet, WalletRpc
from xmrgate.domain.errors import WalletRejected
from xmrgate.domain.wallet_answers import TxKeyCheck

pytestmark = pytest.mark.integration

T = TypeVar("T")
XMR = 10**12
AMOUNT = 1_234_567_890
TESTNET = (
    "9zo6vkfSXnP3L1yEdRBoDxhPuoZuDGxMfMgqpYhcFaxEZAv4"
    "pYpx1FVdYnDggwgsZMGcM2VQNmt7LDkQx9DdHEbqQDSKKp3"
)
STAGENET = (
    "5Ag6FHdvkLLTpWwRKqf2NJ1YUeXZV7RDXXRdjrVsZB3A6uSe"
    "U3yXrjBgMs7VGLxhWfNazwWah6TyU6hky5Rj6PndE4zjfoW"
)
_names = itertools.count()


@dataclass
class Payment:
    """A transfer from the sender to the receiver's subaddress, and the keys to prove it."""

    sender: WalletRpc
    receiver: WalletRpc
    sender_address: str
    receiver_address: str
    to: str
    txid: str
    tx_key: str
    # A second transaction (to the receiver's primary address) and its key.
    other_txid: str
    other_key: str


def _wallet(devnet: Devnet, role: str) -> tuple[WalletRpc, str]:
    rpc = devnet.start_wallet_rpc(f"txkey-{role}-{next(_names)}")
    rpc.call("create_wallet", {"filename": "wallet", "language": "English"})
    return rpc, str(rpc.call("get_address", {"account_index": 0})["address"])


def _send(sender: WalletRpc, address: str, amount: int) -> tuple[str, str]:
    sent = sender.call(
        "transfer",
        {"destinations": [{"address": address, "amount": amount}], "get_tx_key": True},
        timeout=120,
    )
    return str(sent["tx_hash"]), str(sent["tx_key"])


@pytest.fixture(scope="module")
def payment(devnet: Devnet) -> Iterator[Payment]:
    sender, sender_address = _wallet(devnet, "sender")
    receiver, receiver_address = _wallet(devnet, "receiver")
    to = str(receiver.call("create_address", {"account_index": 0})["address"])
    # Two outputs, unlocked after 10 blocks: two transfers without waiting for change.
    devnet.pay_many([(sender_address, 2 * XMR), (sender_address, 2 * XMR)], mine_blocks=10)
    sender.call("refresh", timeout=120)
    # The receiver knows the chain up to here: what is in the pool next is the payment.
    receiver.call("refresh", timeout=120)
    txid, tx_key = _send(sender, to, AMOUNT)
    other_txid, other_key = _send(sender, receiver_address, 777)
    devnet.wait_pool_relayed()
    # get_tx_key afterwards tells the same key as the transfer's answer.
    assert sender.call("get_tx_key", {"txid": txid})["tx_key"] == tx_key
    try:
        yield Payment(
            sender,
            receiver,
            sender_address,
            receiver_address,
            to,
            txid,
            tx_key,
            other_txid,
            other_key,
        )
    finally:
        sender.stop()
        receiver.stop()


def _ask(url: str, question: Callable[[WalletClient], Awaitable[T]]) -> T:
    async def run() -> T:
        client = WalletClient(url, timeout=60)
        try:
            return await question(client)
        finally:
            await client.aclose()

    return asyncio.run(run())


def _check(url: str, txid: str, tx_key: str, address: str) -> TxKeyCheck:
    return _ask(url, lambda client: client.check_tx_key(txid, tx_key, address))


def _rejected(url: str, txid: str, tx_key: str, address: str) -> WalletRejected:
    with pytest.raises(WalletRejected) as caught:
        _check(url, txid, tx_key, address)
    return caught.value


def test_check_tx_key_in_the_pool_then_mined(payment: Payment, devnet: Devnet) -> None:
    p = payment
    assert devnet.pool_hashes().count(p.txid) == 1
    in_pool = _check(p.receiver.url, p.txid, p.tx_key, p.to)
    assert in_pool == TxKeyCheck(received=AMOUNT, confirmations=0, in_pool=True)
    # Any wallet on the daemon can check it: the funder's knows nothing of the payment.
    assert _check(devnet.funder.url, p.txid, p.tx_key, p.to) == in_pool
    # Through the account wallet (the Wallet port), the same answer.
    via_port = _ask(
        p.receiver.url, lambda client: AccountWallet(client, 0).check_tx_key(p.txid, p.tx_key, p.to)
    )
    assert via_port == in_pool

    devnet.mine(1)
    mined = _check(p.receiver.url, p.txid, p.tx_key, p.to)
    assert mined.received == AMOUNT and not mined.in_pool and mined.confirmations >= 1
    devnet.mine(2)
    assert _check(p.receiver.url, p.txid, p.tx_key, p.to).confirmations == mined.confirmations + 2


def test_a_wrong_key_or_address_answers_received_zero(payment: Payment) -> None:
    p = payment
    url = p.receiver.url
    wrong_key = ("1" if p.tx_key[0] != "1" else "2") + p.tx_key[1:]
    for txid, key, address in [
        (p.txid, wrong_key, p.to),  # a mistyped key
        (p.txid, "01" + "00" * 31, p.to),  # a valid scalar, another key
        (p.txid, p.other_key, p.to),  # the key of another transaction of the same sender
        (p.txid, p.tx_key, p.receiver_address),  # the receiver's other (primary) address
        (p.txid, p.tx_key, p.sender_address),  # an address the transaction did not pay
    ]:
        found = _check(url, txid, key, address)
        assert found.received == 0, (key, address, found)
    # The other transaction checks out with its own key, as it should.
    assert _check(url, p.other_txid, p.other_key, p.receiver_address).received == 777


def test_malformed_questions_are_rejected_with_the_wallet_message(payment: Payment) -> None:
    p = payment
    url = p.receiver.url
    bad_key = _rejected(url, p.txid, "zz" * 32, p.to)
    assert (bad_key.code, bad_key.message) == (-25, "Tx key has invalid format")
    short_key = _rejected(url, p.txid, p.tx_key[:-2], p.to)
    assert (short_key.code, short_key.message) == (-25, "Tx key has invalid format")
    bad_txid = _rejected(url, "not-a-txid", p.tx_key, p.to)
    assert (bad_txid.code, bad_txid.message) == (-8, "TX ID has invalid format")
    unknown = _rejected(url, "ab" * 32, p.tx_key, p.to)
    assert (unknown.code, unknown.message) == (-1, "Failed to get transaction from daemon")
    other_net = _rejected(url, p.txid, p.tx_key, TESTNET)
    assert (other_net.code, other_net.message) == (-2, "Invalid address")
    garbage = _rejected(url, p.txid, p.tx_key, "hello")
    assert (garbage.code, garbage.message) == (-2, "Invalid address")


def test_address_network_names_any_network(payment: Payment) -> None:
    p = payment
    changed = p.to[:-1] + ("A" if p.to[-1] != "A" else "B")  # a broken checksum

    async def networks(client: WalletClient) -> list[Any]:
        wallet = AccountWallet(client, 0)
        asked = [p.receiver_address, p.to, TESTNET, STAGENET, "hello", changed, ""]
        return [await wallet.address_network(a) for a in asked]

    assert _ask(p.receiver.url, networks) == [
        "mainnet",
        "mainnet",
        "testnet",
        "stagenet",
        None,
        None,
        None,
    ]
    # On its own network only (is_valid_address), the testnet address is not valid.
    assert _ask(p.receiver.url, lambda client: client.is_valid_address(TESTNET)) is False
