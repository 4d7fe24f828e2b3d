"""/metrics, GET /status and ``xmrgate status`` on a running gateway (regtest, both databases):
scraped before and after a payment, the values move as they should."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.callback_support import XMR, mine_until_unlocked, wait_kinds
from tests.integration.receiver import Receiver
from tests.unit.test_metrics import Samples, samples, value
from testsupport.gateway import SYNC_WAIT, Gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

READ_KEY = "prometheus-reads-0123456789"
RECEIVE_KEY = "shop-receives-0123456789"
ADMIN_KEY = "admin-does-all-0123456789"
GATEWAY_ARGS = [
    "--callback-retry-base",
    "0.5s",
    "--api-key",
    f"{READ_KEY}:read {RECEIVE_KEY}:receive {ADMIN_KEY}",
]


def scrape(gateway: Gateway, key: str = READ_KEY) -> Samples:
    """One scrape as Prometheus does it (bearer token), every sample by (name, labels)."""
    answer = gateway.get("/metrics", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=")
    return samples(answer.text)


class Figures(dict[tuple[str, frozenset[tuple[str, str]]], float]):
    """A scrape that shows only its gauges and callback counters in failure messages."""

    def __repr__(self) -> str:
        shown = ("xmrgate_sync_height", "xmrgate_wallet_height", "xmrgate_callback")
        return repr({k: v for k, v in self.items() if k[0].startswith(shown)})


@pytest.fixture
def admin(gateway: Gateway) -> Gateway:
    """The module's gateway, its test client holding the key with every scope."""
    gateway.client.headers["Authorization"] = f"Bearer {ADMIN_KEY}"
    return gateway


def test_metrics_need_a_key_with_the_read_scope(admin: Gateway) -> None:
    assert admin.get("/metrics", headers={"Authorization": ""}).status_code == 401
    refused = admin.get("/metrics", headers={"Authorization": f"Bearer {RECEIVE_KEY}"})
    assert refused.status_code == 403
    assert scrape(admin)[("xmrgate_database_up", frozenset())] == 1


def test_metrics_move_with_a_payment_and_its_callbacks(
    admin: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """Pay a request, unlock it, deliver its callbacks (one try refused): every figure moves."""
    before = scrape(admin)
    receiver.responses = [500]  # the first try fails: one "retrying", then delivered
    created = admin.receive(XMR, description="metrics", callback_url=receiver.url)
    address = created["address"]
    mid = scrape(admin)
    assert value(mid, "xmrgate_payment_requests", status="waiting") == (
        value(before, "xmrgate_payment_requests", status="waiting") + 1
    )

    devnet.pay(address, XMR, mine_blocks=1)
    mine_until_unlocked(devnet, devnet.height() - 1)
    top = devnet.height()
    wait_kinds(receiver, address, ["transfer.confirmed", "transfer.unlocked"])

    def settled() -> Samples:
        return Figures(scrape(admin))

    after = admin.wait_for(
        f"the scrape to show sync height {top} and no pending callback",
        settled,
        lambda s: (
            value(s, "xmrgate_sync_height") >= top
            and value(s, "xmrgate_callbacks_pending") == 0
            and value(s, "xmrgate_callback_deliveries_total", result="delivered")
            >= value(before, "xmrgate_callback_deliveries_total", result="delivered") + 2
        ),
        SYNC_WAIT,
    )

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    # Heights: the gateway synced the blocks we mined; the wallet is not behind it.
    assert value(after, "xmrgate_sync_height") > value(before, "xmrgate_sync_height")
    assert value(after, "xmrgate_wallet_height") >= value(after, "xmrgate_sync_height")
    assert delta("xmrgate_sync_tick_duration_seconds_count") > 0
    assert delta("xmrgate_sync_tick_failures_total", wallet="main") == 0
    assert value(after, "xmrgate_sync_last_tick_timestamp_seconds", wallet="main") > 0
    # Callbacks: confirmed + unlocked delivered, the refused first try counted as retrying.
    assert delta("xmrgate_callback_deliveries_total", result="delivered") == 2
    assert delta("xmrgate_callback_deliveries_total", result="retrying") == 1
    assert delta("xmrgate_callback_deliveries_total", result="failed") == 0
    assert delta("xmrgate_callback_delivery_delay_seconds_count") == 2
    assert delta("xmrgate_callback_delivery_delay_seconds_sum") > 0.4  # waited >= one retry
    assert value(after, "xmrgate_callbacks_failed") == 0
    # The request went from waiting to complete.
    assert delta("xmrgate_payment_requests", status="complete") == 1
    assert value(after, "xmrgate_payment_requests", status="waiting") == value(
        before, "xmrgate_payment_requests", status="waiting"
    )
    # wallet-rpc calls of the ticks, by method.
    for method in ("refresh", "get_height", "get_transfers"):
        assert delta("xmrgate_wallet_rpc_duration_seconds_count", method=method) > 0, method
    assert value(after, "xmrgate_address_pool_size") > 0


def test_http_requests_counted_by_route(admin: Gateway) -> None:
    """Three GET /balance and one refused /metrics show up exactly, by route template."""
    before = scrape(admin)
    for _ in range(3):
        assert admin.get("/balance").status_code == 200
    admin.get("/metrics", headers={"Authorization": "Bearer not-a-key-0123456789"})
    after = scrape(admin)
    name = "xmrgate_http_requests_total"
    for route, status, n in [
        ("/balance", "200", 3),
        ("/metrics", "401", 1),
        ("/metrics", "200", 1),
    ]:
        got = value(after, name, route=route, method="GET", status=status)
        assert got - value(before, name, route=route, method="GET", status=status) == n, route
    assert (
        value(after, "xmrgate_http_request_duration_seconds_count", route="/balance", method="GET")
        >= 3
    )


def run_status(
    gateway: Gateway, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``xmrgate status --url <gateway>`` as an operator runs it."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("XMRGATE_")}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "xmrgate", "status", "--url", gateway.url, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )


def test_status_command_shows_the_overview(admin: Gateway, tmp_path: Path) -> None:
    """The command prints GET /status's figures; the key comes from the environment or a file."""
    done = run_status(admin, env={"XMRGATE_API_KEY": READ_KEY})
    assert done.returncode == 0, done.stderr
    status: dict[str, Any] = admin.get("/status").json()
    text = done.stdout
    assert text.splitlines()[0].endswith(": healthy"), text
    assert f"height {status['sync']['height']}, {status['sync']['behind']} blocks behind" in text
    assert "walletrpc" in text and admin.backend in text
    counts = status["payment_requests"]
    assert f"{counts['complete']} complete" in text and f"{counts['waiting']} waiting" in text
    assert "XMR total" in text and "pending" in text and "address pool" in text
    assert status["health"]["status"] == 200 and status["problems"] == []
    assert status["sync"]["behind"] is not None and status["sync"]["behind"] >= 0
    assert set(status["wallet"]) == {"mode", "height"}

    key_file = tmp_path / "keys"
    key_file.write_text(f"# the key for xmrgate status\n{READ_KEY}:read\n")
    as_json = run_status(admin, "--json", "--api-key-file", str(key_file))
    assert as_json.returncode == 0, as_json.stderr
    assert httpx.Response(200, content=as_json.stdout).json()["version"] == status["version"]

    refused = run_status(admin)
    assert refused.returncode == 2
    assert "HTTP 401" in refused.stderr and "XMRGATE_API_KEY" in refused.stderr
    down = run_status(admin, "--url", "http://127.0.0.1:9", env={"XMRGATE_API_KEY": READ_KEY})
    assert down.returncode == 2 and "did not answer" in down.stderr
