"""``GET /receive/:address`` throughput and latency against the real gateway process.

The gateway (``python -m xmrgate serve --postgresql ...``, default settings, its own
fresh wallet-rpc) answers from a database seeded directly with 1,000 (then 10,000)
payment requests and 10,000 stored transfers spread evenly over them. The load
generator (``bench.loadgen``, a separate process) runs 1, 16 and 64 closed-loop
clients on keep-alive connections for a fixed time per point, cycling through the
seeded addresses in random order.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from bench import profiling
from bench.baseline import Baseline, same_gateway
from bench.common import (
    Context,
    Figure,
    analyze,
    clear_requests,
    fresh_database,
    fresh_wallet,
    median,
    open_database,
    pick,
    section,
    seed_requests,
    seed_transfers,
    set_sync_height,
    speedup,
)
from bench.loadgen import LoadResult, run_load
from bench.metering import Meter, Usage
from testsupport.gateway import GatewayProcess
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.domain.payloads import receive_status_json

NAME = "read"
DATASETS = ((1_000, 10_000), (10_000, 10_000))  # (payment requests, stored transfers)
CONCURRENCY = (1, 16, 64)
TARGET_CONCURRENCY = 16
TARGET_RPS = 2_000.0
TARGET_P99_MS = 50.0
# Beside a baseline: this many times its rate at 16 clients, p99 no worse.
SPEEDUP = 1.8


async def _seed(url: str, requests: int, stored: int, height: int) -> list[str]:
    """Seed a database its gateway has migrated (same rows, whatever the version)."""
    rng = random.Random(requests)
    db = open_database(url)
    try:
        await clear_requests(db)
        seeded = await seed_requests(db, requests, first_index=1, rng=rng)
        await seed_transfers(db, seeded, stored, max_height=height - 30, rng=rng)
        await set_sync_height(db, height)
        await analyze(db)
        return [r.address for r in seeded]
    finally:
        await db.dispose()


async def _store_cost(url: str, addresses: list[str]) -> tuple[float, float, float]:
    """CPU microseconds per call of the read path's steps, run in this process, no HTTP.

    ``PaymentStore.status()`` (pool checkout, BEGIN, three SELECTs, ROLLBACK),
    ``receive_status_json()`` (the body), and, as a floor, the same three SELECTs
    on a plain asyncpg pool without SQLAlchemy.
    """
    db = open_database(url)
    pool = await asyncpg.create_pool(url, min_size=1, max_size=2)
    try:
        store = PaymentStore(db)
        for address in addresses[:50]:  # warm the pools and statement caches
            await store.status(address)
        found = []
        started = time.process_time()
        for address in addresses:
            status = await store.status(address)
            assert status is not None
            found.append(status)
        store_cpu = time.process_time() - started
        started = time.process_time()
        for status in found:
            receive_status_json(
                status.request, status.transfers, status.chain_height, now=time.time()
            )
        view_cpu = time.process_time() - started
        started = time.process_time()
        for address in addresses:
            async with pool.acquire() as conn:
                row = await conn.fetchrow(
                    "SELECT * FROM payment_requests WHERE address = $1", address
                )
                await conn.fetch("SELECT * FROM transfers WHERE request_id = $1", row["id"])
                await conn.fetchval("SELECT wallet_height FROM sync_state WHERE id = 1")
        raw_cpu = time.process_time() - started
        n = len(addresses)
        return 1e6 * store_cpu / n, 1e6 * view_cpu / n, 1e6 * raw_cpu / n
    finally:
        await pool.close()
        await db.dispose()


def _profile(
    ctx: Context, gateway: GatewayProcess, paths: list[dict[str, Any]], label: str
) -> None:
    seconds = 4.0 if ctx.quick else 6.0
    out = Path(ctx.workdir) / f"profile-{NAME}.txt"
    spy = profiling.start(gateway.pid, seconds, out)
    if spy is None:
        print("  (py-spy not installed: no profile; pip install py-spy)", flush=True)
        return
    try:
        run_load(
            gateway.url, paths, concurrency=TARGET_CONCURRENCY, duration=seconds + 1, warmup=0.3
        )
        spy.wait(timeout=60)
    finally:
        if spy.poll() is None:
            spy.terminate()
            spy.wait()
    ctx.profiles.append((label, profiling.summarize(out)))
    print(f"  profiled the gateway at {TARGET_CONCURRENCY} clients ({label})", flush=True)


def _measure(
    gateway: GatewayProcess,
    url: str,
    paths: list[dict[str, Any]],
    concurrency: int,
    duration: float,
) -> tuple[LoadResult, Usage]:
    meter = Meter(gateway.pid, url)
    meter.start()
    result = run_load(gateway.url, paths, concurrency=concurrency, duration=duration)
    return result, meter.stop()


def _cpu_note(runs: list[tuple[LoadResult, Usage]]) -> tuple[float, str]:
    """Gateway CPU microseconds per request and a note on where the CPU went."""

    def per_request(cpu_of: Callable[[Usage], float]) -> float:
        return median(
            [1e6 * cpu_of(u) / (r.rps * u.wall) for r, u in runs if r.rps > 0 and u.wall > 0]
        )

    gateway = per_request(lambda u: u.gateway)
    postgres = per_request(lambda u: u.postgres)
    loadgen = per_request(lambda u: u.children)
    cores = os.cpu_count() or 1
    busy = median([100 * u.machine / (u.wall * cores) for _, u in runs])
    others = median([u.others / u.wall for _, u in runs])
    sessions = median([u.sessions / u.wall for _, u in runs])
    gateway_busy = median([100 * u.gateway / u.wall for _, u in runs])
    note = (
        f"CPU/request: gateway {gateway:.0f} us, PostgreSQL {postgres:.0f} us, "
        f"load generator {loadgen:.0f} us; gateway process {gateway_busy:.0f}% of a core; "
        f"machine {busy:.0f}% busy, {others:.2f} cores used by other processes; "
        f"{sessions:.0f} new PostgreSQL sessions/s"
    )
    return gateway, note


def _report(
    ctx: Context,
    label: str,
    results: dict[int, list[tuple[LoadResult, Usage]]],
    old: dict[int, list[tuple[LoadResult, Usage]]] | None = None,
    old_label: str = "",
) -> bool:
    """Add the figures of one dataset; True when a target was missed."""
    missed = False
    for concurrency, measured in results.items():
        runs = [r for r, _ in measured]
        rps = median([r.rps for r in runs])
        p50 = median([r.p50_ms for r in runs])
        p99 = median([r.p99_ms for r in runs])
        errors = sum(r.errors for r in runs)
        body = median([r.mean_body_bytes for r in runs])
        note = f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, {body:.0f} B/answer"
        if errors:
            note += f", {errors} errors"
        cpu_us, cpu_note = _cpu_note(measured)
        at_target = concurrency == TARGET_CONCURRENCY
        rps_figure = Figure(
            NAME,
            f"GET {label}, {concurrency} clients: throughput",
            rps,
            "req/s",
            TARGET_RPS if at_target and old is None else None,
            higher_is_better=True,
            note=note,
        )
        ctx.add(rps_figure)
        print(f"    {cpu_note}", flush=True)
        if old is not None:
            before = [r for r, _ in old[concurrency]]
            old_rps = median([r.rps for r in before])
            old_p99 = median([r.p99_ms for r in before])
            ctx.add(
                Figure(
                    NAME,
                    f"GET {label}, {concurrency} clients: {old_label}",
                    old_rps,
                    "req/s",
                    note=f"p50 {median([r.p50_ms for r in before]):.1f} ms, p99 {old_p99:.1f} ms",
                )
            )
            print(f"    {old_label}: {_cpu_note(old[concurrency])[1]}", flush=True)
            if at_target:
                ratio = speedup(
                    NAME, f"GET {label}, {concurrency} clients: speed-up", rps, old_rps, SPEEDUP
                )
                p99_ratio = Figure(
                    NAME,
                    f"GET {label}, {concurrency} clients: p99 / {old_label}'s",
                    p99 / old_p99 if old_p99 else float("nan"),
                    "x",
                    1.0,
                    note="no worse: at most 1.0 (shown as met below 1.0)",
                )
                ctx.add(ratio)
                ctx.add(p99_ratio)
                missed = missed or not ratio.met or p99_ratio.value > 1.0
        if at_target:
            p99_figure = Figure(
                NAME, f"GET {label}, {concurrency} clients: p99", p99, "ms", TARGET_P99_MS
            )
            ctx.add(p99_figure)
            if old is None:
                missed = missed or not rps_figure.met or not p99_figure.met
            capacity = f"one free core would serve ~{1e6 / cpu_us:.0f} req/s" if cpu_us else ""
            ctx.add(
                Figure(
                    NAME,
                    f"GET {label}, {concurrency} clients: gateway CPU/request",
                    cpu_us,
                    "us",
                    note=capacity,
                )
            )
    return missed


def run(ctx: Context) -> None:
    """Benchmark GET /receive/:address at 1, 16 and 64 clients on two data sets."""
    duration = 1.5 if ctx.quick else 3.0
    section(
        f"GET /receive/:address: {duration:g}s per point, {ctx.repeats} repeats, "
        f"clients {', '.join(map(str, CONCURRENCY))}"
        + (f", beside {ctx.baseline.label}" if ctx.baseline else "")
    )
    with contextlib.ExitStack() as stack:
        subjects = [_subject(ctx, "new", None, stack)]
        if ctx.baseline is not None:
            subjects.append(_subject(ctx, "old", ctx.baseline, stack))
        ctx.record_rss("read: idle after start-up", subjects[0].gateway.peak_rss_kib())
        height = ctx.devnet.height()
        for n, (requests, stored) in enumerate(DATASETS):
            label = f"{requests // 1000}k req/{stored // 1000}k tx"
            addresses: list[str] = []
            for subject in subjects:
                addresses = asyncio.run(_seed(subject.url, requests, stored, height))
            rng = random.Random(n)
            paths: list[dict[str, Any]] = [
                {"method": "GET", "path": f"/receive/{a}"} for a in pick(rng, addresses, 5000)
            ]
            for subject in subjects:
                run_load(subject.gateway.url, paths, concurrency=16, duration=1.5, warmup=0.5)
                subject.results = {c: [] for c in CONCURRENCY}
            for r in range(ctx.repeats):
                for concurrency in CONCURRENCY:
                    for subject in subjects if r % 2 == 0 else list(reversed(subjects)):
                        subject.results[concurrency].append(
                            _measure(subject.gateway, subject.url, paths, concurrency, duration)
                        )
            new = subjects[0]
            old = subjects[1] if len(subjects) > 1 else None
            missed = _report(
                ctx,
                label,
                new.results,
                old.results if old else None,
                ctx.baseline.label if ctx.baseline else "",
            )
            store_us, view_us, raw_us = asyncio.run(_store_cost(new.url, addresses[:1000]))
            ctx.add(
                Figure(
                    NAME,
                    f"GET {label}: PaymentStore.status() CPU/call",
                    store_us,
                    "us",
                    note=(
                        f"in-process, no HTTP; + receive_status_json {view_us:.0f} us; "
                        f"same 3 SELECTs on bare asyncpg {raw_us:.0f} us"
                    ),
                )
            )
            wanted = ctx.profile == "always" or (ctx.profile == "auto" and missed)
            if wanted and n == 0:
                _profile(ctx, new.gateway, paths, f"GET /receive/:address, {label}")
        ctx.record_rss("read: GET load, 10k requests", subjects[0].gateway.peak_rss_kib())


@dataclass
class _Subject:
    """One version's gateway on its own wallet-rpc and database."""

    gateway: GatewayProcess
    url: str
    results: dict[int, list[tuple[LoadResult, Usage]]] = field(default_factory=dict)


def _subject(
    ctx: Context, label: str, baseline: Baseline | None, stack: contextlib.ExitStack
) -> _Subject:
    """Start a version's gateway first: it migrates its database to its own schema."""
    wallet = fresh_wallet(ctx.devnet, f"bench-read-{label}", open_wallet=False)
    stack.callback(wallet.stop)
    url = stack.enter_context(fresh_database())
    extra = [] if baseline is not None else ctx.gateway_args
    gateway = same_gateway(baseline, Path(ctx.workdir) / f"{NAME}-{label}", wallet.url, url, extra)
    stack.callback(gateway.stop)
    gateway.start()
    return _Subject(gateway, url)
