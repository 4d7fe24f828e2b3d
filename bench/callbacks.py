"""Callbacks: delivery rate from the outbox, and delay from a mined block to its callback.

Delivery rate: N due ``transfer.confirmed`` events (one per payment request, so the
one-at-a-time-per-request rule does not serialise them) are seeded directly into
the ``events`` table with a callback URL on a local receiver (``bench.receiver``, its
own process); then the gateway starts. The rate is N over the time from the first to
the last callback received; the time until PostgreSQL shows all N delivered is
reported from the moment the process was spawned.

Delay, at the default poll (``--poll-frequency 5s``): several gateways on the same
chain, each on its own wallet-rpc and database: this version polling, with
``--daemon-address`` (checks every second, refresh on change), with ``--daemon-zmq``
(woken by monerod's announcements), and the baseline's (``--baseline REV``). For each
payment every gateway gets a ``POST /receive`` with a callback URL, one transaction of
the funder pays them all (it waits in the pool), then after a random pause of 0..5 s
(so this loop does not lock onto the gateways' poll period) ``devnet.mine(1)``; the
delay is from ``mine()`` returning to each ``transfer.confirmed`` callback arriving:
the poll's phase plus one tick plus delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx

from bench.baseline import Baseline, same_gateway
from bench.common import (
    Context,
    Figure,
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
from bench.metering import Meter, Usage
from bench.receiver import ReceiverProcess
from testsupport.gateway import GatewayProcess

NAME = "callbacks"
POLL = "1s"
# The delay is measured at the default poll (the targets are set there).
DELAY_POLL = "5s"
DELAY_POLL_SECONDS = 5.0
POLL_TARGET_S = 2.5  # --daemon-address: checks every second, refresh on change
ZMQ_TARGET_S = 1.0  # --daemon-zmq: a tick on every announcement
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
            Path(ctx.workdir) / NAME,
            wallet_url,
            url,
            # The receiver is on loopback, an internal address the gateway refuses by default.
            ["--poll-frequency", POLL, "--callback-allow", "127.0.0.1"],
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


@dataclass
class _Variant:
    """One gateway of the delay benchmark: a version and its sync options."""

    label: str
    gateway: GatewayProcess
    delays: list[float] = field(default_factory=list)
    address: str = ""


def _variants(ctx: Context, stack: contextlib.ExitStack) -> list[_Variant]:
    """The gateways compared, each on its own wallet-rpc and database, same chain."""
    loopback = ["--callback-allow", "127.0.0.1", "--poll-frequency", DELAY_POLL]
    wanted: list[tuple[str, Baseline | None, list[str]]] = [
        ("poll", None, []),
        ("--daemon-address", None, ["--daemon-address", ctx.devnet.daemon_url]),
        ("--daemon-zmq", None, ["--daemon-zmq", ctx.devnet.zmq_pub_url]),
    ]
    if ctx.baseline is not None:
        wanted.insert(0, (ctx.baseline.label, ctx.baseline, []))
    variants = []
    for n, (label, baseline, args) in enumerate(wanted):
        wallet = fresh_wallet(ctx.devnet, f"bench-delay-{n}", open_wallet=False)
        stack.callback(wallet.stop)
        url = stack.enter_context(fresh_database())
        workdir = Path(ctx.workdir) / f"{NAME}-delay-{n}"
        gateway = same_gateway(baseline, workdir, wallet.url, url, [*loopback, *args])
        stack.callback(gateway.stop)
        gateway.start(wait=False)
        variants.append(_Variant(label, gateway))
    for variant in variants:
        variant.gateway.wait_ready()
    return variants


def _latency(ctx: Context, receiver: ReceiverProcess, payments: int) -> None:
    """Block mined -> callback received, every variant paid in the same transaction."""
    receiver.reset()
    rng = random.Random(7)
    with contextlib.ExitStack() as stack:
        variants = _variants(ctx, stack)
        with httpx.Client(timeout=60, trust_env=False) as client:
            for _ in range(payments):
                for variant in variants:
                    answer = client.post(
                        variant.gateway.url + "/receive",
                        json={
                            "amount": AMOUNT,
                            "description": "bench",
                            "callback_url": receiver.url,
                        },
                    )
                    answer.raise_for_status()
                    variant.address = answer.json()["address"]
                ctx.devnet.pay_many([(v.address, AMOUNT) for v in variants])
                # A random phase against the poll loops: without it the loop of this
                # benchmark locks onto the gateways' tick period and the delay looks fixed.
                time.sleep(rng.uniform(0, DELAY_POLL_SECONDS))
                ctx.devnet.mine(1)
                mined = time.time()
                _collect(receiver, variants, mined)
        for variant in variants:
            delays = variant.delays
            note = (
                f"{len(delays)} payments, poll {DELAY_POLL}, "
                f"min {min(delays):.2f}s max {max(delays):.2f}s"
            )
            target: float | None = POLL_TARGET_S
            if variant.label == "--daemon-zmq":
                target = ZMQ_TARGET_S
            elif variant.label.startswith("baseline"):
                target = None
            name = f"block mined -> callback, {variant.label}"
            ctx.add(Figure(NAME, f"{name}, p50", percentile(delays, 0.5), "s", target, note=note))
            ctx.add(Figure(NAME, f"{name}, p99", percentile(delays, 0.99), "s"))


def _collect(receiver: ReceiverProcess, variants: list[_Variant], mined: float) -> None:
    """Wait for every variant's transfer.confirmed callback; record its delay."""
    deadline = time.monotonic() + 60
    waiting = {v.address: v for v in variants}
    while waiting:
        for at, kind, addr in receiver.items():
            if kind == "transfer.confirmed" and addr in waiting:
                waiting.pop(addr).delays.append(at - mined)
        if time.monotonic() > deadline:
            raise TimeoutError(f"no transfer.confirmed callback for {', '.join(waiting)}")
        time.sleep(0.02)


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
                ctx.record_rss("callbacks: delivery", gateway.peak_rss_kib())
                gateway.stop()
        finally:
            wallet.stop()
        _latency(ctx, receiver, payments)
    finally:
        receiver.stop()
