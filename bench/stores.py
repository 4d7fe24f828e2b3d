"""Stores: the sync tick with 1, 10 and 50 stores; the default store beside f1fb26a.

``python -m bench.stores`` (``--help``; or ``python -m bench --only stores``): a devnet, and a
git worktree of ``--baseline`` (the main before stores) under /tmp. On PostgreSQL and SQLite:
(1) per store count N, a wallet of N accounts with 20 subaddresses each, two per account paid
(2 blocks deep: in the scan window), N ``stores`` rows and 20 requests per store; the tick
(``SyncEngine.tick()``, in a child process of this version or, at 1 store, of the baseline)
refreshing every tick and through ``RefreshGate`` (``--daemon-address``): time, wallet-rpc
calls, SQL statements. (2) Both versions' gateways (own wallet-rpc and database; a pool of
2,500 refilled as taken from, full as each point starts; alternating): ``GET /receive/{address}``
over 1,000 requests of 10 transfers, ``POST /receive``, 1 and 16 clients. (3) Beside the
account stores, one store on its own wallet-rpc (``bench/stores_own.py``): its own tick.
``--baseline none``: this version alone (no worktree, no HTTP points).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import event, insert, text

from bench import common, runner, stores_own
from bench.baseline import Baseline, checkout, same_gateway
from bench.common import Context
from bench.loadgen import LoadResult, run_load
from bench.stores_own import CountingWallet
from bench.tick import SqlTimer
from testsupport.gateway import GatewayProcess, count_rows
from xmrgate.adapters.daemon_rpc import DaemonClient
from xmrgate.adapters.store import tables
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.core.sync import SyncEngine
from xmrgate.core.sync_gate import RefreshGate
from xmrgate.devnet import Devnet, WalletRpc

NAME = "stores"
NAN = float("nan")
BASELINE = "f1fb26a"
PER_STORE, PAID = 20, 2  # requests per store; of them paid for real
CLIENTS = (1, 16)
READ_REQUESTS, READ_TRANSFERS = 1_000, 10_000
POOL = 2_500  # refilled as soon as taken from (as bench/create.py), full before each point
POOL_ARGS = ["--address-pool-size", str(POOL), "--address-pool-low-water", str(POOL - 1)]
POST = {"method": "POST", "path": "/receive", "body": {"amount": 10**9, "description": "b"}}
TAKE = (  # the read set's subaddresses: the top of the pool (both versions' schemas)
    "DELETE FROM address_pool WHERE subaddr_index IN (SELECT subaddr_index FROM address_pool "
    f"ORDER BY subaddr_index DESC LIMIT {READ_REQUESTS}) RETURNING subaddr_index, address"
)
MODES = {"refresh": "refresh every tick", "gate": "--daemon-address"}
COLUMNS = ("address", "subaddr_index", "amount", "description", "created_at", "created_height")
Wallets = dict[int, tuple[WalletRpc, list[dict[str, Any]]]]
Runs = dict["Point", list[dict[str, Any]]]


def _database(where: str) -> Database:
    if where.startswith("postgresql://"):
        return common.open_database(where)
    return Database(f"sqlite+aiosqlite:///{where}")


async def _seed_stores(db: Database, spec: dict[str, Any]) -> None:
    """The stores and their requests, in the running version's schema (once per database)."""
    async with db.read() as conn:
        if (await conn.execute(text("SELECT count(*) FROM payment_requests"))).scalar():
            return
    scoped = "store_id" in tables.payment_requests.c  # False before stores
    now = datetime.now(UTC)
    rows = [
        dict(zip(COLUMNS, (a, i, 10**12, f"{s['id']} {i}", now, 1), strict=True))
        | ({"store_id": s["id"]} if scoped else {})
        for s in spec["stores"]
        for i, a in s["requests"]
    ]
    others = [
        {"id": s["id"], "name": s["id"], "account_index": s["account"], "enabled": True}
        for s in spec["stores"]
        if s["account"]
    ]
    async with db.write() as conn:
        if others:
            await conn.execute(insert(tables.stores), [o | {"created_at": now} for o in others])
        await conn.execute(insert(tables.payment_requests), rows)
    await common.set_sync_height(db, spec["height"])
    if spec.get("own"):  # this version only (the baseline's schema has no own wallets)
        await stores_own.seed(db, spec["own"], now, spec["height"])
    if not db.is_sqlite:
        await common.analyze(db)


async def _tick_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Ticks of both modes on one database; per tick (s, wallet-rpc s, SQL s, statements)."""
    db, wallet = _database(spec["database"]), CountingWallet(spec["wallet"])
    daemon = DaemonClient(spec["daemon"])
    sql_n: Counter[str] = Counter()  # SQL statements ("n") of the current tick
    out: dict[str, Any] = {}
    try:
        await db.migrate()
        await _seed_stores(db, spec)
        sql = SqlTimer(db.engine)
        event.listen(db.engine.sync_engine, "after_cursor_execute", lambda *_: sql_n.update("n"))
        for mode in MODES:
            source = wallet if mode == "refresh" else RefreshGate(wallet, daemon)
            engine = SyncEngine(SqlSyncStore(db), source, zero_conf=False, reorg_margin=10)
            out[mode] = await stores_own.measure(engine, wallet, sql, sql_n, spec["ticks"])
        if spec.get("own"):
            out["own"] = await stores_own.own_ticks(db, spec, sql, sql_n)
        return out
    finally:
        await asyncio.gather(daemon.aclose(), wallet.aclose(), db.dispose())


def _run_child(spec: dict[str, Any], base: Baseline | None, workdir: Path) -> dict[str, Any]:
    env = dict(os.environ) | ({"PYTHONPATH": str(base.path / "src")} if base else {})
    (path := workdir / f"tick-{uuid.uuid4().hex[:8]}.json").write_text(json.dumps(spec))
    command = [sys.executable, "-m", "bench.stores", "--tick-child", str(path)]
    done = subprocess.run(
        command, cwd=common.REPO_ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(f"tick child failed:\n{done.stderr[-3000:]}")
    return cast(dict[str, Any], json.loads(done.stdout.strip().splitlines()[-1]))


def _wallets(devnet: Devnet, ns: list[int], stack: ExitStack, idle: bool) -> tuple[Wallets, int]:
    """Per store count: N accounts of PER_STORE subaddresses, PAID paid (idle: default only)."""
    wallets: Wallets = {}
    paying: list[tuple[str, int]] = []
    for n in ns:
        wallet = common.fresh_wallet(devnet, f"stores-{n}", open_wallet=True)
        stack.callback(wallet.stop)
        accounts = [0, *(int(wallet.call("create_account")["account_index"]) for _ in range(n - 1))]
        stores = []
        for account in accounts:
            made = wallet.call("create_address", {"account_index": account, "count": PER_STORE})
            pairs = list(zip(made["address_indices"], made["addresses"], strict=True))
            name = f"store-{account}" if account else "default"
            stores.append({"id": name, "account": account, "requests": pairs})
            paid = pairs[: 0 if idle and account else PAID]
            paying += [(address, 2_000_000_000 + 1_000 * index) for index, address in paid]
        wallets[n] = (wallet, stores)
    for start in range(0, len(paying), 15):  # 16 outputs per transaction, change included
        devnet.pay_many(paying[start : start + 15])
    devnet.mine(2)
    for wallet, _ in wallets.values():
        wallet.call("refresh", timeout=120)
    return wallets, int(wallets[1][0].call("get_height")["height"])


@dataclass(frozen=True)
class Point:
    version: str
    backend: str
    stores: int


def _ticks(args: argparse.Namespace, ctx: Context, base: Baseline | None) -> Runs:
    counts = sorted(set(args.stores) | {1})
    points = [Point("new", b, n) for b in args.backends for n in counts]
    points += [Point(base.label, b, 1) for b in args.backends if base]
    runs: Runs = {p: [] for p in points}
    with ExitStack() as stack:
        own = stores_own.prepare(ctx.devnet, stack, PER_STORE, 0 if args.idle else PAID)
        wallets, height = _wallets(ctx.devnet, counts, stack, args.idle)
        specs: dict[Point, dict[str, Any]] = {}
        for p in points:
            file = str(ctx.workdir / f"tick-{p.version[-7:]}-{p.stores}.sqlite3")
            pg = p.backend == "postgresql"
            wallet, stores = wallets[p.stores]
            specs[p] = {"database": stack.enter_context(common.fresh_database()) if pg else file}
            specs[p] |= {"wallet": wallet.url, "daemon": ctx.devnet.daemon_url, "height": height}
            specs[p] |= {"stores": stores, "ticks": args.ticks}
            specs[p] |= {"own": own} if p.version == "new" else {}
        for r in range(args.repeats):
            for p in points if r % 2 == 0 else points[::-1]:
                version = None if p.version == "new" else base
                runs[p].append(_run_child(specs[p], version, ctx.workdir))
            print(f"  tick repeat {r + 1}/{args.repeats} done", flush=True)
    return runs


def _summary(runs: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """Medians over the repeats of one point and mode (ms; p50/p99 per repeat, then median)."""
    ticks = [t for run in runs for t in run[mode]["ticks"]]
    calls = sum((Counter(run[mode]["calls"]) for run in runs), Counter[str]())
    ms = sum((Counter(run[mode]["ms"]) for run in runs), Counter[str]())
    per = sorted(calls.items())
    seconds = [[t[0] * 1e3 for t in run[mode]["ticks"]] for run in runs]
    return {
        "p50": common.median([common.percentile(s, 0.5) for s in seconds]),
        "p99": common.median([common.percentile(s, 0.99) for s in seconds]),
        "cpu": common.median([run[mode]["cpu"] * 1e3 for run in runs]),
        "sql": common.median([t[2] * 1e3 for t in ticks]),
        "n": common.median([float(t[3]) for t in ticks]),
        "calls": ", ".join(f"{m} {c / len(ticks):g} ({ms[m] * 1e3 / c:.1f} ms)" for m, c in per),
        "observed": runs[0][mode]["observed"],
    }


@dataclass
class Subject:
    label: str
    gateway: GatewayProcess
    database: str
    paths: list[dict[str, Any]] = field(default_factory=list)
    loads: dict[tuple[str, int], list[LoadResult]] = field(default_factory=dict)


async def _seed_read(where: str, height: int) -> list[str]:
    """1,000 requests on real subaddresses taken out of the pool, 10 transfers each."""
    db = _database(where)
    try:
        async with db.write() as conn:
            real = {int(i): str(a) for i, a in await conn.execute(text(TAKE))}
        rng, first = random.Random(1), min(real)
        seeded = await common.seed_requests(db, len(real), first_index=first, rng=rng, real=real)
        assert len(seeded) == READ_REQUESTS, "the pool's indices are not contiguous"
        await common.seed_transfers(db, seeded, READ_TRANSFERS, max_height=height - 30, rng=rng)
        if not db.is_sqlite:
            await common.analyze(db)
        return [r.address for r in seeded]
    finally:
        await db.dispose()


def _settle(subjects: list[Subject]) -> None:
    """Wait until every pool is full: no refill runs as a point starts."""
    while any(count_rows(s.gateway, "address_pool") < POOL for s in subjects):
        time.sleep(0.5)


def _http(args: argparse.Namespace, ctx: Context, base: Baseline, backend: str) -> list[Subject]:
    t = args.seconds
    with ExitStack() as stack:
        subjects = []
        for label, version in (("new", None), (base.label, base)):
            wallet = common.fresh_wallet(ctx.devnet, f"stores-http-{backend}", open_wallet=False)
            stack.callback(wallet.stop)
            file = str(ctx.workdir / f"http-{label[-7:]}.sqlite3")
            pg = backend == "postgresql"
            database = stack.enter_context(common.fresh_database()) if pg else file
            directory = ctx.workdir / f"gateway-{label[-7:]}-{backend}"
            gateway = same_gateway(version, directory, wallet.url, database, POOL_ARGS)
            stack.callback(gateway.close)
            gateway.start(wait=False)  # both fill their pools at once
            subjects.append(Subject(label, gateway, database))
        started = time.monotonic()
        for s in subjects:
            s.gateway.wait_ready(timeout=900)
        _settle(subjects)
        print(f"  {backend}: both pools of {POOL:,} full after {time.monotonic() - started:.0f} s")
        for s in subjects:
            addresses = asyncio.run(_seed_read(s.database, ctx.devnet.height()))
            random.Random(2).shuffle(addresses)
            s.paths = [{"method": "GET", "path": f"/receive/{a}"} for a in addresses]
            run_load(s.gateway.url, s.paths, concurrency=16, duration=1.0)  # warm-up
        for kind, r, c in itertools.product(("GET", "POST"), range(args.repeats), CLIENTS):
            for s in subjects if r % 2 == 0 else subjects[::-1]:
                _settle(subjects)
                paths, warmup = (s.paths, 0.5) if kind == "GET" else ([POST], 0.2)
                load = run_load(s.gateway.url, paths, concurrency=c, duration=t, warmup=warmup)
                s.loads.setdefault((kind, c), []).append(load)
        return subjects


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _report_ticks(ctx: Context, runs: Runs) -> None:
    head = ["backend", "version", "stores", "transfers in window"]
    for m in MODES.values():
        head += [f"{m}: tick p50 / p99 ms", "wallet-rpc calls/tick", "CPU ms", "SQL ms (n)"]
    lines = [_line(head), _line(["---"] * len(head))]
    sums = {(p, m): _summary(r, m) for p, r in runs.items() for m in MODES}
    for p in runs:
        cells = [p.backend, p.version, str(p.stores), str(sums[(p, "refresh")]["observed"])]
        for m in MODES:
            s = sums[(p, m)]
            cells += [f"{s['p50']:.1f} / {s['p99']:.1f}", s["calls"], f"{s['cpu']:.1f}"]
            cells.append(f"{s['sql']:.2f} ({s['n']:.0f})")
        lines.append(_line(cells))
    lines += ["", _line(["ratio", "backend", "mode", "tick p50", "tick p99", "SQL per tick"])]
    lines.append(_line(["---"] * 6))
    for p, (m, title) in itertools.product(runs, MODES.items()):
        one = sums[(Point("new", p.backend, 1), m)]
        if p.version == "new" and p.stores == 1:
            continue
        what, new, ref = (f"{p.stores} / 1 stores", sums[(p, m)], one)
        if p.version != "new":
            what, new, ref = (f"new / {p.version}, 1 store", one, sums[(p, m)])
        keys = ("p50", "p99", "sql")
        ratios = [f"{new[k] / (ref[k] or NAN):.2f}x ({new[k]:.2f} / {ref[k]:.2f} ms)" for k in keys]
        lines.append(_line([what, p.backend, title, *ratios]))
        name = f"tick p50, {what}, {p.backend}, {title}"
        ctx.add(common.Figure(NAME, name, new["p50"] / (ref["p50"] or NAN), "x", note=ratios[0]))
    print("\n".join(["", *lines]), flush=True)


def _report_http(ctx: Context, backend: str, subjects: list[Subject]) -> None:
    head = ["figure", "backend", subjects[1].label, "new", "new / old"]
    lines = [_line(head), _line(["---"] * 5)]
    for kind, c in [(k, c) for k in ("GET", "POST") for c in CLIENTS]:
        rates, texts, p99s, bad = [], [], [], 0
        for s in subjects[::-1]:  # the baseline first
            loads = s.loads[(kind, c)]
            rates.append(common.median([x.statuses.get("200", 0) / x.seconds for x in loads]))
            p50, p99 = (common.median([getattr(x, k) for x in loads]) for k in ("p50_ms", "p99_ms"))
            p99s.append(p99)
            texts.append(f"{rates[-1]:,.0f}/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms")
            bad += sum(x.completed - x.statuses.get("200", 0) + x.errors for x in loads)
        name = f"{kind} /receive{'/{address}' if kind == 'GET' else ''}, {c} client{'s' * (c > 1)}"
        speed = rates[1] / (rates[0] or NAN)
        ratio = f"{speed:.2f}x rate, {p99s[1] / (p99s[0] or NAN):.2f}x p99"
        lines.append(_line([name, backend, *texts, ratio + (f"; {bad} not 200" if bad else "")]))
        note = f"{texts[1]} vs {texts[0]}"
        ctx.add(common.Figure(NAME, f"{name}, {backend}: new/old", speed, "x", note=note))
    print("\n".join(["", *lines]), flush=True)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.stores", description=__doc__)
    parser.add_argument("--stores", default="1,10,50", help="store counts (1 is always run)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ticks", type=int, default=20, help="measured ticks per mode and repeat")
    parser.add_argument("--seconds", type=float, default=1.5, help="per HTTP point")
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--no-http", action="store_true", help="the tick only")
    parser.add_argument("--idle", action="store_true", help="pay only the default store")
    parser.add_argument("--baseline", default=BASELINE, metavar="REV", help="none: no baseline")
    parser.add_argument("--keep-workdir", action="store_true")
    args = parser.parse_args(argv)
    args.stores = [int(n) for n in args.stores.split(",")]
    args.backends = args.backends.split(",")
    return args


def run(ctx: Context, options: argparse.Namespace | None = None) -> None:
    """``python -m bench --only stores``: beside ``--baseline`` (or f1fb26a); ``options``:
    those of ``python -m bench.stores``, else the run's repeats (and fewer ticks, quick)."""
    args = options or _parse(["--repeats", str(ctx.repeats)] + ["--ticks", "15"] * ctx.quick)
    with ExitStack() as stack:
        # --baseline none: this version alone (no worktree; the HTTP points compare versions).
        alone = args.baseline == "none"
        base = ctx.baseline or (None if alone else stack.enter_context(checkout(BASELINE)))
        beside = base.label if base else "no baseline"
        title = f"stores {args.stores} beside {beside}: {args.repeats} x {args.ticks} ticks"
        common.section(f"{title}, {args.seconds:g} s HTTP points; load {os.getloadavg()[0]:.2f}")
        runs = _ticks(args, ctx, base)
        _report_ticks(ctx, runs)
        stores_own.report(ctx, NAME, runs, _summary)
        for backend in [] if args.no_http else args.backends:
            if base is not None:
                _report_http(ctx, backend, _http(args, ctx, base, backend))
        print(f"  load average at the end: {os.getloadavg()[0]:.2f}", flush=True)


def main(argv: list[str]) -> int:
    """``python -m bench.stores``: ``python -m bench --only stores`` with these options."""
    if argv[:1] == ["--tick-child"]:  # one tick child: print its answer
        print(json.dumps(asyncio.run(_tick_child(json.loads(Path(argv[1]).read_text())))))
        return 0
    args = _parse(argv)
    flags = ["--only", NAME, "--repeats", str(args.repeats)]
    flags += ["--baseline", args.baseline] * (args.baseline != "none")
    flags += ["--profile", "never"] + ["--keep-workdir"] * args.keep_workdir
    return runner.main(flags, {NAME: lambda ctx: run(ctx, args)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
