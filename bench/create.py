"""``POST /receive`` rate, against the previous version and against the wallet itself.

Each version runs its own gateway on its own fresh wallet-rpc and database, and the
load generator sends it ``POST /receive`` at 1 and 16 clients; the versions alternate
which goes first in each repeat. Only 200 answers count. The new version takes
subaddresses from its pool (``--address-pool-size 10000``, larger than any point) and
refills it as soon as it is taken from (low water 9999), as the wallet-rpc process
allows during the point; each point starts with a full pool (the benchmark waits for
the refill in between): this is the burst rate. How fast the wallet fills the pool at
start-up is reported too: the rate a shop can keep up for longer than its pool lasts.
As a reference, ``create_address`` is also sent straight to the new version's wallet-rpc.

Targets: sequential >= 5x the baseline; 16 clients >= 1,000/s or >= 5x.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import asyncpg

from bench import profiling
from bench.baseline import same_gateway
from bench.common import (
    Context,
    Figure,
    fresh_database,
    fresh_wallet,
    median,
    section,
    speedup,
)
from bench.loadgen import LoadResult, run_load
from bench.metering import Meter, Usage
from testsupport.gateway import GatewayProcess
from xmrgate.devnet import WalletRpc

NAME = "create"
CONCURRENCY = (1, 16)
SPEEDUP = 5.0
TARGET_RPS_16 = 1_000.0
LABEL = "bench order"
# Enough for any one point (a few thousand requests). The pool refills as soon as it is
# taken from (as it would in production with a high low-water mark), and each point
# starts with a full pool: the benchmark waits for the refill between points.
POOL_SIZE = 10_000  # the largest --address-pool-size
POOL_ARGS = [
    "--address-pool-size",
    str(POOL_SIZE),
    "--address-pool-low-water",
    str(POOL_SIZE - 1),
]

GATEWAY_REQUEST: dict[str, Any] = {
    "method": "POST",
    "path": "/receive",
    "body": {"amount": 1_000_000_000, "description": LABEL},
}
WALLET_REQUEST: dict[str, Any] = {
    "method": "POST",
    "path": "/json_rpc",
    "body": {
        "jsonrpc": "2.0",
        "id": "0",
        "method": "create_address",
        "params": {"account_index": 0, "label": LABEL},
    },
}

Measured = tuple[LoadResult, Usage]


def ok_rate(result: LoadResult) -> float:
    """Answers with status 200 per second."""
    return result.statuses.get("200", 0) / result.seconds


def _pool_size(url: str) -> int:
    async def count() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(await conn.fetchval("SELECT count(*) FROM address_pool"))
        finally:
            await conn.close()

    return asyncio.run(count())


def _wait_pool_full(url: str, timeout: float = 300.0) -> None:
    """Wait until the refill has topped the pool up again."""
    deadline = time.monotonic() + timeout
    while _pool_size(url) < POOL_SIZE and time.monotonic() < deadline:
        time.sleep(0.5)


def _fill_rate(url: str, timeout: float = 600.0) -> float:
    """Watch the pool fill up to POOL_SIZE at start-up; subaddresses per second."""
    started = time.monotonic()
    first: tuple[float, int] | None = None
    size = 0
    while size < POOL_SIZE and time.monotonic() - started < timeout:
        time.sleep(0.5)
        try:
            size = _pool_size(url)
        except (OSError, asyncpg.PostgresError):
            continue  # not migrated yet
        if size > 0 and first is None:
            first = (time.monotonic(), size)
    if first is None or size <= first[1]:
        return float("nan")
    return (size - first[1]) / (time.monotonic() - first[0])


class Subject:
    """One version's gateway with its wallet and database."""

    def __init__(self, label: str, gateway: GatewayProcess, wallet: WalletRpc, url: str) -> None:
        self.label = label
        self.gateway = gateway
        self.wallet = wallet
        self.url = url
        self.runs: dict[int, list[Measured]] = {c: [] for c in CONCURRENCY}
        self.fill_rate = float("nan")
        self.has_pool = False

    def measure(self, concurrency: int, duration: float) -> None:
        if self.has_pool:
            _wait_pool_full(self.url)
        meter = Meter(self.gateway.pid, self.url, [self.wallet.pid])
        meter.start()
        result = run_load(
            self.gateway.url,
            [GATEWAY_REQUEST],
            concurrency=concurrency,
            duration=duration,
            warmup=0.2,  # every request takes a subaddress: spend few outside the point
        )
        self.runs[concurrency].append((result, meter.stop()))

    def rate(self, concurrency: int) -> float:
        return median([ok_rate(r) for r, _ in self.runs[concurrency]])

    def note(self, concurrency: int) -> str:
        runs = self.runs[concurrency]
        p50 = median([r.p50_ms for r, _ in runs])
        p99 = median([r.p99_ms for r, _ in runs])
        cpu = median([1e3 * u.gateway / max(ok_rate(r) * u.wall, 1e-9) for r, u in runs])
        failed = sum(r.completed - r.statuses.get("200", 0) + r.errors for r, _ in runs)
        text = f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, gateway CPU {cpu:.2f} ms/request"
        return text + (f", {failed} failed" if failed else "")


def _start(ctx: Context, label: str, baseline: bool, stack: contextlib.ExitStack) -> Subject:
    wallet = fresh_wallet(ctx.devnet, f"bench-create-{label}", open_wallet=False)
    stack.callback(wallet.stop)
    url = stack.enter_context(fresh_database())
    gateway = same_gateway(
        ctx.baseline if baseline else None,
        Path(ctx.workdir) / f"{NAME}-{label}",
        wallet.url,
        url,
        [] if baseline else POOL_ARGS,
    )
    stack.callback(gateway.stop)
    # The new version fills its pool before it reports ready: ~100 subaddresses a second.
    gateway.start(wait=False)
    subject = Subject(label, gateway, wallet, url)
    if not baseline:
        subject.has_pool = True
        subject.fill_rate = _fill_rate(url)
    gateway.wait_ready(timeout=600)
    return subject


def _wallet_alone(subject: Subject, duration: float) -> dict[int, float]:
    return {
        c: ok_rate_json(
            run_load(subject.wallet.url, [WALLET_REQUEST], concurrency=c, duration=duration)
        )
        for c in CONCURRENCY
    }


def ok_rate_json(result: LoadResult) -> float:
    """The wallet answers JSON-RPC errors with 200 too; count what came back."""
    return result.completed / result.seconds


def _profile(ctx: Context, gateway: GatewayProcess, duration: float) -> None:
    out = Path(ctx.workdir) / f"profile-{NAME}.txt"
    spy = profiling.start(gateway.pid, duration, out)
    if spy is None:
        return
    try:
        run_load(gateway.url, [GATEWAY_REQUEST], concurrency=16, duration=duration + 1, warmup=0.3)
        spy.wait(timeout=60)
    finally:
        if spy.poll() is None:
            spy.terminate()
            spy.wait()
    ctx.profiles.append(("POST /receive, 16 clients", profiling.summarize(out)))


def _report(ctx: Context, new: Subject, old: Subject | None, wallet: dict[int, float]) -> bool:
    missed = False
    for c in CONCURRENCY:
        rate = new.rate(c)
        ctx.add(
            Figure(
                NAME,
                f"POST /receive, {c} clients: rate",
                rate,
                "req/s",
                TARGET_RPS_16 if c == 16 and old is None else None,
                higher_is_better=True,
                note=f"{new.note(c)}; wallet create_address alone {wallet[c]:.0f}/s",
            )
        )
        if old is None:
            continue
        before = old.rate(c)
        ctx.add(
            Figure(
                NAME, f"POST /receive, {c} clients: {old.label}", before, "req/s", note=old.note(c)
            )
        )
        note = f"or >= {TARGET_RPS_16:,.0f}/s" if c == 16 else ""
        ratio = speedup(NAME, f"POST /receive, {c} clients: speed-up", rate, before, SPEEDUP, note)
        ctx.add(ratio)
        met = ratio.met or (c == 16 and rate >= TARGET_RPS_16)
        missed = missed or not met
    ctx.add(
        Figure(
            NAME,
            "address pool fill rate",
            new.fill_rate,
            "addr/s",
            note=f"{POOL_SIZE:,} at start-up; the sustained ceiling once a burst empties the pool",
        )
    )
    return missed


def run(ctx: Context) -> None:
    """Benchmark POST /receive at 1 and 16 clients (and the baseline's, when given)."""
    duration = 1.5 if ctx.quick else 2.5
    section(
        f"POST /receive: {duration:g}s per point, {ctx.repeats} repeats, clients "
        f"{', '.join(map(str, CONCURRENCY))}"
        + (f", beside {ctx.baseline.label}" if ctx.baseline else "")
    )
    with contextlib.ExitStack() as stack:
        new = _start(ctx, "new", False, stack)
        old = _start(ctx, "old", True, stack) if ctx.baseline else None
        if old is not None and ctx.baseline is not None:
            old.label = ctx.baseline.label
        subjects = [s for s in (new, old) if s is not None]
        for subject in subjects:  # warm-up: connections, caches, a first refill
            run_load(subject.gateway.url, [GATEWAY_REQUEST], concurrency=4, duration=0.5)
        for r in range(ctx.repeats):
            for c in CONCURRENCY:
                for subject in subjects if r % 2 == 0 else list(reversed(subjects)):
                    subject.measure(c, duration)
        wallet = _wallet_alone(new, duration)
        missed = _report(ctx, new, old, wallet)
        if ctx.profile == "always" or (ctx.profile == "auto" and missed):
            _profile(ctx, new.gateway, 4.0 if ctx.quick else 6.0)
        ctx.record_rss("create: POST load", new.gateway.peak_rss_kib())
