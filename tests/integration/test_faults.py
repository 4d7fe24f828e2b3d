"""Fault injection with real processes: wallet-rpc killed mid-stream, the database
connection cut or hung, the gateway SIGKILLed during a payout."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.callback_support import wait_health
from tests.integration.receiver import Receiver
from tests.integration.tcpproxy import TcpProxy
from testsupport.gateway import SYNC_WAIT, Gateway, count_rows
from testsupport.postgres import create_pg_database, drop_pg_database
from testsupport.processes import wait_until
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration
XMR = 10**12


@pytest.fixture(scope="module")
def proxied(
    devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Gateway, TcpProxy]]:
    """A gateway on PostgreSQL reached through a loopback proxy we can cut."""
    url = create_pg_database()
    proxy = TcpProxy("127.0.0.1", 5432)
    workdir: Path = tmp_path_factory.mktemp("faults")
    wallet = devnet.start_wallet_rpc(f"faults-{uuid.uuid4().hex[:6]}")
    proxied_url = url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
    gw = Gateway(
        devnet=devnet,
        wallet=wallet,
        backend="postgresql",
        db_arg=["--postgresql", proxied_url],
        workdir=workdir,
        extra_args=[
            "--callback-allow",
            "127.0.0.1",  # the receiver listens on loopback
            "--callback-retry-base",
            "0.5s",
            "--callback-timeout",
            "3s",
        ],
    )
    gw.start()
    try:
        yield gw, proxy
    finally:
        gw.close()
        wallet.stop()
        proxy.close()
        drop_pg_database(url)


def test_wallet_killed_during_a_stream_of_payments(
    proxied: tuple[Gateway, TcpProxy], devnet: Devnet, receiver: Receiver
) -> None:
    """Payments made while wallet-rpc is dead are all found, and every callback arrives."""
    gw, _ = proxied
    addresses = [gw.receive(1000 + i, callback_url=receiver.url)["address"] for i in range(5)]
    devnet.pay(addresses[0], 1000, mine_blocks=1)
    devnet.pay(addresses[1], 1001, mine_blocks=1)
    gw.wallet.kill()
    try:
        devnet.pay(addresses[2], 1002, mine_blocks=1)
        r = wait_health(gw, 503)
        assert r.json()["services"]["walletrpc"] is False
        assert gw.get(f"/receive/{addresses[0]}").status_code == 200  # reads go on
        devnet.pay(addresses[3], 1003, mine_blocks=1)
    finally:
        gw.wallet.restart()
    devnet.pay(addresses[4], 1004, mine_blocks=1)
    devnet.mine(10)
    for address in addresses:
        gw.wait_status(address, lambda s: s["complete"], timeout=60)
    receiver.wait_for(
        lambda got: len(got) >= 10, timeout=60, what="10 callbacks (confirmed, unlocked x 5)"
    )
    kinds: dict[str, list[str]] = {}
    for got in receiver.delivered():
        kinds.setdefault(got.json["address"], []).append(got.json["event"])
    for address in addresses:
        assert kinds[address][:2] == ["transfer.confirmed", "transfer.unlocked"], kinds
    assert count_rows(gw, "transfers") >= 5


def test_database_cut_then_back(
    proxied: tuple[Gateway, TcpProxy], devnet: Devnet, receiver: Receiver
) -> None:
    """Database unreachable: health says so, reads 503, and nothing paid meanwhile is lost."""
    gw, proxy = proxied
    address = gw.receive(7777, callback_url=receiver.url)["address"]
    proxy.cut()
    try:
        r = wait_health(gw, 503)  # each answer within 5 s
        assert r.json() == {
            "status": 503,
            "services": {"walletrpc": True, "postgresql": False},
            "wallet": "full",
        }
        r = gw.get(f"/receive/{address}")
        assert r.status_code == 503 and r.json()["status"] == 503
        r = gw.post("/receive", json={"amount": 1})
        assert r.status_code == 503
        page = gw.get(f"/pay/{address}")  # the customer's page stays a page
        assert page.status_code == 503 and page.headers["content-type"].startswith("text/html")
        assert "Temporarily unavailable" in page.text and "payment is safe" in page.text
        devnet.pay(address, 7777, mine_blocks=11)  # paid and unlocked while the DB is away
        time.sleep(2)  # several failed ticks (0.5 s apart) before the database is back
    finally:
        proxy.restore()
    status = gw.wait_status(address, lambda s: s["complete"], timeout=60)
    assert status["amount"]["covered"]["unlocked"] == 7777
    receiver.wait_for(
        lambda got: (
            [g.json["event"] for g in got if g.json["address"] == address]
            == ["transfer.confirmed", "transfer.unlocked"]
        ),
        timeout=SYNC_WAIT,
        what="confirmed and unlocked callbacks after the database came back",
    )
    wait_health(gw, 200)


def test_health_answers_while_database_hangs(proxied: tuple[Gateway, TcpProxy]) -> None:
    """A database that accepts connections but never answers: /health is 503 within 5 s."""
    gw, proxy = proxied
    proxy.blackhole()
    try:
        # Each answer within 5 s; the first may still be a cached 200 from just before.
        r = wait_health(gw, 503)
        assert r.json()["services"]["postgresql"] is False
    finally:
        proxy.restore()
    wait_health(gw, 200, timeout=30)


def test_health_answers_while_wallet_hangs(
    devnet: Devnet, proxied: tuple[Gateway, TcpProxy]
) -> None:
    """A wallet-rpc that never answers: /health is 503 with walletrpc false within 5 s."""
    gw, _ = proxied
    wallet_proxy = TcpProxy("127.0.0.1", gw.wallet.port)
    hung = Gateway(
        devnet=devnet,
        wallet=gw.wallet,
        backend="postgresql",
        db_arg=gw.db_arg,
        workdir=gw.workdir / "hung",
        extra_args=["--rpc-address", f"http://127.0.0.1:{wallet_proxy.port}/json_rpc"],
    )
    hung.workdir.mkdir(exist_ok=True)
    hung.start()
    try:
        wallet_proxy.blackhole()
        r = wait_health(hung, 503)  # each answer within 5 s
        assert r.json()["services"] == {"walletrpc": False, "postgresql": True}
    finally:
        hung.close()
        wallet_proxy.close()


def test_gateway_killed_during_payout_never_pays_twice(
    proxied: tuple[Gateway, TcpProxy], devnet: Devnet
) -> None:
    """SIGKILL while a payout is in flight: the journal shows it and a retry cannot repeat it."""
    gw, _ = proxied
    primary = gw.get("/health").headers["x-moneropay-address"]
    devnet.pay(primary, 5 * XMR, mine_blocks=11)

    def balance() -> tuple[bool, object]:
        body = gw.get("/balance").json()
        return body["unlocked"] >= 5 * XMR, body

    wait_until(
        "5 XMR unlocked in the gateway's wallet (GET /balance)",
        balance,
        timeout=60,
        log=gw.log_path,
        proc=gw.proc,
        interval=0.2,
    )
    recipient = devnet.funder.call("create_address", {"account_index": 0})["address"]
    body = {"destinations": [{"amount": XMR, "address": recipient}]}
    headers = {"Idempotency-Key": "killed-payout"}
    journal_before = count_rows(gw, "payouts")

    def send() -> None:
        with contextlib.suppress(httpx.HTTPError):  # the gateway dies under us
            httpx.post(gw.url + "/transfer", json=body, headers=headers, timeout=30)

    sender = threading.Thread(target=send)
    sender.start()

    def journal() -> tuple[bool, int]:
        rows = count_rows(gw, "payouts")
        return rows > journal_before, rows

    # Journaled before the wallet call: kill it between the two.
    wait_until(
        f"the payout journaled (more than {journal_before} rows in payouts)",
        journal,
        timeout=20,
        log=gw.log_path,
        proc=gw.proc,
        interval=0.005,
    )
    gw.kill()
    sender.join()
    gw.start()
    r = gw.post("/transfer", json=body, headers=headers)
    assert r.status_code in (200, 409), r.text
    [entry] = gw.get("/payouts").json()["payouts"][:1]
    assert entry["state"] in ("requested", "sent")
    assert count_rows(gw, "payouts") == journal_before + 1
    devnet.mine(1)
    gw.wallet.call("refresh")
    out = gw.wallet.call("get_transfers", {"out": True, "pending": True, "pool": True})
    sent = [t for t in out.get("out", []) + out.get("pending", []) if t["amount"] == XMR]
    assert len(sent) <= 1, sent
