"""Metrics and the overview in-process: observer hooks of the loops, /metrics and /status
behind the read scope, HTTP labels by route template, database gauges from one read.

The running gateway on regtest is scraped in tests/integration/test_metrics.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tests.unit.test_callback_worker import NOW, Queue, event
from xmrgate.adapters.metrics import PrometheusMetrics
from xmrgate.config import Settings
from xmrgate.core.callbacks import CallbackWorker, RetryPolicy
from xmrgate.core.overview import REQUEST_STATUSES, StoreBreakdown, StoreFacts
from xmrgate.core.ports import DeliveryResult
from xmrgate.core.sync import SyncEngine, TickResult
from xmrgate.domain.errors import WalletUnavailable
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services

READ_KEY = "reader-key-0123456789"
RECEIVE_KEY = "receiver-key-0123456789"
ADDRESS = "8" + "A" * 94
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of a scrape by (name, labels)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    """One sample's value (0 when absent: a labelled child not created yet)."""
    return found.get((name, frozenset(labels.items())), 0.0)


@dataclass
class Recorder:
    """An observer that keeps every call."""

    calls: list[tuple[str, Any]] = field(default_factory=list)

    def sync_tick(
        self, *, ran: bool, seconds: float, wallet_height: int | None, wallet: str = "main"
    ) -> None:
        self.calls.append(("tick", (ran, wallet_height)))

    def sync_tick_failed(self, seconds: float, wallet: str = "main") -> None:
        self.calls.append(("tick_failed", None))

    def sync_step_failed(self, step: str, wallet: str = "main") -> None:
        self.calls.append(("step_failed", (step, wallet)))

    def callback_attempt(self, result: str, delay: float | None) -> None:
        self.calls.append(("callback", (result, delay)))

    def wallet_call(self, method: str, seconds: float, ok: bool) -> None:
        self.calls.append(("wallet", (method, ok)))

    def http_request(self, route: str, method: str, status: int, seconds: float) -> None:
        self.calls.append(("http", (route, method, status)))


class Answers:
    """A sender answering from a script."""

    def __init__(self, *results: DeliveryResult) -> None:
        self.results = list(results)

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        return self.results.pop(0)

    async def aclose(self) -> None:
        return None


def _deliver(result: DeliveryResult, created_ago: float, give_up_after: float) -> Recorder:
    recorder = Recorder()
    worker = CallbackWorker(
        Queue([]),
        Answers(result),
        policy=RetryPolicy(base=1.0, give_up_after=give_up_after),
        secret=None,
        timeout=5.0,
        concurrency=1,
        clock=lambda: NOW,
        observer=recorder,
    )
    asyncio.run(worker._deliver(event(created_at=NOW - timedelta(seconds=created_ago))))
    return recorder


def test_callback_results_reach_the_observer() -> None:
    """Delivered (with the delay since the event), retrying, and failed for good."""
    delivered = _deliver(DeliveryResult(True, 200), created_ago=42, give_up_after=3600)
    assert delivered.calls == [("callback", ("delivered", 42.0))]
    retrying = _deliver(DeliveryResult(False, 500, "HTTP 500"), created_ago=42, give_up_after=3600)
    assert retrying.calls == [("callback", ("retrying", None))]
    given_up = _deliver(DeliveryResult(False, 500, "HTTP 500"), created_ago=7200, give_up_after=60)
    assert given_up.calls == [("callback", ("failed", None))]
    permanent = _deliver(DeliveryResult(False, error="bad", permanent=True), 1, 3600)
    assert permanent.calls == [("callback", ("failed", None))]


class ScriptedSync(SyncEngine):
    """The sync loop with ticks from a script (the loop's reporting is under test)."""

    def __init__(self, script: list[TickResult | Exception], stop: asyncio.Event, **kw: Any):
        super().__init__(None, None, zero_conf=False, reorg_margin=10, **kw)  # type: ignore[arg-type]
        self.script = script
        self.stop = stop

    async def tick(self) -> TickResult:
        step = self.script.pop(0)
        if not self.script:
            self.stop.set()
        if isinstance(step, Exception):
            raise step
        return step


def test_sync_loop_reports_ticks_and_failures() -> None:
    """Ran, skipped (another leader; the wallet's height still noted) and failed ticks."""
    recorder = Recorder()

    async def main() -> None:
        stop = asyncio.Event()
        script: list[TickResult | Exception] = [
            TickResult(ran=True, height=120),
            TickResult(ran=False),
            WalletUnavailable("wallet-rpc unreachable"),
            RuntimeError("a bug"),
            TickResult(ran=False, height=90),
        ]
        await ScriptedSync(script, stop, observer=recorder).run(stop, interval=0.001)

    asyncio.run(main())
    assert recorder.calls == [
        ("tick", (True, 120)),
        ("tick", (False, None)),
        ("tick_failed", None),
        ("tick_failed", None),
        ("tick", (False, 90)),
    ]


def _client(tmp_path: Path, **options: Any) -> TestClient:
    settings = Settings(sqlite=str(tmp_path / "x.sqlite3"), **options)
    return TestClient(build_app(settings, Services.build(settings)))


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("path", ["/metrics", "/status"])
def test_metrics_and_status_need_the_read_scope(tmp_path: Path, path: str) -> None:
    client = _client(tmp_path, api_keys=f"{READ_KEY}:read {RECEIVE_KEY}:receive")
    assert client.get(path).status_code == 401
    refused = client.get(path, headers=_bearer(RECEIVE_KEY))
    assert refused.status_code == 403 and "'read'" in refused.json()["message"]
    assert client.get(path, headers=_bearer(READ_KEY)).status_code == 200


def test_http_requests_counted_by_route_template(tmp_path: Path) -> None:
    """Route templates, never raw paths; refusals before routing keep their route."""
    client = _client(tmp_path, api_keys=READ_KEY)
    before = samples(client.get("/metrics", headers=_bearer(READ_KEY)).text)
    for n in range(3):
        # No lifespan: the database is not migrated, so the read answers 503.
        client.get(f"/receive/8{n + 1}{'B' * 93}", headers=_bearer(READ_KEY))
    client.get("/receive/" + ADDRESS)  # 401: refused by the key gate before routing
    client.get("/no/such/path", headers=_bearer(READ_KEY))
    after = samples(client.get("/metrics", headers=_bearer(READ_KEY)).text)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    total = "xmrgate_http_requests_total"
    route = "/receive/{address}"
    assert delta(total, route=route, method="GET", status="503") == 3
    assert delta(total, route=route, method="GET", status="401") == 1
    assert delta(total, route="(unmatched)", method="GET", status="404") == 1
    assert delta(total, route="/metrics", method="GET", status="200") == 1  # the first scrape
    assert delta("xmrgate_http_request_duration_seconds_count", route=route, method="GET") == 4
    assert not any(ADDRESS in name or "8" + "B" * 5 in str(labels) for name, labels in after)


def test_database_gauges_say_when_the_database_did_not_answer(tmp_path: Path) -> None:
    """Unmigrated database: the scrape still answers, with xmrgate_database_up 0."""
    found = samples(_client(tmp_path).get("/metrics").text)
    assert value(found, "xmrgate_database_up") == 0
    assert ("xmrgate_callbacks_pending", frozenset()) not in found
    assert value(found, "xmrgate_build_info", version=__import__("xmrgate").__version__) == 1


def test_status_names_what_it_could_not_read(tmp_path: Path) -> None:
    """/status is 200 with nulls and reasons when the wallet and the database are away."""
    body = _client(tmp_path, rpc_address="http://127.0.0.1:9/json_rpc").get("/status").json()
    assert body["health"]["status"] == 503
    assert body["balance"] is None and body["callbacks"] is None
    assert body["sync"] == {"height": None, "wallet_height": None, "behind": None}
    assert body["daemon"] is None  # no --daemon-address: nothing about monerod
    assert len(body["problems"]) == 3, body["problems"]


def test_no_metrics_turns_the_endpoint_off(tmp_path: Path) -> None:
    client = _client(tmp_path, metrics=False)
    assert client.get("/metrics").status_code == 404
    assert client.get("/status").status_code == 200


def test_exposition_of_facts() -> None:
    """Every request status is exported (0 included); the pool only when there is one."""
    metrics = PrometheusMetrics()
    facts = StoreFacts(
        synced_height=321,
        callbacks_pending=4,
        callbacks_failed=1,
        requests_by_status={"complete": 5, "partial": 2},
        address_pool=None,
    )
    found = samples(metrics.exposition(facts)[0].decode())
    assert value(found, "xmrgate_sync_height") == 321
    assert value(found, "xmrgate_callbacks_pending") == 4
    assert value(found, "xmrgate_callbacks_failed") == 1
    by_status = {
        dict(labels)["status"]: v
        for (name, labels), v in found.items()
        if name == "xmrgate_payment_requests"
    }
    assert by_status == {**dict.fromkeys(REQUEST_STATUSES, 0.0), "partial": 2, "complete": 5}
    assert not any(name == "xmrgate_address_pool_size" for name, _ in found)
    with_pool = samples(metrics.exposition(replace(facts, address_pool=17))[0].decode())
    assert value(with_pool, "xmrgate_address_pool_size") == 17


def test_made_up_methods_add_no_series() -> None:
    """A client inventing HTTP methods cannot grow the label set (or the cache) without end."""
    metrics = PrometheusMetrics()
    for n in range(50):
        metrics.http_request("(unmatched)", f"FOO{n}", 405, 0.001)
    found = samples(metrics.exposition(None)[0].decode())
    methods = {
        dict(labels)["method"]
        for name, labels in found
        if name == "xmrgate_http_requests_total" and dict(labels)["status"] == "405"
    }
    assert methods == {"OTHER"}
    assert len(metrics._http) == 1


def test_exposition_by_store() -> None:
    """The store label: one series per store beside the unlabelled totals, which keep
    their names and meaning (alert rules and dashboards written for them still hold)."""
    metrics = PrometheusMetrics()
    facts = StoreFacts(
        synced_height=1,
        callbacks_pending=3,
        callbacks_failed=0,
        requests_by_status={"waiting": 5},
        address_pool=9,
        by_store=StoreBreakdown(
            requests={("default", "waiting"): 2, ("shop-a", "waiting"): 3},
            callbacks={("shop-a", "pending"): 3},
            pool={"default": 4, "shop-a": 5},
            unmatched={"shop-a": (2, 700)},
        ),
    )
    found = samples(metrics.exposition(facts)[0].decode())
    assert value(found, "xmrgate_unmatched_receipts", store="shop-a") == 2
    assert value(found, "xmrgate_unmatched_piconero", store="shop-a") == 700
    # A store without receipts shows 0 (an alert on "> 0" sees the series from the start).
    assert value(found, "xmrgate_unmatched_receipts", store="default") == 0
    assert value(found, "xmrgate_payment_requests", status="waiting") == 5
    assert value(found, "xmrgate_store_payment_requests", store="shop-a", status="waiting") == 3
    assert value(found, "xmrgate_store_payment_requests", store="default", status="waiting") == 2
    assert (
        "xmrgate_store_payment_requests",
        frozenset({"store": "shop-a", "status": "paid"}.items()),
    ) in found
    assert value(found, "xmrgate_store_callbacks_pending", store="shop-a") == 3
    assert value(found, "xmrgate_store_address_pool_size", store="shop-a") == 5
    assert value(found, "xmrgate_address_pool_size") == 9


def test_a_greenfield_request_refused_before_routing_keeps_its_template(
    tmp_path: Path,
) -> None:
    """A shop plugin's call the key gate refuses is counted under its ``/api/v1`` route
    (the Greenfield routes sit in the app's route table with their prefix)."""
    client = _client(tmp_path, api_keys=READ_KEY)
    before = samples(client.get("/metrics", headers=_bearer(READ_KEY)).text)
    refused = client.get("/api/v1/stores/default/invoices")  # no key at all
    assert refused.status_code == 401
    after = samples(client.get("/metrics", headers=_bearer(READ_KEY)).text)
    total = "xmrgate_http_requests_total"
    labels = {"route": "/api/v1/stores/{storeId}/invoices", "method": "GET", "status": "401"}
    assert value(after, total, **labels) - value(before, total, **labels) == 1
