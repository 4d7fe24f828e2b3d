"""A gateway on a view-only wallet: payments work, payouts are refused, /health says so.

Real processes: for each database a merchant's full wallet is funded and stopped (it is
the cold wallet); a fresh wallet-rpc gets its view-only copy through the real command
line (``xmrgate wallet init --view-only``), and the gateway runs on it. One cold wallet
per database, not one for both: two gateways on the same keys hand out the same
subaddresses (index 1 of each is one address), so one database's request would also be
credited with the other's payment. Before this,
``POST /transfer`` on such a wallet answered 200 with the hashes of transactions that
were never signed nor sent: the balance is there, so only the mode can refuse it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.receiver import Receiver
from tests.integration.test_refunds import pay_with_key
from testsupport.gateway import Gateway, close_gateway
from testsupport.postgres import create_pg_database
from xmrgate.devnet import Devnet, WalletRpc

pytestmark = pytest.mark.integration

XMR = 10**12
FUNDS = 3 * XMR


@dataclass(frozen=True)
class ColdWallet:
    """The merchant's full wallet: its address, view key, files and creation height."""

    address: str
    view_key: str
    height: int
    files: Path  # the wallet-rpc's --wallet-dir, holding cold and cold.keys


def wallet_init(*args: str) -> subprocess.CompletedProcess[str]:
    """``xmrgate wallet init ARGS`` as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "xmrgate", "wallet", "init", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _make_cold(devnet: Devnet) -> ColdWallet:
    """A funded full wallet, stopped once funded (its files stay)."""
    rpc = devnet.start_wallet_rpc(f"cold-{uuid.uuid4().hex[:6]}")
    try:
        rpc.call("create_wallet", {"filename": "cold", "language": "English"})
        address = str(rpc.call("get_address", {"account_index": 0})["address"])
        view_key = str(rpc.call("query_key", {"key_type": "view_key"})["key"])
        height = devnet.height()
        devnet.pay(address, FUNDS, mine_blocks=11)  # unlocked: a payout could be built
    finally:
        rpc.stop()
    return ColdWallet(address, view_key, height, rpc.wallet_dir)


@pytest.fixture(scope="module")
def colds(devnet: Devnet) -> Callable[[str], ColdWallet]:
    """The cold wallet of each database (``"sqlite"``, ``"postgresql"``), made when first asked."""
    made: dict[str, ColdWallet] = {}

    def cold_of(backend: str) -> ColdWallet:
        if backend not in made:
            made[backend] = _make_cold(devnet)
        return made[backend]

    return cold_of


@pytest.fixture(scope="module")
def cold(colds: Callable[[str], ColdWallet]) -> ColdWallet:
    """One cold wallet, for the tests that need its keys but no gateway."""
    return colds("sqlite")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def view_gateway(
    request: pytest.FixtureRequest,
    devnet: Devnet,
    colds: Callable[[str], ColdWallet],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Gateway]:
    """The gateway on a view-only copy of its database's cold wallet (``xmrgate wallet init``)."""
    backend = request.param
    cold = colds(backend)
    workdir = tmp_path_factory.mktemp(f"view-only-{backend}")
    rpc = devnet.start_wallet_rpc(f"view-{backend}-{uuid.uuid4().hex[:6]}")
    made = wallet_init(
        "--view-only",
        "--rpc-address",
        rpc.url,
        "--address",
        cold.address,
        "--view-key",
        cold.view_key,
        "--restore-height",
        str(cold.height),
    )
    assert made.returncode == 0, made.stderr
    assert "view-only" in made.stdout and cold.address in made.stdout
    if backend == "postgresql":
        db_arg = ["--postgresql", create_pg_database()]
    else:
        db_arg = ["--sqlite", str(workdir / "xmrgate.sqlite3")]
    gateway = Gateway(devnet=devnet, wallet=rpc, backend=backend, db_arg=db_arg, workdir=workdir)
    gateway.start()
    try:
        yield gateway
    finally:
        close_gateway(gateway)


def test_health_says_view_only(view_gateway: Gateway) -> None:
    health = view_gateway.get("/health")
    assert health.status_code == 200 and health.json()["wallet"] == "view-only", health.text


def test_payments_callbacks_and_checkout_work(
    view_gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    created = view_gateway.receive(XMR // 2, description="view-only", callback_url=receiver.url)
    address = created["address"]
    assert view_gateway.get(f"/pay/{address}").status_code == 200
    assert view_gateway.status(address)["transactions"] == [], "a fresh subaddress"
    tx_hash = devnet.pay(address, XMR // 2, mine_blocks=1)
    view_gateway.wait_status(address, lambda s: s["amount"]["covered"]["total"] == XMR // 2)
    devnet.mine(10)
    done = view_gateway.wait_status(address, lambda s: s["complete"])
    assert [(t["tx_hash"], t["amount"]) for t in done["transactions"]] == [(tx_hash, XMR // 2)]
    receiver.wait_for(lambda got: any(r.json["complete"] for r in got), what="a complete callback")


def test_payouts_are_refused_with_409_and_nothing_is_journaled(
    view_gateway: Gateway, devnet: Devnet
) -> None:
    balance = view_gateway.get("/balance").json()
    assert balance["unlocked"] >= FUNDS  # the money is there: only the mode can refuse
    body = {"destinations": [{"amount": XMR, "address": devnet.funder_address}]}
    for headers in ({}, {"Idempotency-Key": "vo-1"}, {"Idempotency-Key": "vo-1"}):
        refused = view_gateway.post("/transfer", json=body, headers=headers)
        assert refused.status_code == 409, refused.text
        answer = refused.json()
        assert answer["status"] == 409 and "view-only" in answer["message"]
        assert "tx_hash" not in answer
    assert view_gateway.get("/payouts").json()["payouts"] == []


def test_a_claimed_refund_is_not_sent_from_a_view_only_wallet(
    view_gateway: Gateway, devnet: Devnet
) -> None:
    """Refunds: a view-only wallet cannot send one (409, as payouts), the
    refund stays claimed with nothing journaled; the merchant pays it by hand from
    another wallet and records it: the view-only wallet's ``check_tx_key`` proves it,
    and the refund is confirmed after a block (the refusals: test_refunds.py)."""
    address = view_gateway.receive(XMR // 4, description="refunded")["address"]
    devnet.pay(address, XMR // 4, mine_blocks=1)
    view_gateway.wait_status(address, lambda s: any(t["height"] > 0 for t in s["transactions"]))
    made = view_gateway.post(f"/receive/{address}/refunds", json={"reason": "view-only"})
    assert made.status_code == 200, made.text
    refund = made.json()
    assert refund["amount"] == XMR // 4, "everything it received"
    claimed = view_gateway.client.post(
        refund["claim_url"],
        data={"address": devnet.funder_address},
        headers={"Origin": view_gateway.url},
    )
    assert claimed.status_code == 200, claimed.text
    refused = view_gateway.post(f"/refunds/{refund['id']}/send")
    assert refused.status_code == 409, refused.text
    assert "view-only" in refused.json()["message"], refused.text
    after = view_gateway.get(f"/refunds/{refund['id']}").json()
    assert (after["status"], after["tx_hash_list"]) == ("claimed", [])
    assert after["claim_address"] == devnet.funder_address
    assert view_gateway.get("/payouts").json()["payouts"] == []

    tx_hash, tx_key = pay_with_key(devnet, devnet.funder_address, XMR // 4)
    paid = view_gateway.post(
        f"/refunds/{refund['id']}/paid", json={"tx_hash": tx_hash, "tx_key": tx_key}
    )
    assert paid.status_code == 200, paid.text
    assert (paid.json()["status"], paid.json()["manual"]) == ("sent", True)
    devnet.mine(1)
    view_gateway.wait_for(
        "the refund paid by hand to be confirmed",
        lambda: view_gateway.get(f"/refunds/{refund['id']}").json(),
        lambda r: r["status"] == "confirmed",
        timeout=60,
    )


def test_mode_is_detected_again_after_a_reopen(
    view_gateway: Gateway, colds: Callable[[str], ColdWallet]
) -> None:
    """The operator swaps the view-only file for the full wallet of the same address and
    restarts wallet-rpc: the gateway opens it again and /health says "full"; and back."""
    cold = colds(view_gateway.backend)
    rpc: WalletRpc = view_gateway.wallet
    rpc.stop()
    _copy_wallet(rpc.wallet_dir / "wallet", rpc.wallet_dir / "view-only")
    for source, mode in (
        (cold.files / "cold", "full"),
        (rpc.wallet_dir / "view-only", "view-only"),
    ):
        rpc.stop()
        _copy_wallet(source, rpc.wallet_dir / "wallet")
        rpc.restart()  # no wallet open: the gateway's next call opens 'wallet' again
        view_gateway.wait_for(
            f'/health to say "wallet": "{mode}" after the reopen',
            view_gateway.health,
            lambda h, mode=mode: h.get("status") == 200 and h.get("wallet") == mode,
            timeout=90,
        )
    assert "opening 'wallet'" in view_gateway.log_tail(1000)


def _copy_wallet(source: Path, target: Path) -> None:
    for suffix in ("", ".keys"):
        shutil.copy(f"{source}{suffix}", f"{target}{suffix}")


def test_wallet_init_says_what_is_wrong(devnet: Devnet, cold: ColdWallet) -> None:
    """Wrong key, typo, existing wallet: a clear message, and no wallet made by mistake."""
    rpc = devnet.start_wallet_rpc(f"init-errors-{uuid.uuid4().hex[:6]}")
    try:
        wrong_key = "01" + cold.view_key[2:]
        typo = cold.address[:-2] + ("bb" if cold.address[-2:] != "bb" else "cc")
        cases = [
            (["--address", cold.address, "--view-key", wrong_key], "does not belong"),
            (["--address", typo, "--view-key", cold.view_key], "not a valid Monero address"),
            (["--address", cold.address, "--view-key", "abc"], "64 hexadecimal characters"),
        ]
        for args, says in cases:
            result = wallet_init("--view-only", "--rpc-address", rpc.url, *args)
            assert result.returncode != 0 and says in result.stderr, result.stderr
            assert not (rpc.wallet_dir / "wallet.keys").exists()
        good = ["--address", cold.address, "--view-key", cold.view_key]
        assert wallet_init("--view-only", "--rpc-address", rpc.url, *good).returncode == 0
        again = wallet_init("--view-only", "--rpc-address", rpc.url, *good)
        assert again.returncode != 0 and "already exists" in again.stderr, again.stderr
        full = wallet_init("--rpc-address", rpc.url)
        assert full.returncode != 0 and "already exists" in full.stderr
    finally:
        rpc.stop()


def test_wallet_init_creates_a_full_wallet_the_gateway_can_open(devnet: Devnet) -> None:
    """Plain ``xmrgate wallet init``: a new wallet with its spend key, closed (saved), its
    address printed; opened by name it is that address and not view-only."""
    rpc = devnet.start_wallet_rpc(f"init-full-{uuid.uuid4().hex[:6]}")
    try:
        result = wallet_init("--rpc-address", rpc.url)
        assert result.returncode == 0, result.stderr
        assert (rpc.wallet_dir / "wallet.keys").exists()
        printed = re.search(r"address: (\w+)", result.stdout)
        assert printed is not None, result.stdout
        rpc.call("open_wallet", {"filename": "wallet", "password": ""})
        opened = rpc.call("get_address", {"account_index": 0, "address_index": [0]})
        assert opened["address"] == printed.group(1)
        assert rpc.call("query_key", {"key_type": "spend_key"})["key"].strip("0") != ""
    finally:
        rpc.stop()
