"""The store on its own wallet-rpc in ``bench/stores.py``: its wallet, rows, tick.

Beside the N account stores of each point, one store (``own``) on a wallet-rpc of its own:
a fresh wallet with as many subaddresses and payments as an account store, its ``stores``
row (``rpc_address``, ``primary_address``, ``wallet_no`` 2), its ``sync_state`` row and its
requests, in the same database. Its tick is the gateway's for such a store: ``SyncEngine``
on ``SqlSyncStore(db, store_id=, sync_id=)`` and that wallet's client, refreshing every
tick (``--daemon-address`` gates the main wallet only). This version only: the
baseline's schema has no stores on their own wallet.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from datetime import datetime
from typing import Any

from sqlalchemy import insert

from bench import common
from bench.tick import SqlTimer, TimedWallet
from xmrgate.adapters.store import tables
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.core.sync import SyncEngine
from xmrgate.devnet import Devnet

OWN_ID = "own"
WALLET_NO = 2  # the first store on its own wallet (the main wallet is 1)
WARM_UP = 3  # ticks before measuring (the first stores the real transfers)
Summary = Callable[[list[dict[str, Any]], str], dict[str, Any]]


class CountingWallet(TimedWallet):
    """The timed wallet client, also counting calls by method."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.calls: Counter[str] = Counter()

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        self.calls[method] += 1
        return await super().call(method, params, timeout=timeout)


def prepare(devnet: Devnet, stack: ExitStack, count: int, paid: int) -> dict[str, Any]:
    """Its wallet-rpc (stopped by ``stack``) with ``count`` subaddresses, the first ``paid``
    of them paid (relayed, mined by the caller with the account stores' payments)."""
    wallet = common.fresh_wallet(devnet, "stores-own", open_wallet=True)
    stack.callback(wallet.stop)
    made = wallet.call("create_address", {"account_index": 0, "count": count})
    pairs = list(zip(made["address_indices"], made["addresses"], strict=True))
    if paid:
        devnet.pay_many([(a, 2_000_000_000 + 1_000 * i) for i, a in pairs[:paid]])
    primary = wallet.call("get_address", {"account_index": 0})["address"]
    return {"url": wallet.url, "primary": primary, "requests": pairs}


async def seed(db: Database, own: dict[str, Any], now: datetime, height: int) -> None:
    """Its stores row, requests and sync_state row (after the main wallet's is written)."""
    requests = [
        {"address": a, "subaddr_index": i, "amount": 10**12, "description": f"{OWN_ID} {i}"}
        | {"created_at": now, "created_height": 1, "store_id": OWN_ID}
        for i, a in own["requests"]
    ]
    async with db.write() as conn:
        await conn.execute(
            insert(tables.stores).values(
                id=OWN_ID,
                name=OWN_ID,
                rpc_address=own["url"],
                primary_address=own["primary"],
                wallet_no=WALLET_NO,
                enabled=True,
                created_at=now,
            )
        )
        await conn.execute(insert(tables.payment_requests), requests)
        await conn.execute(
            insert(tables.sync_state).values(id=WALLET_NO, wallet_height=height, updated_at=now)
        )


async def measure(
    engine: SyncEngine, wallet: CountingWallet, sql: SqlTimer, sql_n: Counter[str], ticks: int
) -> dict[str, Any]:
    """Warm-up ticks, then ``ticks`` measured: per tick (s, wallet-rpc s, SQL s, statements),
    calls by method, their seconds, what the first tick saw, CPU per tick (this process)."""
    for _ in range(WARM_UP):
        first = await engine.tick()
    wallet.calls.clear()
    wallet.by_method.clear()
    timed, cpu = [], time.process_time()
    for _ in range(ticks):
        wallet.seconds = sql.seconds = 0.0
        sql_n.clear()
        result = await engine.tick()
        timed.append((result.seconds, wallet.seconds, sql.seconds, sql_n["n"]))
    cpu = (time.process_time() - cpu) / len(timed)
    out = {"ticks": timed, "calls": dict(wallet.calls), "ms": dict(wallet.by_method)}
    return out | {"observed": first.observed, "cpu": cpu}


async def own_ticks(
    db: Database, spec: dict[str, Any], sql: SqlTimer, sql_n: Counter[str]
) -> dict[str, Any]:
    """The own wallet's ticks, measured as the main wallet's are."""
    wallet = CountingWallet(spec["own"]["url"])
    try:
        store = SqlSyncStore(db, store_id=OWN_ID, sync_id=WALLET_NO)
        engine = SyncEngine(store, wallet, zero_conf=False, reorg_margin=10)
        return await measure(engine, wallet, sql, sql_n, spec["ticks"])
    finally:
        await wallet.aclose()


def report(ctx: common.Context, name: str, runs: Mapping[Any, Any], summary: Summary) -> None:
    """The own wallet's tick at each point of this version, beside the main wallet's."""
    head = ["backend", "account stores beside it", "own wallet: tick p50 / p99 ms"]
    head += ["wallet-rpc calls/tick", "CPU ms", "SQL ms (n)", "main wallet's tick p50 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p, point_runs in runs.items():
        if "own" not in point_runs[0]:
            continue
        own = summary(point_runs, "own")
        main = [summary(point_runs, m)["p50"] for m in ("refresh", "gate")]
        cells = [p.backend, str(p.stores), f"{own['p50']:.1f} / {own['p99']:.1f}", own["calls"]]
        cells += [f"{own['cpu']:.1f}", f"{own['sql']:.2f} ({own['n']:.0f})"]
        cells.append(f"{main[0]:.1f} (refresh), {main[1]:.1f} (--daemon-address)")
        lines.append("| " + " | ".join(cells) + " |")
        figure = f"own-wallet tick p50, beside {p.stores} account stores, {p.backend}"
        ctx.add(common.Figure(name, figure, own["p50"], "ms", note=f"p99 {own['p99']:.1f} ms"))
    print("\n".join(["", "store on its own wallet-rpc (refreshed every tick):", *lines]))
