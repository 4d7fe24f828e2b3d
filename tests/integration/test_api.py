"""Every endpoint of the spec over HTTP, against a real regtest wallet, on both databases."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from tests.integration.callback_support import (
    TRANSACTION_KEYS,
    UNLOCK_BLOCKS,
    log_mark,
    wait_health,
    wait_log,
)
from testsupport.gateway import SYNC_WAIT, Gateway, count_rows
from testsupport.processes import wait_until
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

RFC3339_FRACTION = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
XMR = 10**12


def check_transaction(tx: dict[str, Any]) -> None:
    """Every field of an incoming transaction has the spec's type."""
    assert set(tx) == TRANSACTION_KEYS
    for key in ("amount", "confirmations", "fee", "height", "unlock_time"):
        assert type(tx[key]) is int, key
    assert type(tx["double_spend_seen"]) is bool
    assert type(tx["locked"]) is bool
    assert RFC3339.match(tx["timestamp"])
    assert re.fullmatch(r"[0-9a-f]{64}", tx["tx_hash"])


@pytest.fixture(scope="module")
def funded(gateway: Gateway, devnet: Devnet) -> Gateway:
    """The gateway's wallet holds 20 unlocked XMR for payouts."""
    primary = gateway.get("/health").headers["x-moneropay-address"]
    devnet.pay(primary, 20 * XMR, mine_blocks=11)

    def balance() -> tuple[bool, dict[str, Any]]:
        body: dict[str, Any] = gateway.get("/balance").json()
        return body["unlocked"] >= 20 * XMR, body

    wait_until(
        "20 XMR unlocked in the gateway's wallet (GET /balance)",
        balance,
        timeout=60,
        log=gateway.log_path,
        proc=gateway.proc,
        interval=0.2,
    )
    return gateway


def test_create_payment_request_fields(gateway: Gateway) -> None:
    """POST /receive answers with the receive record, typed as the spec says."""
    r = gateway.post("/receive", json={"amount": 123, "description": "order #1"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    # The spec's receive record, plus the invoice fields (docs/invoices.md).
    invoice_fields = {"expires_at", "underpay_tolerance", "status", "due"}
    assert set(body) == {"address", "amount", "description", "created_at"} | invoice_fields
    assert (body["expires_at"], body["status"], body["due"]) == (None, "waiting", 123)
    assert isinstance(body["address"], str) and len(body["address"]) == 95
    assert body["address"].startswith("8")
    assert body["amount"] == 123
    assert body["description"] == "order #1"
    assert RFC3339_FRACTION.match(body["created_at"])
    assert r.headers["x-moneropay-address"].startswith("4")


def test_new_request_status_is_empty(gateway: Gateway) -> None:
    """A fresh request has zero coverage, an empty transactions array and "" description."""
    created = gateway.receive(5)
    body = gateway.status(created["address"])
    assert body == {
        "amount": {"expected": 5, "covered": {"total": 0, "unlocked": 0}, "due": 5},
        "complete": False,
        "description": "",
        "created_at": created["created_at"],
        "transactions": [],
        # Invoices (docs/invoices.md): no expires_in, so no expiry; nothing received yet.
        "expires_at": None,
        "status": "waiting",
    }


def _mined_total(status: dict[str, Any]) -> int:
    """The covered total once every listed transfer is in a block (else -1)."""
    if any(t["height"] == 0 for t in status["transactions"]):
        return -1
    total: int = status["amount"]["covered"]["total"]
    return total


def test_payment_in_two_parts_completes_after_unlock(gateway: Gateway, devnet: Devnet) -> None:
    """Two partial payments add up; complete turns true only once both are unlocked."""
    created = gateway.receive(3 * XMR, description="two parts")
    address = created["address"]
    tx1 = devnet.pay(address, 1 * XMR, mine_blocks=1)
    # covered.total counts pool transfers too: a tick between relay and block sees tx1
    # in the pool (height 0), so wait for it mined, not only for the total.
    body = gateway.wait_status(address, lambda s: _mined_total(s) == 1 * XMR)
    assert body["complete"] is False
    assert body["amount"]["covered"]["unlocked"] == 0
    [tx] = body["transactions"]
    check_transaction(tx)
    assert tx["tx_hash"] == tx1 and tx["amount"] == 1 * XMR and tx["locked"] is True
    assert tx["confirmations"] == 1

    tx2 = devnet.pay(address, 2 * XMR, mine_blocks=1)
    body = gateway.wait_status(address, lambda s: _mined_total(s) == 3 * XMR)
    assert body["complete"] is False, "covered but still locked must not be complete"
    assert {t["tx_hash"] for t in body["transactions"]} == {tx1, tx2}

    heights = {t["tx_hash"]: t["height"] for t in body["transactions"]}
    # tx2 was sent after tx1 was mined, so it is in a later block; pay() may have mined
    # extra blocks before sending it, so count from real heights.
    assert heights[tx2] > heights[tx1], heights
    # Partly unlocked: tx1 at 10 confirmations (maybe more), tx2 still below 10.
    devnet.mine(max(heights[tx1] + UNLOCK_BLOCKS - devnet.height(), 0))
    assert devnet.height() < heights[tx2] + UNLOCK_BLOCKS
    body = gateway.wait_status(address, lambda s: s["amount"]["covered"]["unlocked"] == 1 * XMR)
    assert body["amount"]["covered"]["total"] == 3 * XMR
    assert body["complete"] is False, "one part unlocked, the other locked: not complete"
    locked = {t["tx_hash"]: t["locked"] for t in body["transactions"]}
    assert locked == {tx1: False, tx2: True}
    devnet.mine(heights[tx2] + UNLOCK_BLOCKS - devnet.height())
    body = gateway.wait_status(address, lambda s: s["complete"])
    assert body["amount"] == {
        "expected": 3 * XMR,
        "covered": {"total": 3 * XMR, "unlocked": 3 * XMR},
        "due": 0,
    }
    assert all(t["locked"] is False and t["confirmations"] >= 10 for t in body["transactions"])
    for t in body["transactions"]:
        check_transaction(t)


def test_min_max_filter_on_real_heights(gateway: Gateway, devnet: Devnet) -> None:
    """?min=&max= keep transactions whose block height is within both bounds (inclusive)."""
    address = gateway.receive(0)["address"]
    devnet.pay(address, 1000, mine_blocks=1)
    devnet.mine(1)
    devnet.pay(address, 2000, mine_blocks=1)
    body = gateway.wait_status(address, lambda s: len(s["transactions"]) == 2)
    h1, h2 = sorted(t["height"] for t in body["transactions"])
    assert h2 > h1
    assert [t["height"] for t in gateway.status(address, min=h1, max=h1)["transactions"]] == [h1]
    assert [t["height"] for t in gateway.status(address, min=h2)["transactions"]] == [h2]
    assert [t["height"] for t in gateway.status(address, max=h2 - 1)["transactions"]] == [h1]
    assert len(gateway.status(address, min=h1, max=h2)["transactions"]) == 2
    filtered = gateway.status(address, min=h2 + 1)
    assert filtered["transactions"] == []
    # Totals cover every transfer, whatever the filter.
    assert filtered["amount"]["covered"]["total"] == 3000


def test_delete_forgets_request(gateway: Gateway) -> None:
    """DELETE /receive/:address removes it; a second DELETE and a GET are 404."""
    address = gateway.receive(1)["address"]
    r = gateway.delete(f"/receive/{address}")
    assert r.status_code == 200
    assert gateway.get(f"/receive/{address}").status_code == 404
    r = gateway.delete(f"/receive/{address}")
    assert r.status_code == 404 and r.json()["status"] == 404


def test_balance_fields(funded: Gateway) -> None:
    """GET /balance gives integer total and unlocked amounts."""
    body = funded.get("/balance").json()
    assert set(body) == {"total", "unlocked"}
    assert type(body["total"]) is int and type(body["unlocked"]) is int
    assert body["total"] >= body["unlocked"] >= 20 * XMR


def test_transfer_to_two_destinations(funded: Gateway, devnet: Devnet) -> None:
    """POST /transfer pays two recipients; GET /transfer reads it back, pending then completed."""
    # Recipients outside the gateway's wallet: wallet2 does not count a payment from
    # account 0 to its own subaddress as incoming (docs/monero-notes.md).
    a = devnet.funder.call("create_address", {"account_index": 0})["address"]
    b = devnet.funder.call("create_address", {"account_index": 0})["address"]
    payouts_before = count_rows(funded, "payouts")
    r = funded.post(
        "/transfer",
        json={
            "destinations": [{"amount": 1 * XMR, "address": a}, {"amount": 2 * XMR, "address": b}]
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"amount", "fee", "tx_hash", "tx_hash_list", "destinations"}
    assert body["amount"] == 3 * XMR
    assert type(body["fee"]) is int and body["fee"] > 0
    assert body["tx_hash"] == body["tx_hash_list"][0]
    assert body["destinations"] == [
        {"amount": 1 * XMR, "address": a},
        {"amount": 2 * XMR, "address": b},
    ]
    assert count_rows(funded, "payouts") == payouts_before + 1

    info = funded.get(f"/transfer/{body['tx_hash']}").json()
    assert info["state"] == "pending"
    assert info["amount"] == 3 * XMR
    assert info["fee"] == body["fee"]
    assert sorted(d["amount"] for d in info["transfer"]) == [1 * XMR, 2 * XMR]
    assert {d["address"] for d in info["transfer"]} == {a, b}

    devnet.mine(1)

    def transfer_state() -> tuple[bool, dict[str, Any]]:
        info: dict[str, Any] = funded.get(f"/transfer/{body['tx_hash']}").json()
        return info.get("state") == "completed", info

    info = wait_until(
        f"GET /transfer/{body['tx_hash']} to say completed after a block",
        transfer_state,
        timeout=SYNC_WAIT,
        log=funded.log_path,
        proc=funded.proc,
        interval=0.2,
    )
    assert info["confirmations"] >= 1 and info["height"] > 0
    assert type(info["double_spend_seen"]) is bool and type(info["unlock_time"]) is int
    assert RFC3339.match(info["timestamp"]) and info["tx_hash"] == body["tx_hash"]


def test_transfer_insufficient_funds_is_4xx(funded: Gateway) -> None:
    """More than the wallet holds: a clear 400 with the wallet's error code, journaled as failed."""
    a = funded.receive(0)["address"]
    r = funded.post("/transfer", json={"destinations": [{"amount": 10**18, "address": a}]})
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["status"] == 400 and body["code"] == -17
    assert "money" in body["message"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "body"),
        (b"{}", "amount"),
        (b'{"amount": -1}', "amount"),
        (b'{"amount": 1.5}', "amount"),
        (b'{"amount": "100"}', "amount"),
        (b'{"amount": true}', "amount"),
        (b'{"amount": 99999999999999999999999}', "amount"),
        (b'{"amount": 1, "callback_url": "ftp://x/y"}', "callback_url"),
        (b'{"amount": 1, "callback_url": "not a url"}', "callback_url"),
        (b'{"amount": 1, "description": "' + b"x" * 1025 + b'"}', "description"),
    ],
    ids=[
        "malformed-json",
        "not-an-object",
        "missing-amount",
        "negative-amount",
        "float-amount",
        "string-amount",
        "bool-amount",
        "huge-amount",
        "ftp-callback",
        "junk-callback",
        "long-description",
    ],
)
def test_receive_bad_input(gateway: Gateway, body: bytes, fragment: str) -> None:
    """POST /receive rejects bad input with a 400 JSON error and writes no row."""
    before = count_rows(gateway, "payment_requests")
    r = gateway.post("/receive", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    error = r.json()
    assert error["status"] == 400 and fragment in error["message"]
    assert count_rows(gateway, "payment_requests") == before


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ({"min": "5", "max": "4"}, 400),
        ({"min": "abc"}, 400),
        ({"max": "1.5"}, 400),
        ({"min": "-1"}, 400),
    ],
    ids=["min-above-max", "min-not-int", "max-not-int", "min-negative"],
)
def test_receive_status_bad_heights(gateway: Gateway, query: dict[str, str], status: int) -> None:
    """Bad ?min=/?max= give a 400 JSON error."""
    address = gateway.receive(1)["address"]
    r = gateway.get(f"/receive/{address}", params=query)
    assert r.status_code == status
    assert r.json()["status"] == status and r.json()["message"]


def test_unknown_address_is_404(gateway: Gateway) -> None:
    """An address with no payment request is a 404 JSON error."""
    r = gateway.get("/receive/" + "8" + "a" * 94)
    assert r.status_code == 404
    assert r.json() == {"status": 404, "message": "no payment request for this address"}


@pytest.mark.parametrize(
    ("destinations", "fragment"),
    [
        ([], "destinations"),
        ([{"amount": 1, "address": "X"}] * 17, "destinations"),
        ([{"amount": 0, "address": "X"}], "amount"),
        ([{"amount": -5, "address": "X"}], "amount"),
        ([{"address": "X"}], "amount"),
        ([{"amount": 1}], "address"),
    ],
    ids=["empty", "seventeen", "zero-amount", "negative-amount", "no-amount", "no-address"],
)
def test_transfer_bad_input(gateway: Gateway, destinations: list[Any], fragment: str) -> None:
    """POST /transfer rejects bad destinations with 400 before any wallet call or journal row."""
    before = count_rows(gateway, "payouts")
    r = gateway.post("/transfer", json={"destinations": destinations})
    assert r.status_code == 400, r.text
    assert fragment in r.json()["message"]
    assert count_rows(gateway, "payouts") == before


def test_transfer_rejects_foreign_network_address(gateway: Gateway) -> None:
    """A testnet (or garbage) address is refused by validate_address before sending."""
    testnet = (
        "9wviCeWe2D8XS82k2ovp5EUYLzBt9pYNW2LXUFsZiv8S3Mt21FZ5qQaAroko1enzw3eGr9qC7X1D7Geoo2Rr"
        "AotYPwq9Gm8"
    )
    before = count_rows(gateway, "payouts")
    for address in (testnet, "8notanaddress"):
        r = gateway.post("/transfer", json={"destinations": [{"amount": 1, "address": address}]})
        assert r.status_code == 400, r.text
        assert "not a valid address" in r.json()["message"]
    assert count_rows(gateway, "payouts") == before


@pytest.mark.parametrize(
    ("tx_hash", "status"),
    [("zz" * 32, 400), ("abc", 400), ("ab" * 33, 400), ("ab" * 32, 404)],
    ids=["non-hex", "short", "long", "unknown"],
)
def test_get_transfer_bad_hash(gateway: Gateway, tx_hash: str, status: int) -> None:
    """Malformed tx hashes are 400, well-formed unknown ones 404."""
    r = gateway.get(f"/transfer/{tx_hash}")
    assert r.status_code == status
    assert r.json()["status"] == status


def test_unknown_route_is_json_404(gateway: Gateway) -> None:
    """Even a path the API does not have answers with the JSON error shape."""
    r = gateway.get("/nope")
    assert r.status_code == 404 and r.json()["status"] == 404


def test_health_ok(gateway: Gateway) -> None:
    """GET /health is 200 with walletrpc and the database's own key true."""
    r = gateway.get("/health")
    assert r.status_code == 200
    # MoneroPay's shape, plus the wallet's mode (additive).
    assert r.json() == {
        "status": 200,
        "services": {"walletrpc": True, gateway.backend: True},
        "wallet": "full",
    }


def test_wallet_down_health_and_errors(gateway: Gateway) -> None:
    """With wallet-rpc stopped: health 503 walletrpc false, writes 503 JSON, reads still served."""
    address = gateway.receive(7)["address"]
    before = count_rows(gateway, "payment_requests")
    gateway.wallet.kill()
    try:
        r = wait_health(gateway, 503)
        assert r.json() == {
            "status": 503,
            "services": {"walletrpc": False, gateway.backend: True},
            "wallet": "full",
        }
        # POST /receive answers from the address pool without the wallet;
        # test_address_pool.py covers the empty pool with the wallet down.
        r = gateway.post("/receive", json={"amount": 1})
        assert r.status_code == 200, r.text
        assert count_rows(gateway, "payment_requests") == before + 1
        r = gateway.post(
            "/transfer", json={"destinations": [{"amount": 1, "address": r.json()["address"]}]}
        )
        assert r.status_code == 503 and r.json()["status"] == 503
        assert gateway.get("/balance").status_code == 503
        # Reads come from the database: unaffected.
        assert gateway.status(address)["amount"]["expected"] == 7
    finally:
        gateway.wallet.restart()
    gateway.wait_ready()
    assert gateway.receive(1)["amount"] == 1


def test_wallet_killed_before_saving_never_reuses_a_subaddress(gateway: Gateway) -> None:
    """After wallet-rpc is SIGKILLed (losing unsaved subaddresses), new requests stay distinct."""
    earlier = {gateway.receive(1)["address"] for _ in range(3)}
    gateway.wallet.kill()
    gateway.wallet.restart()
    gateway.wait_ready()
    later = {gateway.receive(1)["address"] for _ in range(3)}
    assert len(later) == 3
    assert not earlier & later


def test_gateway_started_before_wallet_rpc_waits_for_it(
    devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """wallet-rpc not up yet: the gateway serves 503s, logs why, and becomes ready once it is."""
    from testsupport.gateway import close_gateway, start_gateway

    gw = start_gateway(devnet, "sqlite", tmp_path_factory.mktemp("early"))
    try:
        gw.stop()
        gw.wallet.kill()
        mark = log_mark(gw)
        gw.start(wait=False)

        def health() -> tuple[bool, str | httpx.Response]:
            try:
                return True, gw.get("/health")
            except httpx.TransportError as exc:  # not listening yet
                return False, f"{type(exc).__name__}: {exc}"

        r = wait_until(
            "the gateway to answer /health without its wallet-rpc",
            health,
            timeout=60,
            log=gw.log_path,
            proc=gw.proc,
            interval=0.2,
        )
        assert isinstance(r, httpx.Response)
        assert r.status_code == 503 and r.json()["services"]["walletrpc"] is False
        # Wallet-dependent endpoints are 503; POST /receive is served from the address
        # pool the first start filled (receiving never waits on the wallet).
        assert gw.get("/balance").status_code == 503
        assert gw.post("/receive", json={"amount": 1}).status_code == 200
        wait_log(gw, "not usable yet", since=mark)  # fails at once if the process exits
        time.sleep(1.5)  # a few retries later (1 s, 2 s backoff), still alive
        assert gw.proc is not None and gw.proc.poll() is None, "the gateway must not crash"
        gw.wallet.restart()
        # The request has the gateway try the wallet again at once instead of
        # answering 503 until the end of its back-off (1, 2, 4 ... 30 s); it waits for
        # that attempt and the check (up to 5 s) and gets its answer.
        started = time.monotonic()
        balance = gw.get("/balance")
        assert balance.status_code == 200, balance.text
        print(f"GET /balance right after wallet-rpc came back: {time.monotonic() - started:.2f}s")
        gw.wait_ready()
        assert gw.receive(1)["amount"] == 1
    finally:
        close_gateway(gw)
