"""Prometheus metrics: every metric of xmrgate is defined here (prometheus-client).

``PrometheusMetrics`` implements ``core.observer.Observer`` (counters, histograms and
the wallet-height gauge, updated as things happen) and ``core.overview.MetricsExporter``
(the scrape body). Facts of the database (synced height, callbacks pending/failed,
requests by status, the address pool) are not kept here: each scrape reads them in
one statement and a collector of that scrape turns them into gauges. So is monerod's
height with ``--daemon-address`` (the one the sync tick last read, ``core/overview.py``):
beside ``xmrgate_wallet_height`` it tells a wallet stuck behind the network.

Several processes (``--workers N``): the CLI gives the workers a private directory in
``PROMETHEUS_MULTIPROC_DIR`` before prometheus_client is imported there; each process
writes its values to files in it and a scrape of any worker sums counters and
histograms over all of them (gauges: the most recently written value). The parent
removes the directory when it exits.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
    multiprocess,
)
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from xmrgate import __version__
from xmrgate.core.observer import CALLBACK_RESULTS, MAIN_WALLET
from xmrgate.core.overview import REQUEST_STATUSES, DaemonFacts, StoreBreakdown, StoreFacts

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# The methods a route may be asked with; anything else is counted as OTHER, so that a
# client cannot make up label values.
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# Process-wide: prometheus-client keeps values per metric object (in multiprocess mode
# per file), so the objects are made once per process, in a registry of our own.
_REGISTRY = CollectorRegistry(auto_describe=True)

SYNC_TICK_SECONDS = Histogram(
    "xmrgate_sync_tick_duration_seconds",
    "Duration of sync ticks that ran (refresh, read transfers, reconcile, write).",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=_REGISTRY,
)
# Labelled by wallet ("main", or the id of a store on a wallet-rpc of its own): one
# wallet whose ticks fail must not hide behind another's that succeed.
SYNC_TICK_FAILURES = Counter(
    "xmrgate_sync_tick_failures",
    "Sync ticks that failed (wallet-rpc or the database did not answer as expected).",
    ["wallet"],
    registry=_REGISTRY,
)
SYNC_STEP_FAILURES = Counter(
    "xmrgate_sync_step_failures",
    "Steps before the sync of transfers that failed and were skipped (the tick went on).",
    ["wallet", "step"],
    registry=_REGISTRY,
)
SYNC_LAST_TICK = Gauge(
    "xmrgate_sync_last_tick_timestamp_seconds",
    "Unix time of the last sync tick of each wallet that ran without an error.",
    ["wallet"],
    multiprocess_mode="mostrecent",
    registry=_REGISTRY,
)
WALLET_HEIGHT = Gauge(
    "xmrgate_wallet_height",
    "Height of monero-wallet-rpc's wallet (blocks scanned) as the last tick read it.",
    multiprocess_mode="mostrecent",
    registry=_REGISTRY,
)
WALLET_RPC_SECONDS = Histogram(
    "xmrgate_wallet_rpc_duration_seconds",
    "Duration of JSON-RPC calls to monero-wallet-rpc, by method.",
    ["method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120),
    registry=_REGISTRY,
)
WALLET_RPC_ERRORS = Counter(
    "xmrgate_wallet_rpc_errors",
    "JSON-RPC calls to monero-wallet-rpc that failed (unreachable, timeout, error), by method.",
    ["method"],
    registry=_REGISTRY,
)
CALLBACK_DELIVERIES = Counter(
    "xmrgate_callback_deliveries",
    "Callback tries by result: delivered (2xx), retrying (failed, tried again later), "
    "failed (failed, given up).",
    ["result"],
    registry=_REGISTRY,
)
CALLBACK_DELAY_SECONDS = Histogram(
    "xmrgate_callback_delivery_delay_seconds",
    "Time from a callback event's creation (the state change) to its 2xx answer.",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 24 * 3600, 72 * 3600),
    registry=_REGISTRY,
)
HTTP_REQUESTS = Counter(
    "xmrgate_http_requests",
    "HTTP requests answered, by route template, method and status code.",
    ["route", "method", "status"],
    registry=_REGISTRY,
)
HTTP_SECONDS = Histogram(
    "xmrgate_http_request_duration_seconds",
    "Time to answer HTTP requests, by route template and method.",
    ["route", "method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
    registry=_REGISTRY,
)
for _result in CALLBACK_RESULTS:  # every result shows from the start, at 0
    CALLBACK_DELIVERIES.labels(_result)


def multiprocess_dir() -> str | None:
    """The multiprocess directory when this process runs in multiprocess mode."""
    return os.environ.get(MULTIPROC_ENV) or os.environ.get(MULTIPROC_ENV.lower())


def _store_gauges(by_store: StoreBreakdown) -> Iterator[Metric]:
    """The same counts by store (label ``store``: one per store, so bounded).

    New names beside the totals, not a label added to them: dashboards and alert rules
    written for the totals keep their meaning.
    """
    requests = GaugeMetricFamily(
        "xmrgate_store_payment_requests",
        "Payment requests by store and status.",
        labels=["store", "status"],
    )
    stores = {store for store, _status in by_store.requests}
    for store in sorted(stores):
        for status in REQUEST_STATUSES:
            requests.add_metric([store, status], by_store.requests.get((store, status), 0))
    yield requests
    for kind in ("pending", "failed"):
        gauge = GaugeMetricFamily(
            f"xmrgate_store_callbacks_{kind}",
            f"Callback events {kind} by store.",
            labels=["store"],
        )
        for (store, status), count in sorted(by_store.callbacks.items()):
            if status == kind:
                gauge.add_metric([store], count)
        yield gauge
    pool = GaugeMetricFamily(
        "xmrgate_store_address_pool_size",
        "Subaddresses ready in each store's pool.",
        labels=["store"],
    )
    for store, count in sorted(by_store.pool.items()):
        pool.add_metric([store], count)
    yield pool
    # Money no request owns: every store with a request or a receipt shows,
    # 0 included, so an alert on "> 0" sees the series from the start.
    receipts = GaugeMetricFamily(
        "xmrgate_unmatched_receipts",
        "Open unmatched receipts by store: money to a subaddress no request owns.",
        labels=["store"],
    )
    amount = GaugeMetricFamily(
        "xmrgate_unmatched_piconero",
        "Piconero of the open unmatched receipts by store.",
        labels=["store"],
    )
    for store in sorted(stores | set(by_store.unmatched)):
        count, total = by_store.unmatched.get(store, (0, 0))
        receipts.add_metric([store], count)
        amount.add_metric([store], total)
    yield receipts
    yield amount


class _Facts:
    """The gauges of one scrape's database facts (a collector for ``generate_latest``)."""

    def __init__(self, facts: StoreFacts | None, daemon: DaemonFacts | None) -> None:
        self._facts = facts
        self._daemon = daemon

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "xmrgate_build_info", "The running xmrgate version (always 1).", labels=["version"]
        )
        info.add_metric([__version__], 1)
        yield info
        yield from self._daemon_gauges()
        facts = self._facts
        yield GaugeMetricFamily(
            "xmrgate_database_up",
            "1 when the database answered this scrape's query, else 0.",
            value=0 if facts is None else 1,
        )
        if facts is None:
            return
        if facts.synced_height is not None:
            yield GaugeMetricFamily(
                "xmrgate_sync_height",
                "Height up to which the gateway has synced the wallet's transfers.",
                value=facts.synced_height,
            )
        yield GaugeMetricFamily(
            "xmrgate_callbacks_pending",
            "Callback events not delivered yet that will be tried (again).",
            value=facts.callbacks_pending,
        )
        yield GaugeMetricFamily(
            "xmrgate_callbacks_failed",
            "Callback events given up on (until deleted by --retention or retried by hand).",
            value=facts.callbacks_failed,
        )
        requests = GaugeMetricFamily(
            "xmrgate_payment_requests", "Payment requests by status.", labels=["status"]
        )
        for status, count in facts.requests().items():
            requests.add_metric([status], count)
        yield requests
        if facts.address_pool is not None:
            yield GaugeMetricFamily(
                "xmrgate_address_pool_size",
                "Subaddresses ready in the pool for POST /receive.",
                value=facts.address_pool,
            )
        if facts.by_store is not None:
            yield from _store_gauges(facts.by_store)

    def _daemon_gauges(self) -> Iterator[Metric]:
        """Nothing without ``--daemon-address``; its height only when it answered."""
        daemon = self._daemon
        if daemon is None:
            return
        yield GaugeMetricFamily(
            "xmrgate_daemon_up",
            "1 when monerod (--daemon-address) answered its last height read, else 0.",
            value=0 if daemon.height is None else 1,
        )
        if daemon.height is not None:
            yield GaugeMetricFamily(
                "xmrgate_daemon_height",
                "Height of monerod (--daemon-address) as last read, at most 10 s before the "
                "scrape; compare with xmrgate_wallet_height.",
                value=daemon.height,
            )


class _Several:
    """Collects from several collectors, in order."""

    def __init__(self, collectors: Iterable[Collector]) -> None:
        self._collectors = list(collectors)

    def collect(self) -> Iterator[Metric]:
        for collector in self._collectors:
            yield from collector.collect()


class PrometheusMetrics:
    """The observer that feeds the metrics above, and the scrape that renders them."""

    def __init__(self) -> None:
        self._multiprocess = multiprocess_dir() is not None
        self._process: Collector | None = None
        if not self._multiprocess:
            # CPU, memory, open files of this process (not available across processes).
            self._process = ProcessCollector(registry=None)
        # labels() takes a lock and builds a tuple; the HTTP path caches its children.
        self._http: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        # Collectors read at each scrape from this process's state (the exchange rates).
        self._extra: list[Collector] = []

    def add_collector(self, collector: Collector) -> None:
        """Render ``collector`` in every scrape after the others (read when scraped)."""
        self._extra.append(collector)

    # -- Observer ------------------------------------------------------------------

    def sync_tick(
        self, *, ran: bool, seconds: float, wallet_height: int | None, wallet: str = MAIN_WALLET
    ) -> None:
        """Time a tick that ran; remember the main wallet's height."""
        if ran:
            SYNC_TICK_SECONDS.observe(seconds)
            SYNC_LAST_TICK.labels(wallet).set(time.time())
        # The gauge is compared with the main wallet's synced height (the alerts).
        if wallet_height is not None and wallet == MAIN_WALLET:
            WALLET_HEIGHT.set(wallet_height)

    def sync_tick_failed(self, seconds: float, wallet: str = MAIN_WALLET) -> None:
        """Count a failed tick of ``wallet``."""
        SYNC_TICK_FAILURES.labels(wallet).inc()

    def sync_step_failed(self, step: str, wallet: str = MAIN_WALLET) -> None:
        """Count a skipped step of ``wallet``'s tick."""
        SYNC_STEP_FAILURES.labels(wallet, step).inc()

    def callback_attempt(self, result: str, delay: float | None) -> None:
        """Count a callback try; time the delivered ones from their event's creation."""
        CALLBACK_DELIVERIES.labels(result).inc()
        if delay is not None:
            CALLBACK_DELAY_SECONDS.observe(max(delay, 0.0))

    def wallet_call(self, method: str, seconds: float, ok: bool) -> None:
        """Time a wallet-rpc call; count it as an error when it failed."""
        WALLET_RPC_SECONDS.labels(method).observe(seconds)
        if not ok:
            WALLET_RPC_ERRORS.labels(method).inc()

    def http_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count and time one answered HTTP request."""
        verb = method if method in HTTP_METHODS else "OTHER"
        key = (route, verb, status)  # bounded: route templates, known methods, our statuses
        children = self._http.get(key)
        if children is None:
            children = (
                HTTP_REQUESTS.labels(route, verb, str(status)),
                HTTP_SECONDS.labels(route, verb),
            )
            self._http[key] = children
        children[0].inc()
        children[1].observe(seconds)

    # -- MetricsExporter -----------------------------------------------------------

    def exposition(
        self, facts: StoreFacts | None, daemon: DaemonFacts | None = None
    ) -> tuple[bytes, str]:
        """The text format of every metric, this scrape's facts (and monerod's) included."""
        collectors: list[Collector] = []
        if self._multiprocess:
            merged = CollectorRegistry()
            multiprocess.MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
            collectors.append(merged)
        else:
            collectors.append(_REGISTRY)
            if self._process is not None:
                collectors.append(self._process)
        collectors.append(_Facts(facts, daemon))
        collectors.extend(self._extra)
        return generate_latest(_Several(collectors)), CONTENT_TYPE_LATEST
