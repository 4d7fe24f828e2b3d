"""Sync tick time as the stored history grows.

A fresh wallet on the devnet receives a handful of real transfers (two transactions
to five subaddresses, mined two blocks deep so they stay in the scan window). The
database holds 1,000 open payment requests (five of them on those real
subaddresses) and 1,000, then 10,000, then 50,000 stored transfers, seeded directly:
state ``unlocked``, heights well below the scan window, spread evenly over the
requests. ``SyncEngine.tick()`` then runs many times in this process against the real
wallet-rpc and PostgreSQL; each tick refreshes the wallet, reads the window's
transfers and reconciles them with the store (nothing changes, so nothing is
written: the steady state between blocks).

Each tick's time is split into wallet-rpc calls, SQL statements (time inside the
driver's execute, network included) and the rest (Python: SQLAlchemy, the ledger).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common import (
    Context,
    Figure,
    analyze,
    fresh_database,
    fresh_wallet,
    median,
    open_database,
    percentile,
    section,
    seed_requests,
    seed_transfers,
    set_sync_height,
)
from xmrgate.adapters.daemon_rpc import DaemonClient
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.adapters.wallet_rpc import WalletClient
from xmrgate.core.sync import SyncEngine
from xmrgate.core.sync_gate import RefreshGate
from xmrgate.devnet import WalletRpc

NAME = "tick"
SIZES = (1_000, 10_000, 50_000)
OPEN_REQUESTS = 1_000
REAL_SUBADDRESSES = 5
TARGET_MS = 50.0  # at 10k stored transfers
TARGET_SIZE = 10_000


class TimedWallet(WalletClient):
    """xmrgate's wallet client, adding up the time spent in wallet-rpc calls."""

    def __init__(self, url: str) -> None:
        """A client of ``url`` with a zeroed clock."""
        super().__init__(url)
        self.seconds = 0.0
        self.by_method: dict[str, float] = defaultdict(float)

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """The usual call, timed."""
        started = time.perf_counter()
        try:
            return await super().call(method, params, timeout=timeout)
        finally:
            spent = time.perf_counter() - started
            self.seconds += spent
            self.by_method[method] += spent


class SqlTimer:
    """Adds up time inside the driver's execute for every statement of an engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        """Listen to ``engine``'s cursor events."""
        self.seconds = 0.0
        self.by_statement: dict[str, float] = defaultdict(float)
        self._started: list[float] = []
        event.listen(engine.sync_engine, "before_cursor_execute", self._before)
        event.listen(engine.sync_engine, "after_cursor_execute", self._after)

    def _before(self, *_args: Any) -> None:
        self._started.append(time.perf_counter())

    def _after(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        spent = time.perf_counter() - self._started.pop()
        self.seconds += spent
        self.by_statement[" ".join(statement.split())[:70]] += spent


def _prepare_wallet(ctx: Context, wallet: WalletRpc) -> tuple[dict[int, str], int]:
    """Real subaddresses with real transfers; returns them and the wallet height."""
    addresses: dict[int, str] = {}
    for _ in range(REAL_SUBADDRESSES):
        result = wallet.call("create_address", {"account_index": 0, "label": "bench"})
        addresses[int(result["address_index"])] = str(result["address"])
    targets = list(addresses.values())
    ctx.devnet.pay_many([(a, 2_000_000_000) for a in targets])
    ctx.devnet.pay_many([(a, 3_000_000_000) for a in targets[:3]])
    ctx.devnet.mine(2)
    wallet.call("refresh", timeout=120)
    return addresses, int(wallet.call("get_height")["height"])


async def _ticks(
    ctx: Context,
    engine: SyncEngine,
    mode: str,
    size: int,
    ticks: int,
    timed: TimedWallet,
    sql: SqlTimer,
) -> None:
    """Time ``ticks`` ticks ``ctx.repeats`` times with nothing new on the chain."""
    for _ in range(5):  # warm-up: first tick stores the real transfers
        first = await engine.tick()
    print(
        f"  {size:>6} stored transfers{mode}: window {first.window_start}..{first.height}, "
        f"{first.observed} transfers observed per tick",
        flush=True,
    )
    p50s: list[float] = []
    p99s: list[float] = []
    wallet_ms: list[float] = []
    sql_ms: list[float] = []
    own_ms: list[float] = []
    sql.by_statement.clear()
    timed.by_method.clear()
    for _ in range(ctx.repeats):
        seconds: list[float] = []
        for _ in range(ticks):
            timed.seconds = sql.seconds = 0.0
            result = await engine.tick()
            seconds.append(result.seconds)
            wallet_ms.append(timed.seconds * 1000)
            own_ms.append((result.seconds - timed.seconds) * 1000)
            sql_ms.append(sql.seconds * 1000)
        p50s.append(percentile(seconds, 0.5) * 1000)
        p99s.append(percentile(seconds, 0.99) * 1000)
    p50 = median(p50s)
    w = median(wallet_ms)
    s = median(sql_ms)
    n = ticks * ctx.repeats
    methods = ", ".join(
        f"{m} {t * 1000 / n:.1f}" for m, t in sorted(timed.by_method.items(), key=lambda kv: -kv[1])
    )
    statements = sorted(sql.by_statement.items(), key=lambda kv: -kv[1])[:3]
    print(f"    wallet-rpc ms/tick: {methods}", flush=True)
    for statement, spent in statements:
        print(f"    SQL {spent * 1000 / n:5.2f} ms/tick: {statement}", flush=True)
    target = TARGET_MS if size == TARGET_SIZE else None
    label = f"{size // 1000}k transfers{mode}"
    rest = "rest" if not mode else "daemon + rest"
    note = f"wallet {w:.1f} + SQL {s:.1f} + {rest} {max(p50 - w - s, 0):.1f} ms"
    ctx.add(Figure(NAME, f"tick p50, {label}", p50, "ms", target, note=note))
    ctx.add(Figure(NAME, f"tick p99, {label}", median(p99s), "ms", target))
    ctx.add(
        Figure(
            NAME,
            f"tick p50 without wallet-rpc time, {label}",
            median(own_ms),
            "ms",
            note="database + Python part of the tick" + (" + daemon checks" if mode else ""),
        )
    )


async def _measure(
    ctx: Context, url: str, wallet_url: str, real: dict[int, str], height: int
) -> None:
    rng = random.Random(1)
    db = open_database(url)
    timed = TimedWallet(wallet_url)
    try:
        await db.migrate()
        requests = await seed_requests(db, OPEN_REQUESTS, first_index=1, rng=rng, real=real)
        await set_sync_height(db, height)
        sql = SqlTimer(db.engine)
        daemon = DaemonClient(ctx.devnet.daemon_url)
        engines = {
            "": SyncEngine(SqlSyncStore(db), timed, zero_conf=False, reorg_margin=10),
            # What --daemon-address does: nothing changed on the chain, so no refresh.
            " (--daemon-address)": SyncEngine(
                SqlSyncStore(db), RefreshGate(timed, daemon), zero_conf=False, reorg_margin=10
            ),
        }
        ticks = 15 if ctx.quick else 30
        seeded = 0
        try:
            for size in SIZES:
                await seed_transfers(db, requests, size - seeded, max_height=height - 30, rng=rng)
                seeded = size
                await analyze(db)
                for mode, engine in engines.items():
                    await _ticks(ctx, engine, mode, size, ticks, timed, sql)
        finally:
            await daemon.aclose()
    finally:
        await timed.aclose()
        await db.dispose()


def run(ctx: Context) -> None:
    """Benchmark the sync tick at 1k, 10k and 50k stored transfers."""
    section(
        f"sync tick: {OPEN_REQUESTS:,} open requests, 1k/10k/50k stored transfers "
        f"({ctx.repeats} x {15 if ctx.quick else 30} ticks each)"
    )
    wallet = fresh_wallet(ctx.devnet, "bench-tick", open_wallet=True)
    try:
        real, height = _prepare_wallet(ctx, wallet)
        with fresh_database() as url:
            asyncio.run(_measure(ctx, url, wallet.url, real, height))
    finally:
        wallet.stop()
