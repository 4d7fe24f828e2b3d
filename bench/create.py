"""``POST /receive`` rate against calling the wallet's ``create_address`` directly.

Both go to the same wallet-rpc (the gateway's own, with its wallet open) at the same
concurrency, from the same load generator, alternating which goes first in each
repeat (the wallet's subaddress count grows as the run goes on). The gateway runs
its sync loop meanwhile, as it does in production. The figure is the ratio of the
two rates: how much of the wallet's own speed the gateway keeps.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bench import profiling
from bench.common import (
    Context,
    Figure,
    GatewayProcess,
    Meter,
    Usage,
    fresh_database,
    fresh_wallet,
    median,
    open_database,
    section,
)
from bench.loadgen import LoadResult, run_load
from xmrgate.store.payments import PaymentStore
from xmrgate.wallet import WalletClient

NAME = "create"
CONCURRENCY = (1, 16)
TARGET_RATIO = 0.80
LABEL = "bench order"

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


Measured = tuple[LoadResult, Usage]


async def _step_cost(url: str, wallet_url: str, count: int) -> tuple[float, float]:
    """CPU milliseconds per call of POST /receive's two steps, run in this process.

    ``WalletClient.create_address()`` (the wallet's own work is in another process and
    not counted) and ``PaymentStore.create()``, one after the other, no HTTP.
    """
    wallet = WalletClient(wallet_url)
    db = open_database(url)
    try:
        store = PaymentStore(db)
        await store.get("warm-up")
        created = []
        started = time.process_time()
        for _ in range(count):
            created.append(await wallet.create_address(label=LABEL))
        wallet_cpu = time.process_time() - started
        started = time.process_time()
        for address, index in created:
            await store.create(
                address=address,
                subaddr_index=index,
                amount=1_000_000_000,
                description=LABEL,
                callback_url=None,
                return_url=None,
            )
        store_cpu = time.process_time() - started
        return 1e3 * wallet_cpu / count, 1e3 * store_cpu / count
    finally:
        await wallet.aclose()
        await db.dispose()


def _cpu_line(kind: str, runs: list[Measured]) -> str:
    """CPU per created address of the gateway and of wallet-rpc, and the machine's load."""
    ok = [(r, u) for r, u in runs if r.rps > 0 and u.wall > 0]
    gateway = median([1e3 * u.gateway / (r.rps * u.wall) for r, u in ok])
    wallet = median([1e3 * u.extra / (r.rps * u.wall) for r, u in ok])
    wallet_cores = median([u.extra / u.wall for _, u in ok])
    others = median([u.others / u.wall for _, u in ok])
    return (
        f"{kind}: CPU per address: wallet-rpc {wallet:.1f} ms, gateway {gateway:.1f} ms; "
        f"wallet-rpc used {wallet_cores:.2f} cores, other processes {others:.2f} cores"
    )


def run(ctx: Context) -> None:
    """Benchmark POST /receive against wallet-rpc create_address at 1 and 16 clients."""
    duration = 1.5 if ctx.quick else 2.5
    section(
        f"POST /receive vs wallet create_address: {duration:g}s per point, "
        f"{ctx.repeats} repeats, clients {', '.join(map(str, CONCURRENCY))}"
    )
    wallet = fresh_wallet(ctx.devnet, "bench-create", open_wallet=False)
    try:
        with fresh_database() as url:
            gateway = GatewayProcess(Path(ctx.workdir) / NAME, wallet.url, url)
            try:
                gateway.start()
                run_load(gateway.url, [GATEWAY_REQUEST], concurrency=4, duration=1.0)
                direct: dict[int, list[Measured]] = {c: [] for c in CONCURRENCY}
                through: dict[int, list[Measured]] = {c: [] for c in CONCURRENCY}
                for r in range(ctx.repeats):
                    for c in CONCURRENCY:
                        order = [
                            (wallet.url, WALLET_REQUEST, direct),
                            (gateway.url, GATEWAY_REQUEST, through),
                        ]
                        if r % 2:
                            order.reverse()
                        for target, request, into in order:
                            meter = Meter(gateway.pid, url, [wallet.pid])
                            meter.start()
                            result = run_load(target, [request], concurrency=c, duration=duration)
                            into[c].append((result, meter.stop()))
                missed = False
                for c in CONCURRENCY:
                    d = median([x.rps for x, _ in direct[c]])
                    g = median([x.rps for x, _ in through[c]])
                    errors = sum(x.errors for x, _ in direct[c] + through[c])
                    note = (
                        f"gateway {g:.0f}/s p50 "
                        f"{median([x.p50_ms for x, _ in through[c]]):.1f} ms; wallet {d:.0f}/s "
                        f"p50 {median([x.p50_ms for x, _ in direct[c]]):.1f} ms"
                    )
                    if errors:
                        note += f"; {errors} errors"
                    ctx.add(
                        Figure(
                            NAME,
                            f"POST /receive, {c} clients: rate",
                            g,
                            "req/s",
                            note=f"wallet alone {d:.0f}/s",
                        )
                    )
                    figure = Figure(
                        NAME,
                        f"POST /receive / create_address, {c} clients",
                        100 * g / d if d else float("nan"),
                        "%",
                        100 * TARGET_RATIO,
                        higher_is_better=True,
                        note=note,
                    )
                    ctx.add(figure)
                    print(f"    {_cpu_line('direct', direct[c])}", flush=True)
                    print(f"    {_cpu_line('via gateway', through[c])}", flush=True)
                    missed = missed or not figure.met
                client_ms, store_ms = asyncio.run(_step_cost(url, wallet.url, 100))
                ctx.add(
                    Figure(
                        NAME,
                        "POST /receive: gateway CPU/request (16 clients)",
                        median(
                            [
                                1e3 * u.gateway / (r.rps * u.wall)
                                for r, u in through[CONCURRENCY[-1]]
                            ]
                        ),
                        "ms",
                        note=(
                            f"in-process: WalletClient.create_address {client_ms:.2f} ms + "
                            f"PaymentStore.create {store_ms:.2f} ms"
                        ),
                    )
                )
                if ctx.profile == "always" or (ctx.profile == "auto" and missed):
                    _profile(ctx, gateway, 4.0 if ctx.quick else 6.0)
                ctx.record_rss("create: POST load", gateway.peak_rss_kib())
            finally:
                gateway.stop()
    finally:
        wallet.stop()
