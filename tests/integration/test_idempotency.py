"""Idempotency-Key on POST /receive and POST /transfer, and the payout journal."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import httpx
import pytest

from tests.integration.rpc_stall_proxy import StallingRpcProxy
from testsupport.gateway import Gateway, GatewayProcess, count_rows
from testsupport.processes import wait_until
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration
XMR = 10**12
# No address pool: POST /receive asks the wallet each time, so a dead wallet makes it a
# request that provably did nothing (503), whose key must be released.
GATEWAY_ARGS = ["--address-pool-size", "0"]


@pytest.fixture(scope="module")
def funded(gateway: Gateway, devnet: Devnet) -> Gateway:
    """The gateway's wallet holds 10 unlocked XMR."""
    primary = gateway.get("/health").headers["x-moneropay-address"]
    devnet.pay(primary, 10 * XMR, mine_blocks=11)

    def balance() -> tuple[bool, object]:
        body = gateway.get("/balance").json()
        return body["unlocked"] >= 10 * XMR, body

    wait_until(
        "10 XMR unlocked in the gateway's wallet (GET /balance)",
        balance,
        timeout=60,
        log=gateway.log_path,
        proc=gateway.proc,
        interval=0.2,
    )
    return gateway


def test_receive_replay_returns_first_answer(gateway: Gateway) -> None:
    """Same key and body: the stored answer, no second subaddress."""
    headers = {"Idempotency-Key": "order-1001"}
    first = gateway.post("/receive", json={"amount": 5, "description": "a"}, headers=headers)
    assert first.status_code == 200
    rows = count_rows(gateway, "payment_requests")
    again = gateway.post("/receive", json={"description": "a", "amount": 5}, headers=headers)
    assert again.status_code == 200
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert count_rows(gateway, "payment_requests") == rows


def test_receive_same_key_other_body_is_422(gateway: Gateway) -> None:
    """Reusing a key for a different request is refused."""
    headers = {"Idempotency-Key": "order-1002"}
    assert gateway.post("/receive", json={"amount": 5}, headers=headers).status_code == 200
    r = gateway.post("/receive", json={"amount": 6}, headers=headers)
    assert r.status_code == 422 and r.json()["status"] == 422


def test_receive_key_released_when_wallet_unreachable(gateway: Gateway) -> None:
    """A request that provably did nothing (wallet down) can be retried with its key."""
    headers = {"Idempotency-Key": "order-1003"}
    gateway.wallet.kill()
    try:
        assert gateway.post("/receive", json={"amount": 9}, headers=headers).status_code == 503
    finally:
        gateway.wallet.restart()
    gateway.wait_ready()
    r = gateway.post("/receive", json={"amount": 9}, headers=headers)
    assert r.status_code == 200 and "idempotent-replayed" not in r.headers


def test_concurrent_payouts_with_one_key_send_once(funded: Gateway, devnet: Devnet) -> None:
    """Ten concurrent POST /transfer with the same key: one payout, the rest 409 or replays."""
    recipient = devnet.funder.call("create_address", {"account_index": 0})["address"]
    body = {"destinations": [{"amount": XMR // 10, "address": recipient}]}
    headers = {"Idempotency-Key": "payout-77"}
    payouts_before = count_rows(funded, "payouts")

    def send() -> httpx.Response:
        with httpx.Client(timeout=60) as client:
            return client.post(funded.url + "/transfer", json=body, headers=headers)

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda _: send(), range(10)))
    statuses = sorted(r.status_code for r in answers)
    assert set(statuses) <= {200, 409}, statuses
    hashes = {r.json()["tx_hash"] for r in answers if r.status_code == 200}
    assert len(hashes) == 1
    assert count_rows(funded, "payouts") == payouts_before + 1
    # A later retry replays the answer; the journal still holds one payout, sent.
    again = funded.post("/transfer", json=body, headers=headers)
    assert again.status_code == 200 and again.json()["tx_hash"] in hashes
    journal = funded.get("/payouts").json()["payouts"]
    [entry] = [p for p in journal if p["tx_hash_list"] == [next(iter(hashes))]]
    assert entry["state"] == "sent" and entry["amount"] == XMR // 10 and entry["fee"] > 0
    assert count_rows(funded, "payouts") == payouts_before + 1


def test_failed_payout_is_journaled_and_replayed(funded: Gateway, devnet: Devnet) -> None:
    """A refused payout (not enough money) is journaled as failed; its key replays the 400."""
    recipient = devnet.funder.call("create_address", {"account_index": 0})["address"]
    body = {"destinations": [{"amount": 10**17, "address": recipient}]}
    headers = {"Idempotency-Key": "payout-too-big"}
    first = funded.post("/transfer", json=body, headers=headers)
    assert first.status_code == 400 and first.json()["code"] == -17
    again = funded.post("/transfer", json=body, headers=headers)
    assert again.status_code == 400 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    entry = funded.get("/payouts").json()["payouts"][0]
    assert entry["state"] == "failed" and "money" in entry["error"]


def test_bad_idempotency_key_is_400(gateway: Gateway) -> None:
    """An over-long key is a 400."""
    r = gateway.post("/receive", json={"amount": 1}, headers={"Idempotency-Key": "k" * 300})
    assert r.status_code == 400 and "Idempotency-Key" in r.json()["message"]


def test_payout_key_released_when_the_address_check_stalls(
    funded: Gateway, devnet: Devnet, tmp_path: Path
) -> None:
    """wallet-rpc stalls on validate_address, before anything is journaled or sent: the
    answer is 503 saying nothing was sent (not a 504 that would pin the key), and the
    merchant's retry with the same key sends the payout, once."""
    primary = funded.get("/health").headers["x-moneropay-address"]
    devnet.pay(primary, XMR, mine_blocks=11)  # an unlocked output, whatever ran before
    proxy = StallingRpcProxy(funded.wallet.url)
    gw = GatewayProcess(
        tmp_path,
        proxy.url,
        str(tmp_path / "stall.sqlite3"),
        ["--address-pool-size", "0", "--wallet-timeout", "2s", "--poll-frequency", "0.5s"],
    )
    try:
        gw.start()
        wait_until(
            "an unlocked output for the payout (GET /balance)",
            lambda: (gw.get("/balance").json()["unlocked"] >= XMR, gw.get("/balance").text),
            timeout=60,
            log=gw.log_path,
            proc=gw.proc,
            interval=0.2,
        )
        recipient = devnet.funder.call("create_address", {"account_index": 0})["address"]
        body = {"destinations": [{"amount": XMR // 100, "address": recipient}]}
        headers = {"Idempotency-Key": "payout-stalled-check"}
        proxy.stall("validate_address")
        first = gw.post("/transfer", json=body, headers=headers)
        assert first.status_code == 503, first.text
        assert "nothing was sent" in first.json()["message"]
        assert proxy.stalled_calls == ["validate_address"]
        assert count_rows(gw, "payouts") == 0
        proxy.release()
        second = gw.post("/transfer", json=body, headers=headers)
        assert second.status_code == 200, second.text
        assert "idempotent-replayed" not in second.headers
        third = gw.post("/transfer", json=body, headers=headers)
        assert third.headers["idempotent-replayed"] == "true"
        assert third.json()["tx_hash"] == second.json()["tx_hash"]
        assert count_rows(gw, "payouts") == 1
    finally:
        gw.close()
        proxy.close()
