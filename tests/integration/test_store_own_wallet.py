"""A store on its own monero-wallet-rpc on the real regtest
network and both databases.

One gateway per database for the module (the ``gateway`` fixture of conftest.py, polling
every 0.5 s), with an operator key and a default callback secret. The module's store
``own-a`` lives on a second wallet-rpc process holding a wallet the test creates in it;
the funder pays it, a loopback receiver checks its callbacks. Then that wallet-rpc is
frozen with SIGSTOP (a hung wallet-rpc: its calls wait, the harsher case for
isolation): the default store must keep receiving, syncing and delivering callbacks
well within the 30 s that a call to the frozen wallet-rpc waits, and a payment made to
``own-a`` meanwhile must be found within a few poll periods of SIGCONT. ``/health``
with ``own-a``'s key answers for its wallet-rpc (503 naming the store while it is
frozen), with the operator's key for the main wallet (200). Last, ``own-a`` pays out:
from its own wallet, once per Idempotency-Key, seen by no other store.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.integration.callback_support import XMR, mine_until_unlocked, signature_ok, wait_kinds
from tests.integration.receiver import Receiver
from tests.integration.test_stores import (
    DEFAULT_SECRET,
    OPERATOR,
    OPERATOR_KEY,
    covered,
    get_json,
    make_shop,
    operator_on,
    receive,
    wait_json,
)
from testsupport.gateway import FAST_POLL, Gateway
from xmrgate.devnet import Devnet, DevnetError, WalletRpc, free_port

pytestmark = pytest.mark.integration

# The gateway fixture adds --callback-allow 127.0.0.1.
GATEWAY_ARGS = [
    # CATCH_UP_WAIT counts on it (the tests' gateways poll every 2 s otherwise).
    *FAST_POLL,
    "--api-key",
    OPERATOR_KEY,
    "--callback-secret",
    DEFAULT_SECRET,
    "--callback-retry-base",
    "0.5s",
    # Each store fills its own pool when created: small pools keep wallet-rpc free.
    "--address-pool-size",
    "8",
    "--address-pool-low-water",
    "2",
]
STORE_ID = "own-a"
# The other stores must go on well before a call to the frozen wallet-rpc times out
# (--wallet-timeout, 30 s by default): a sync or callback loop that waited on it would
# only resume after that.
ISOLATION_WAIT = 12.0
# The store's payment made while its wallet-rpc was frozen, found after SIGCONT: a few
# of the gateway's 0.5 s polls, plus wallet-rpc's refresh of the blocks it missed (it
# took 0.8 s in runs on both databases).
CATCH_UP_WAIT = 6.0


@dataclass(frozen=True)
class OwnStore:
    """The store on its own wallet-rpc, with a key of every store scope."""

    id: str
    secret: str
    key: str
    rpc: WalletRpc
    primary: str

    @property
    def auth(self) -> dict[str, str]:
        """Headers of this store's key."""
        return {"Authorization": f"Bearer {self.key}"}


def stores_listed(gateway: Gateway) -> list[dict[str, Any]]:
    """GET /stores as the operator."""
    stores: list[dict[str, Any]] = get_json(gateway, "/stores", OPERATOR)["stores"]
    return stores


def post_store(gateway: Gateway, store_id: str, wallet: dict[str, Any], secret: str) -> Any:
    """POST /stores with ``wallet``, as the operator (the answer, whatever its status)."""
    return gateway.post(
        "/stores",
        json={"id": store_id, "wallet": wallet, "callback_secret": secret},
        headers=OPERATOR,
    )


def health(gateway: Gateway, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """GET /health with ``headers``: (status code, body)."""
    r = gateway.get("/health", headers=headers, timeout=15)
    body: dict[str, Any] = r.json()
    return r.status_code, body


def not_in_wallet(rpc: WalletRpc, address: str) -> str:
    """The error wallet-rpc gives for ``get_address_index`` of ``address`` ("" if it knows it)."""
    try:
        rpc.call("get_address_index", {"address": address})
    except DevnetError as exc:
        return exc.message
    return ""


def resume(pid: int) -> None:
    """SIGCONT ``pid`` (a wallet-rpc this module froze); nothing if it is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)


@pytest.fixture(scope="module")
def own_store(gateway: Gateway, devnet: Devnet) -> Iterator[OwnStore]:
    """A second wallet-rpc with a fresh wallet open, and the store ``own-a`` on it (with a
    key); the wallet-rpc is resumed (if frozen) and stopped by PID at the end."""
    rpc = devnet.start_wallet_rpc(f"own-{gateway.backend}-{uuid.uuid4().hex[:6]}")
    try:
        rpc.call("create_wallet", {"filename": "own", "language": "English"})
        primary = str(rpc.call("get_address", {"account_index": 0})["address"])
        secret = f"{STORE_ID}-callback-secret-0123"
        r = post_store(gateway, STORE_ID, {"rpc_address": rpc.url}, secret)
        assert r.status_code == 200, r.text
        store = r.json()
        assert store["id"] == STORE_ID and store["enabled"] is True, store
        assert store["wallet"]["rpc_address"] == rpc.url, store
        assert store["wallet"]["primary_address"] == primary, store
        assert "account" not in store["wallet"], store
        k = gateway.post(f"/stores/{STORE_ID}/keys", headers=OPERATOR)
        assert k.status_code == 200, k.text
        yield OwnStore(STORE_ID, secret, k.json()["key"], rpc, primary)
    finally:
        resume(rpc.pid)
        rpc.stop()


def test_a_wallet_rpc_that_cannot_be_a_stores_is_refused_with_nothing_made(
    gateway: Gateway, devnet: Devnet
) -> None:
    """Nothing listening: 400 "does not answer"; no wallet open: 400 "no wallet open";
    the gateway's own wallet-rpc (the main wallet): 409. GET /stores unchanged each time."""
    before = stores_listed(gateway)
    silent = f"http://127.0.0.1:{free_port()}/json_rpc"
    empty = devnet.start_wallet_rpc(f"empty-{gateway.backend}-{uuid.uuid4().hex[:6]}")
    try:
        cases = [
            ("nothing listening", silent, 400, "does not answer"),
            ("no wallet open", empty.url, 400, "no wallet open"),
            ("the main wallet", gateway.wallet.url, 409, "main wallet"),
        ]
        for what, url, status, says in cases:
            r = post_store(gateway, "refused", {"rpc_address": url}, "refused-secret-0123")
            assert r.status_code == status, f"{what}: {r.status_code} {r.text}"
            answer = r.json()
            assert answer["status"] == status and says in answer["message"], f"{what}: {answer}"
            assert url in answer["message"], f"{what}: the message does not name {url}"
            assert stores_listed(gateway) == before, f"{what}: GET /stores changed"
            gone = gateway.get("/stores/refused", headers=OPERATOR)
            assert gone.status_code == 404, f"{what}: {gone.status_code} {gone.text}"
        assert empty.call("get_version")["version"], "the empty wallet-rpc died"
        still_empty = not_in_wallet(empty, devnet.funder_address)
        assert "no wallet" in still_empty.lower() or "-13" in still_empty, (
            f"the refused store left a wallet open in the empty wallet-rpc: {still_empty!r}"
        )
    finally:
        empty.stop()


def test_a_store_on_its_own_wallet_receives_on_it(
    gateway: Gateway, devnet: Devnet, own_store: OwnStore, receiver: Receiver
) -> None:
    """Its request's subaddress is of ITS wallet (the main wallet does not know it); the
    funder's payment is seen, its callback signed with its secret; its /balance is its
    wallet's; a second store on the same wallet-rpc is 409 naming the first."""
    own = own_store
    amount = XMR // 2
    main_before = get_json(gateway, "/balance", OPERATOR)
    address = receive(gateway, own.auth, amount, description="own", callback_url=receiver.url)
    index = own.rpc.call("get_address_index", {"address": address})["index"]
    assert (index["major"], index["minor"] > 0) == (0, True), f"not a subaddress: {index}"
    refusal = not_in_wallet(gateway.wallet, address)
    assert "doesn't belong" in refusal, f"the main wallet-rpc knows {address}: {refusal!r}"
    assert gateway.get(f"/receive/{address}", headers=OPERATOR).status_code == 404

    tx_hash = devnet.pay(address, amount, mine_blocks=1)
    status = wait_json(
        gateway, f"/receive/{address}", own.auth, covered(amount, tx_hash), "own-a's payment"
    )
    assert status["amount"]["due"] == 0, status
    [confirmed] = wait_kinds(receiver, address, ["transfer.confirmed"])
    assert confirmed.json["transaction"]["tx_hash"] == tx_hash
    header = confirmed.headers["x-xmrgate-signature"]
    assert signature_ok(own.secret.encode(), header, confirmed.body), "not signed with own-a's"
    assert not signature_ok(DEFAULT_SECRET.encode(), header, confirmed.body)

    balance = get_json(gateway, "/balance", own.auth)
    assert balance["total"] == amount, f"own-a's /balance: {balance}"
    assert own.rpc.call("get_balance", {"account_index": 0})["balance"] == amount
    assert get_json(gateway, "/balance", OPERATOR) == main_before, "paid into the main wallet"

    before = stores_listed(gateway)
    r = post_store(gateway, "own-b", {"rpc_address": own.rpc.url}, "own-b-secret-0123")
    assert r.status_code == 409, f"a second store on own-a's wallet: {r.status_code} {r.text}"
    assert f"'{own.id}'" in r.json()["message"], r.text
    assert stores_listed(gateway) == before, "GET /stores changed"


def test_its_frozen_wallet_rpc_stops_it_alone_and_it_catches_up(
    gateway: Gateway, devnet: Devnet, own_store: OwnStore, receiver: Receiver
) -> None:
    """SIGSTOP on own-a's wallet-rpc: /health with its key is 503 naming its wallet, the
    default store's payment is seen and its callback delivered; own-a's payment made
    meanwhile is found within a few polls of SIGCONT, its callback signed with its secret."""
    own = own_store
    amount = XMR // 5
    own_addr = receive(
        gateway, own.auth, amount, description="paid while frozen", callback_url=receiver.url
    )
    assert own.rpc.call("get_address_index", {"address": own_addr})["index"]["major"] == 0
    own_status = gateway.get(f"/receive/{own_addr}", headers=own.auth)
    assert own_status.status_code == 200 and own_status.json()["transactions"] == []

    os.kill(own.rpc.pid, signal.SIGSTOP)
    try:
        code, body = gateway.wait_for(
            "/health with own-a's key to answer 503",
            lambda: health(gateway, own.auth),
            lambda h: h[0] == 503,
            timeout=ISOLATION_WAIT,
        )
        assert body["status"] == 503 and body["services"]["walletrpc"] is False, body
        named = str(body.get("message", ""))
        # /health is public: it names the store's wallet-rpc by its store, not its URL.
        assert f"'{own.id}'" in named and "wallet-rpc" in named, f"names no wallet: {body}"
        assert own.rpc.url not in named, body
        code, body = health(gateway, OPERATOR)
        assert code == 200 and body["services"]["walletrpc"] is True, body

        started = time.monotonic()
        # The default store takes a new request, is paid, syncs and calls back.
        default_addr = receive(
            gateway, OPERATOR, amount, description="default", callback_url=receiver.url
        )
        default_tx = devnet.pay(default_addr, amount, mine_blocks=1)
        wait_json(
            gateway,
            f"/receive/{default_addr}",
            OPERATOR,
            covered(amount, default_tx),
            "the default store's payment while own-a's wallet-rpc is frozen",
            timeout=ISOLATION_WAIT,
        )
        [confirmed] = wait_kinds(
            receiver, default_addr, ["transfer.confirmed"], timeout=ISOLATION_WAIT
        )
        assert signature_ok(
            DEFAULT_SECRET.encode(), confirmed.headers["x-xmrgate-signature"], confirmed.body
        )
        seen_after = time.monotonic() - started

        own_tx = devnet.pay(own_addr, amount, mine_blocks=1)
        time.sleep(1.0)  # two polls: nothing is seen while its wallet-rpc is frozen
        frozen = gateway.get(f"/receive/{own_addr}", headers=own.auth)
        assert frozen.status_code == 200 and frozen.json()["transactions"] == [], frozen.text
    finally:
        resume(own.rpc.pid)
    resumed = time.monotonic()
    status = wait_json(
        gateway,
        f"/receive/{own_addr}",
        own.auth,
        covered(amount, own_tx),
        "own-a's payment made while its wallet-rpc was frozen",
        timeout=CATCH_UP_WAIT,
    )
    caught_up = time.monotonic() - resumed
    assert status["amount"]["due"] == 0, status
    print(f"default store seen in {seen_after:.1f}s while frozen; caught up in {caught_up:.1f}s")
    gateway.wait_for(
        "/health with own-a's key to answer 200 again",
        lambda: health(gateway, own.auth),
        lambda h: h[0] == 200,
        timeout=CATCH_UP_WAIT,
    )
    [late] = wait_kinds(receiver, own_addr, ["transfer.confirmed"], timeout=CATCH_UP_WAIT)
    assert late.json["transaction"]["tx_hash"] == own_tx
    header = late.headers["x-xmrgate-signature"]
    assert signature_ok(own.secret.encode(), header, late.body), "not signed with own-a's"
    assert not signature_ok(DEFAULT_SECRET.encode(), header, late.body)


def test_its_payout_leaves_its_wallet_once_and_stays_its_own(
    gateway: Gateway, devnet: Devnet, own_store: OwnStore
) -> None:
    """own-a's POST /transfer spends from ITS wallet: its balance falls by amount + fee,
    the main wallet's (every account) does not move, the tx is in its wallet-rpc only.
    4 concurrent sends and a retry with one Idempotency-Key send once. Another store's key
    with that Idempotency-Key gets no replay, and no store but own-a sees the payout; the
    operator's Idempotency-Key on own-a is not replayed on another store either."""
    own, other = own_store, make_shop(gateway, "acct-payouts")  # an account, no money
    address = receive(gateway, own.auth, XMR, description="to pay out")
    paid = devnet.pay(address, XMR, mine_blocks=1)
    wait_json(gateway, f"/receive/{address}", own.auth, covered(XMR, paid), "own-a's payment")
    mine_until_unlocked(devnet, devnet.height() - 1)
    before = wait_json(
        gateway, "/balance", own.auth, lambda b: b["unlocked"] >= XMR, "own-a's 1 XMR unlocked"
    )
    main_before = gateway.wallet.call("get_balance", {"all_accounts": True})["balance"]
    journal_before = len(get_json(gateway, "/payouts", own.auth)["payouts"])

    recipient = devnet.funder.call("create_address", {"account_index": 0})["address"]
    body = {"destinations": [{"amount": XMR // 10, "address": recipient}]}
    keyed = {**own.auth, "Idempotency-Key": "own-payout-1"}

    def send(headers: dict[str, str]) -> httpx.Response:
        with httpx.Client(timeout=60, trust_env=False) as client:
            return client.post(gateway.url + "/transfer", json=body, headers=headers)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(send, [keyed] * 4))
    assert {r.status_code for r in answers} <= {200, 409}, [r.text for r in answers]
    [tx_hash] = {r.json()["tx_hash"] for r in answers if r.status_code == 200}
    fee = next(r.json()["fee"] for r in answers if r.status_code == 200)
    retry = send(keyed)
    assert retry.status_code == 200 and retry.headers.get("idempotent-replayed") == "true"
    assert retry.json()["tx_hash"] == tx_hash, retry.text

    # Sent once, from own-a's wallet: one journal entry, one amount + fee off its balance.
    journal = get_json(gateway, "/payouts", own.auth)["payouts"]
    assert len(journal) == journal_before + 1, journal
    assert journal[0]["tx_hash_list"] == [tx_hash] and journal[0]["state"] == "sent", journal[0]
    after = get_json(gateway, "/balance", own.auth)
    assert after["total"] == before["total"] - XMR // 10 - fee, (before, after, fee)
    assert own.rpc.call("get_balance", {"account_index": 0})["balance"] == after["total"]
    seen = get_json(gateway, f"/transfer/{tx_hash}", own.auth)  # asked of own-a's wallet-rpc
    assert seen["transfer"] == body["destinations"] and seen["fee"] == fee, seen
    assert own.rpc.call("get_transfer_by_txid", {"txid": tx_hash})["transfer"]["txid"] == tx_hash
    with pytest.raises(DevnetError):  # the main wallet knows no such transaction
        gateway.wallet.call("get_transfer_by_txid", {"txid": tx_hash})

    # Another store's key, the same Idempotency-Key and body: its own (empty) account's
    # refusal, never own-a's answer.
    theirs = send({**other.auth, "Idempotency-Key": "own-payout-1"})
    assert theirs.status_code == 400 and theirs.json()["code"] == -17, theirs.text
    assert "idempotent-replayed" not in theirs.headers
    for who, headers in [
        ("acct-payouts's key", other.auth),
        ("the operator", OPERATOR),
        ("the operator on acct-payouts", operator_on(other.id)),
    ]:
        r = gateway.get(f"/transfer/{tx_hash}", headers=headers)
        assert r.status_code == 404, f"{who}: GET /transfer/{tx_hash} -> {r.status_code}"
        hashes = [p["tx_hash_list"] for p in get_json(gateway, "/payouts", headers)["payouts"]]
        assert [tx_hash] not in hashes, f"{who} lists own-a's payout"
    # One operator, one Idempotency-Key, two stores: two payouts (both refused as too
    # big: nothing more is spent), the second not a replay of own-a's answer.
    too_big = {"destinations": [{"amount": 10**17, "address": recipient}]}
    op_key = {"Idempotency-Key": "operator-payout-1"}
    for store in (own.id, other.id):
        r = gateway.post("/transfer", json=too_big, headers={**operator_on(store), **op_key})
        assert r.status_code == 400 and "idempotent-replayed" not in r.headers, (store, r.text)
        [failed] = [
            p
            for p in get_json(gateway, "/payouts", operator_on(store))["payouts"]
            if p["amount"] == 10**17
        ]
        assert failed["state"] == "failed", failed
    assert get_json(gateway, "/balance", own.auth)["total"] == after["total"]
    main_after = gateway.wallet.call("get_balance", {"all_accounts": True})["balance"]
    assert main_after == main_before, "own-a's payout moved the main wallet's balance"
