"""Callbacks: delivery rate from the outbox, and delay from a mined block to its callback.

Delivery rate: N due ``transfer.confirmed`` events (one per payment request, so the
one-at-a-time-per-request rule does not serialise them) are seeded directly into
the ``events`` table with a callback URL on a local receiver (``bench.receiver``, its
own process); then the gateway starts. The rate is N over the time from the first to
the last callback received; the time until PostgreSQL shows all N delivered is
reported from the moment the process was spawned.

Delay: with the gateway polling every second (``--poll-frequency 1s``), one payment
at a time: ``POST /receive`` with a callback URL, the devnet's funder pays the
address (the transaction waits in the pool), then ``devnet.mine(1)``; the delay is
from ``mine()`` returning to the ``transfer.confirmed`` callback arriving. It is
the poll interval's phase (uniform in 0..1 s; the benchmark waits a random
0..1 s before mining so as not to lock onto the loop) plus one tick plus delivery.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import asyncpg
import httpx

from bench.common import (
    Context,
    Figure,
    GatewayProcess,
    Meter,
    Usage,
    clear_requests,
    fresh_database,
    fresh_wallet,
    median,
    open_database,
    percentile,
    section,
    seed_events,
    seed_requests,
)
from bench.receiver import ReceiverProcess

NAME = "callbacks"
POLL = "1s"
POLL_SECONDS = 1.0
AMOUNT = 1_000_000_000  # 0.001 XMR


async def _seed(
    url: str, count: int, callback_url: str, first_index: int, *, migrate: bool
) -> None:
    rng = random.Random(first_index)
    db = open_database(url)
    try:
        if migrate:
            await db.migrate()
        else:
            await clear_requests(db)
        requests = await seed_requests(
            db, count, first_index=first_index, rng=rng, callback_url=callback_url
        )
        await seed_events(db, requests, callback_url, rng)
    finally:
        await db.dispose()


async def _wait_delivered(url: str, count: int, timeout: float) -> float:
    """Poll until ``count`` events are recorded as delivered; return that unix time."""
    conn = await asyncpg.connect(url)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = await conn.fetchval("SELECT count(*) FROM events WHERE status = 'delivered'")
            if int(done) >= count:
                return time.time()
            await asyncio.sleep(0.05)
    finally:
        await conn.close()
    raise TimeoutError(f"not all {count} callbacks delivered in {timeout}s")


def _wait_received(
    receiver: ReceiverProcess, count: int, timeout: float, meter: Meter | None = None
) -> Usage | None:
    """Wait for ``count`` callbacks; meter from the first one to the last."""
    deadline = time.monotonic() + timeout
    metering = False
    while True:
        got = int(receiver.stats()["count"])
        if got and meter is not None and not metering:
            meter.start()
            metering = True
        if got >= count:
            return meter.stop() if meter is not None and metering else None
        if time.monotonic() > deadline:
            raise TimeoutError(f"receiver got {got} of {count} callbacks")
        time.sleep(0.05)


def _throughput(
    ctx: Context, url: str, wallet_url: str, receiver: ReceiverProcess, count: int
) -> GatewayProcess:
    """Measure delivery rate; return the last gateway, still running."""
    rates: list[float] = []
    totals: list[float] = []
    gateway_ms: list[float] = []
    postgres_ms: list[float] = []
    others: list[float] = []
    gateway: GatewayProcess | None = None
    for r in range(ctx.repeats):
        asyncio.run(_seed(url, count, receiver.url, 1_000_000 + r * count, migrate=r == 0))
        receiver.reset()
        gateway = GatewayProcess(
            Path(ctx.workdir) / NAME, wallet_url, url, ["--poll-frequency", POLL]
        )
        try:
            gateway.start(wait=False)
            usage = _wait_received(receiver, count, timeout=180, meter=Meter(gateway.pid, url))
            if usage is not None:
                gateway_ms.append(1e3 * usage.gateway / count)
                postgres_ms.append(1e3 * usage.postgres / count)
                others.append(usage.others / usage.wall)
            finished = asyncio.run(_wait_delivered(url, count, timeout=60))
            stats = receiver.stats()
            rates.append((count - 1) / max(stats["last"] - stats["first"], 1e-9))
            totals.append(finished - gateway.started_at)
            print(
                f"  run {r + 1}: {rates[-1]:.0f} callbacks/s; first callback "
                f"{stats['first'] - gateway.started_at:.1f}s after spawn, all recorded "
                f"delivered after {totals[-1]:.1f}s",
                flush=True,
            )
        except BaseException:
            gateway.stop()
            raise
        if r < ctx.repeats - 1:
            ctx.record_rss(f"callbacks: {count} queued", gateway.peak_rss_kib())
            gateway.stop()
    assert gateway is not None
    ctx.add(
        Figure(
            NAME,
            f"callback delivery rate ({count} queued)",
            median(rates),
            "cb/s",
            note=f"all delivered {median(totals):.1f}s after process spawn (start-up included)",
        )
    )
    ctx.add(
        Figure(
            NAME,
            "callback delivery: gateway CPU per callback",
            median(gateway_ms),
            "ms",
            note=(
                f"PostgreSQL {median(postgres_ms):.2f} ms/callback; "
                f"other processes used {median(others):.2f} cores"
            ),
        )
    )
    return gateway


def _latency(
    ctx: Context, url: str, gateway: GatewayProcess, receiver: ReceiverProcess, payments: int
) -> None:
    asyncio.run(_clear(url))
    gateway.wait_ready()
    receiver.reset()
    delays: list[float] = []
    rng = random.Random(7)
    with httpx.Client(timeout=60, trust_env=False) as client:
        for _ in range(payments):
            answer = client.post(
                gateway.url + "/receive",
                json={"amount": AMOUNT, "description": "bench", "callback_url": receiver.url},
            )
            answer.raise_for_status()
            address = answer.json()["address"]
            ctx.devnet.pay(address, AMOUNT)
            # A random phase against the poll loop: without it the loop of this
            # benchmark locks onto the gateway's tick period and the delay looks fixed.
            time.sleep(rng.uniform(0, POLL_SECONDS))
            ctx.devnet.mine(1)
            mined = time.time()
            deadline = time.monotonic() + 30
            while True:
                hits = [
                    at
                    for at, kind, addr in receiver.items()
                    if addr == address and kind == "transfer.confirmed"
                ]
                if hits:
                    delays.append(hits[0] - mined)
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no transfer.confirmed callback for {address[:12]}")
                time.sleep(0.02)
    p50 = percentile(delays, 0.5)
    p99 = percentile(delays, 0.99)
    note = f"{len(delays)} payments, poll {POLL}, min {min(delays):.2f}s max {max(delays):.2f}s"
    ctx.add(Figure(NAME, "block mined -> callback received, p50", p50, "s", note=note))
    ctx.add(Figure(NAME, "block mined -> callback received, p99", p99, "s"))


async def _clear(url: str) -> None:
    db = open_database(url)
    try:
        await clear_requests(db)
    finally:
        await db.dispose()


def run(ctx: Context) -> None:
    """Benchmark callback delivery rate and block-to-callback delay."""
    count = 500 if ctx.quick else 2_000
    payments = 8 if ctx.quick else 20
    section(
        f"callbacks: delivery of {count} queued events ({ctx.repeats} repeats); "
        f"delay over {payments} payments"
    )
    receiver = ReceiverProcess()
    try:
        wallet = fresh_wallet(ctx.devnet, "bench-callbacks", open_wallet=False)
        try:
            with fresh_database() as url:
                gateway = _throughput(ctx, url, wallet.url, receiver, count)
                try:
                    _latency(ctx, url, gateway, receiver, payments)
                    ctx.record_rss("callbacks: delivery + payments", gateway.peak_rss_kib())
                finally:
                    gateway.stop()
        finally:
            wallet.stop()
    finally:
        receiver.stop()
