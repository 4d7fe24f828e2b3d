"""Wallet identity: a gateway started on another wallet than its database's stops writing.

Real processes: the module's gateway (wallet A) records its wallet; the same database
is then served against a second wallet-rpc (wallet B). Health must say 503 naming both
addresses, POST /receive and POST /transfer must be 503, reads keep working, and a
payment to B's subaddress with A's request index is never credited. Back on A,
everything resumes.
"""

from __future__ import annotations

import time

import pytest

from testsupport.gateway import FAST_POLL, Gateway, GatewayProcess, count_rows
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

XMR = 10**12
# A wallet changed behind the gateway is not announced by monerod: only the poll sees it
# (the tests' gateways poll every 2 s otherwise).
GATEWAY_ARGS = [*FAST_POLL]


def _primary(wallet_url_owner: object) -> str:
    result = wallet_url_owner.call("get_address", {"account_index": 0})  # type: ignore[attr-defined]
    return str(result["address"])


def test_other_wallet_is_refused_and_nothing_is_credited(
    gateway: Gateway, devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> None:
    created = gateway.receive(XMR, description="identity")
    address = created["address"]
    index_on_a = gateway.wallet.call("get_address_index", {"address": address})["index"]["minor"]
    wallet_a = _primary(gateway.wallet)
    gateway.stop()
    other = devnet.start_wallet_rpc(f"other-{int(time.time() * 1000)}")
    other.call("create_wallet", {"filename": "wallet", "language": "English"})
    # Wallet B gets subaddresses up to A's index, so its subaddress N exists and is paid.
    other.call("create_address", {"account_index": 0, "count": max(index_on_a, 1)})
    wallet_b = _primary(other)
    pooled = count_rows(gateway, "address_pool")
    # A pool below its low-water mark: a gateway that refilled it from B would offer B's
    # subaddresses to A's customers once A is back.
    wrong = GatewayProcess(
        tmp_path_factory.mktemp("wrong-wallet"),
        other.url,
        gateway.database,
        [
            "--poll-frequency",
            "0.5s",
            "--address-pool-size",
            str(pooled + 100),
            "--address-pool-low-water",
            str(pooled + 50),
        ],
    )
    try:
        wrong.start(wait=False)

        # Until its wallet is checked the gateway says "has not opened its wallet yet" (also
        # 503): wait for the verdict, which names wallet B, not for any 503.
        health = wrong.wait_for(
            "health to name the wrong wallet",
            wrong.health,
            lambda body: body.get("status") == 503 and wallet_b in str(body.get("message")),
            timeout=60,
        )
        message = str(health["message"])
        assert wallet_a in message and wallet_b in message, health
        receive = wrong.post("/receive", json={"amount": 1})
        assert receive.status_code == 503 and wallet_b in receive.json()["message"]
        transfer = wrong.post(
            "/transfer", json={"destinations": [{"amount": 1, "address": wallet_a}]}
        )
        assert transfer.status_code == 503, transfer.text
        assert wrong.get(f"/receive/{address}").status_code == 200
        # Pay B's subaddress with A's index: a gateway that synced B would credit it.
        b_sub = other.call("get_address", {"account_index": 0, "address_index": [index_on_a]})[
            "addresses"
        ][0]["address"]
        devnet.pay(b_sub, XMR, mine_blocks=1)
        time.sleep(3)
        assert wrong.get(f"/receive/{address}").json()["transactions"] == []
        assert count_rows(wrong, "address_pool") == pooled, "the pool took wallet B's subaddresses"
        log = wrong.log_tail(400)
        assert "wrong wallet open" in log
        # Regression: "wallet ready" was logged for the wallet the guard had just refused.
        assert "wallet ready" not in log and "its wallet cannot be used" in log
    finally:
        wrong.close()
        other.stop()
    gateway.start()
    assert gateway.get("/health").status_code == 200
    assert gateway.post("/receive", json={"amount": 1}).status_code == 200
