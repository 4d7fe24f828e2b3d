"""The wallet's height against monerod's (``--daemon-address``), with fakes.

"Behind" in the overview compares the gateway with its wallet, so a wallet stuck behind
the network looks up to date. With a daemon address the overview (``GET /status``, the
dashboard, ``xmrgate status``) and ``/metrics`` also show monerod's height, taken from
what the sync tick last read (``DaemonClient.recent_height``), never a call per request.
Without one they say nothing new. The regtest gateway is checked in
tests/integration/test_sync_push.py; the dashboard's card in test_admin_overview_browser.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.unit.test_metrics import samples, value
from xmrgate.adapters.daemon_rpc import DaemonClient
from xmrgate.adapters.metrics import PrometheusMetrics
from xmrgate.config import Settings
from xmrgate.core.overview import DaemonFacts, Overview, StoreFacts
from xmrgate.core.wallet_status import HealthReport, WalletStatus
from xmrgate.domain.errors import DaemonUnavailable, XmrgateError
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services
from xmrgate.runtime.status_cli import render
from xmrgate.web.api.status import overview_json

TOP = "a" * 64

# ------------------------------------------------------------------ DaemonClient's cache


@dataclass
class Monerod:
    """A scripted monerod: its height, whether it answers, and the paths it was asked."""

    height: int = 1040
    up: bool = True
    asked: list[str] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(request.url.path)
        if not self.up:
            raise httpx.ConnectError("refused", request=request)
        answers = {
            "/get_height": {"status": "OK", "height": self.height, "hash": TOP},
            "/get_transaction_pool_hashes": {"status": "OK"},
            "/get_transaction_pool_stats": {"status": "OK", "pool_stats": {}},
        }
        return httpx.Response(200, json=answers[request.url.path])


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def client(monerod: Monerod, clock: Clock) -> DaemonClient:
    return DaemonClient(
        "http://monerod.test:18081",
        height_max_age=10.0,
        clock=clock,
        transport=httpx.MockTransport(monerod.handle),
    )


def test_recent_height_reuses_what_the_sync_tick_read() -> None:
    monerod, clock = Monerod(), Clock()

    async def main() -> None:
        daemon = client(monerod, clock)
        state = await daemon.chain_state()  # what RefreshGate asks before every tick
        asked = len(monerod.asked)
        clock.now += 9.0
        assert [await daemon.recent_height() for _ in range(20)] == [state.height] * 20
        assert len(monerod.asked) == asked  # not one call more
        await daemon.aclose()

    asyncio.run(main())


def test_recent_height_asks_monerod_once_when_no_read_is_recent() -> None:
    """A process whose loop does not tick asks once per max age, whatever the load."""
    monerod, clock = Monerod(), Clock()

    async def main() -> None:
        daemon = client(monerod, clock)
        heights = await asyncio.gather(*(daemon.recent_height() for _ in range(10)))
        assert heights == [1040] * 10
        assert monerod.asked == ["/get_height"]  # concurrent callers shared one call
        monerod.height = 1041
        clock.now += 5.0
        assert await daemon.recent_height() == 1040
        clock.now += 6.0
        assert await daemon.recent_height() == 1041
        assert monerod.asked == ["/get_height"] * 2
        await daemon.aclose()

    asyncio.run(main())


def test_a_daemon_that_is_down_is_not_asked_by_every_request() -> None:
    monerod, clock = Monerod(up=False), Clock()

    async def main() -> None:
        daemon = client(monerod, clock)
        for _ in range(5):
            with pytest.raises(DaemonUnavailable, match="unreachable"):
                await daemon.recent_height()
        assert monerod.asked == ["/get_height"]
        monerod.up = True
        clock.now += 11.0
        assert await daemon.recent_height() == 1040
        # A tick whose check failed is remembered too: the daemon just went away.
        monerod.up = False
        with pytest.raises(DaemonUnavailable):
            await daemon.chain_state()
        with pytest.raises(DaemonUnavailable):
            await daemon.recent_height()
        assert monerod.asked == ["/get_height"] * 3
        await daemon.aclose()

    asyncio.run(main())


# ------------------------------------------------------------------ the overview


class Heights:
    """The wallet's (or the daemon's) height, or an error."""

    def __init__(self, height: int | XmrgateError) -> None:
        self.height = height
        self.calls = 0

    async def get_height(self) -> int:
        return await self.recent_height()

    async def recent_height(self) -> int:
        self.calls += 1
        if isinstance(self.height, XmrgateError):
            raise self.height
        return self.height


class Facts:
    async def facts(self) -> StoreFacts:
        return StoreFacts(998, 0, 0, {})


class Status:
    """What the overview reads of WalletStatus."""

    async def health(self) -> HealthReport:
        return HealthReport(200, {"wallet": True, "database": True}, wallet_mode="full")

    async def balance(self, *, wait: bool = True) -> tuple[int, int]:
        return (5, 5)


def overview(daemon: Heights | None, wallet_height: int = 1000) -> Overview:
    return Overview(
        Facts(),
        cast(WalletStatus, Status()),
        Heights(wallet_height),
        PrometheusMetrics(),
        daemon=daemon,
    )


def test_report_sets_the_wallet_against_the_daemon() -> None:
    found = asyncio.run(overview(Heights(1040)).report())
    assert found.daemon == DaemonFacts(height=1040)
    assert found.blocks_behind == 2  # the gateway against its wallet, as before
    assert found.wallet_behind_daemon == 40
    assert found.problems == []
    # A wallet ahead of the daemon (another node) is not "behind".
    assert asyncio.run(overview(Heights(990)).report()).wallet_behind_daemon == 0


def test_report_without_a_daemon_address_says_nothing_of_a_daemon() -> None:
    found = asyncio.run(overview(None).report())
    assert found.daemon is None and found.wallet_behind_daemon is None
    assert overview_json(found)["daemon"] is None
    text = render("http://gw", overview_json(found))
    assert "daemon" not in text and "monerod" not in text


def test_report_names_a_daemon_that_did_not_answer() -> None:
    found = asyncio.run(overview(Heights(DaemonUnavailable("monerod unreachable"))).report())
    assert found.daemon == DaemonFacts(height=None)
    assert found.wallet_behind_daemon is None
    assert found.problems == ["daemon height: monerod unreachable"]
    assert overview_json(found)["daemon"] == {"height": None, "wallet_behind": None}
    assert "daemon        height unknown (monerod did not answer)" in render(
        "http://gw", overview_json(found)
    )


def test_status_json_and_cli_show_the_wallet_behind_the_daemon() -> None:
    body = json.loads(json.dumps(overview_json(asyncio.run(overview(Heights(1040)).report()))))
    assert body["daemon"] == {"height": 1040, "wallet_behind": 40}
    assert body["sync"] == {"height": 998, "wallet_height": 1000, "behind": 2}
    text = render("http://gw", body)
    assert "  daemon        height 1040, the wallet is 40 blocks behind it" in text.splitlines()
    body["daemon"]["wallet_behind"] = 0
    assert "  daemon        height 1040, the wallet is up to date" in render("http://gw", body)


def _scrape(found: Overview) -> dict[str, float]:
    got = samples(asyncio.run(found.exposition())[0].decode())
    return {n: value(got, n) for n, _labels in got if n.startswith("xmrgate_daemon_")}


def test_metrics_export_the_daemons_height_only_with_a_daemon_address() -> None:
    assert _scrape(overview(Heights(1040))) == {
        "xmrgate_daemon_height": 1040,
        "xmrgate_daemon_up": 1,
    }
    assert _scrape(overview(Heights(DaemonUnavailable("monerod unreachable")))) == {
        "xmrgate_daemon_up": 0
    }
    assert _scrape(overview(None)) == {}


# ------------------------------------------------------------------ wired in the app


def _app(tmp_path: Path, **options: object) -> TestClient:
    settings = Settings(
        sqlite=str(tmp_path / "x.sqlite3"),
        rpc_address="http://127.0.0.1:9/json_rpc",
        **options,  # type: ignore[arg-type]
    )
    return TestClient(build_app(settings, Services.build(settings)))


def test_the_app_reads_the_daemon_of_daemon_address(tmp_path: Path) -> None:
    """Port 9 (discard) refuses: the daemon is configured, and said to be down."""
    app = _app(tmp_path, daemon_address="http://127.0.0.1:9")
    body = app.get("/status").json()
    assert body["daemon"] == {"height": None, "wallet_behind": None}
    assert any(p.startswith("daemon height: monerod unreachable") for p in body["problems"])
    assert "xmrgate_daemon_up 0.0" in app.get("/metrics").text


def test_the_app_without_daemon_address_has_no_daemon(tmp_path: Path) -> None:
    """Its /status says "daemon": null (tests/unit/test_metrics.py, the same slow read)."""
    assert "xmrgate_daemon" not in _app(tmp_path).get("/metrics").text
