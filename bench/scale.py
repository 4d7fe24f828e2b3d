"""``python -m bench.scale``: how the tick, the reads and the database grow.

A devnet wallet with ``--subaddresses`` subaddresses (five with real transfers in the scan
window); a PostgreSQL database grown point by point (``--requests`` requests, ``--transfers``
x N / max(N) old transfers, an event per request with transfers). Per point: the sync tick
in this process (refreshing every tick, and through ``RefreshGate`` as ``--daemon-address``
does), the window SELECT in its old and current form, the sizes; at the largest, the plans
of a tick and a retention pass. At each ``--read-requests`` point a gateway process serves
``GET /receive/:address`` and list pages. ``--sqlite``: the largest point on SQLite too.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import re
import secrets
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import httpx
from sqlalchemy import event, insert, select, text, update

from bench import common
from bench.invoice_list import time_http
from bench.tick import SqlTimer, TimedWallet, _prepare_wallet
from testsupport.gateway import GatewayProcess
from testsupport.processes import wait_until
from xmrgate.adapters.daemon_rpc import DaemonClient
from xmrgate.adapters.store import tick_rows
from xmrgate.adapters.store.db import Database, as_utc
from xmrgate.adapters.store.listing import SqlListing
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.retention import RetentionStore
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.adapters.store.tables import events, payment_requests, transfers
from xmrgate.config import postgres_async_url
from xmrgate.core.invoices import ListQuery, decode_cursor, encode_cursor
from xmrgate.core.sync import SyncEngine
from xmrgate.core.sync_gate import RefreshGate
from xmrgate.devnet import Devnet, free_port
from xmrgate.domain.invoice import InvoiceStatus

T = TypeVar("T")
CHUNK = 5000
MIB = 2**20
OWNERS = "SELECT id, address, subaddr_index FROM payment_requests WHERE subaddr_index >= :lo"
OWNERS += " AND subaddr_index < :hi"
MIX = ["complete"] * 55 + ["expired"] * 15 + ["waiting"] * 12 + ["partial"] * 5 + ["paid"] * 13
# The window's SELECT with ``!=`` (before the fix) and now (tick_rows.window_statement), any table.
WINDOW = "SELECT DISTINCT request_id FROM {t} WHERE state = 'pool' OR ({cond} AND height >= {s})"
FORMS = {"!=": "state != 'gone'", "IN": "state IN ('confirmed', 'unlocked')"}
REQUEST_COLUMNS: tuple[str, ...] = ("address", "subaddr_index", "amount", "description")
REQUEST_COLUMNS += ("created_at", "created_height", "expires_at", "status")
TRANSFER_COLUMNS: tuple[str, ...] = ("tx_hash", "subaddr_index", "request_id", "height")
TRANSFER_COLUMNS += ("timestamp", "updated_at", "first_seen")
TRANSFER_FIXED: dict[str, Any] = {"amount": 250_000_000, "fee": 30_000_000, "unlock_time": 0}
TRANSFER_FIXED |= {"double_spend_seen": False, "state": "unlocked"}
OUT: dict[str, list[str]] = {"tick": [], "size": [], "read": [], "plans": []}
BUFFERS = r"(?:hit|read)=(\d+)"
SPREAD = (  # dropped with the database
    "CREATE TABLE spread AS SELECT subaddr_index, state, (random() * 3300000)::int AS height"
    " FROM transfers",
    "CREATE INDEX spread_i ON spread (state, height)",
)
HEADERS = {
    "tick": "| backend | requests | tick p50 ms | p99 | wallet-rpc p50 | SQL p50 | gated p50 ms"
    " | p99 | wallet-rpc p50 | SQL p50 | window SELECT, old / new form | seeding |",
    "size": "| backend | requests | payment_requests | transfers | events | database MiB |",
    "read": "| backend | requests | read | HTTP p50 ms | p99 ms |",
}


def _ints(value: str) -> list[int]:
    return sorted({int(v.replace("_", "")) for v in value.split(",") if v.strip()})


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--requests", type=_ints, default=[1_000, 10_000, 100_000])
    parser.add_argument("--transfers", type=int, default=1_000_000, help="at the largest point")
    parser.add_argument("--read-requests", type=_ints, default=[100_000, 1_000_000])
    parser.add_argument("--subaddresses", type=int, default=10_000)
    parser.add_argument("--ticks", type=int, default=30, help="per point and mode")
    parser.add_argument("--repeats", type=int, default=300, help="sequential GETs per shape")
    parser.add_argument("--sqlite", action="store_true", help="also the largest point on SQLite")
    parser.add_argument("--old-window", action="store_true", help="the window before the fix")
    return parser.parse_args(argv)


def old_window(start: int) -> Any:
    """The tick's window SELECT as it was before the fix (``!=``: the "before" figures)."""
    return text(WINDOW.format(t="transfers", cond=FORMS["!="], s=start))


def kind(url: str) -> str:
    """``PostgreSQL`` or ``SQLite``: what the benchmark's database URL points at."""
    return "PostgreSQL" if url.startswith("postgres") else "SQLite"


def database(url: str) -> Database:
    """xmrgate's ``Database`` on a PostgreSQL URL or a SQLite file path."""
    pg = kind(url) == "PostgreSQL"
    return Database(postgres_async_url(url) if pg else f"sqlite+aiosqlite:///{url}")


def on_db(url: str, work: Callable[[Database], Awaitable[T]]) -> T:
    """``work(db)`` in its own event loop and engine (the gateway runs in between)."""

    async def run() -> T:
        db = database(url)
        try:
            return await work(db)
        finally:
            await db.dispose()

    return asyncio.run(run())


def emit(table: str, line: str) -> None:
    """Print a result line now and keep it for the summary."""
    OUT[table].append(line)
    print(line, flush=True)


async def seed(db: Database, lo: int, hi: int, per: int, real: dict[int, str], top: int) -> None:
    """Requests with indices [lo, hi); ``per`` transfers and an event for those below ``top``."""
    rng, now = random.Random(lo), datetime.now(UTC)
    rows, batch = [], []
    for i in range(lo, hi):
        status = "waiting" if i in real else rng.choice(MIX)
        due = now + timedelta(minutes=rng.uniform(5, 60))
        due_or_none = due if status in ("waiting", "partial") and i not in real else None
        address = real.get(i) or "8" + "".join(rng.choices(common.BASE58, k=94))
        created = now - timedelta(seconds=rng.uniform(0, 90 * 86400))
        values = (address, i, 1_000_000_000 + i, f"order {i}", created, 1, due_or_none, status)
        rows.append(dict(zip(REQUEST_COLUMNS, values, strict=True)))
    async with db.write() as conn:
        for start in range(0, len(rows), CHUNK):
            await conn.execute(insert(payment_requests), rows[start : start + CHUNK])
        found = await conn.execute(text(OWNERS), {"lo": lo, "hi": min(hi, top)})
        owners = [common.SeededRequest(r.id, r.address, r.subaddr_index) for r in found]
        for n in range(per * len(owners)):
            owner, height = owners[n % len(owners)], 1 + n % 80
            at = 1_700_000_000 + height * 120
            row = (secrets.token_hex(32), owner.subaddr_index, owner.id, height, at, now, at)
            batch.append({**TRANSFER_FIXED, **dict(zip(TRANSFER_COLUMNS, row, strict=True))})
            if len(batch) == CHUNK or n == per * len(owners) - 1:
                await conn.execute(insert(transfers), batch)
                batch = []
    if owners:  # one event per request with transfers, delivered
        await common.seed_events(db, owners, "http://127.0.0.1:9/cb", rng)
        async with db.write() as conn:
            done = {"status": "delivered", "delivered_at": now, "next_attempt_at": None}
            await conn.execute(update(events).where(events.c.status == "pending").values(done))
    if not db.is_sqlite:  # autovacuum would; xmrgate never runs ANALYZE on SQLite
        await common.analyze(db)


async def sizes(db: Database, url: str) -> str:
    """Rows and size per table (bytes per row), and the whole database; Markdown cells."""
    cells, pg = [], not db.is_sqlite
    async with db.read() as conn:
        for table in ("payment_requests", "transfers", "events"):
            size = f"pg_total_relation_size('{table}')" if pg else "0"
            count, total = (await conn.execute(text(f"SELECT count(*), {size} FROM {table}"))).one()
            per = f", {total / MIB:,.1f} MiB ({total / max(count, 1):,.0f} B/row)" if pg else ""
            cells.append(f"{count:,}{per}")
        if pg:
            sql = "SELECT pg_database_size(current_database())"
            whole = (await conn.execute(text(sql))).scalar() or 0
        else:
            await conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
            whole = Path(url).stat().st_size  # noqa: ASYNC240
    return " | ".join(cells) + f" | {whole / MIB:,.1f}"


async def forms(db: Database, table: str, start: int) -> str:
    """The window SELECT in both forms: mean ms of 15 runs (PostgreSQL: and buffers)."""
    cells = []
    async with db.read() as conn:
        for name, cond in FORMS.items():
            sql = WINDOW.format(t=table, cond=cond, s=start)
            started = time.perf_counter()
            for _ in range(15):
                (await conn.execute(text(sql))).all()
            cell = f"{name}: {(time.perf_counter() - started) * 1000 / 15:.2f} ms"
            if not db.is_sqlite:
                plan = await conn.execute(text(f"EXPLAIN (ANALYZE, BUFFERS) {sql}"))
                node = next(r[0] for r in plan if "Buffers" in r[0])  # the top node's
                cell += f", {sum(map(int, re.findall(BUFFERS, node)))} buffers"
            cells.append(cell)
    return " / ".join(cells)


async def explain_calls(db: Database, work: Callable[[], Awaitable[Any]]) -> list[str]:
    """EXPLAIN ANALYZE (rolled back) of every statement ``work`` runs, with its parameters."""
    seen: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_a: Any) -> None:
        if "FROM " in statement:  # not the advisory lock's SELECT
            seen.append((statement, tuple(parameters or ())))

    event.listen(db.engine.sync_engine, "before_cursor_execute", capture)
    try:
        await work()
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", capture)
    out: list[str] = []
    async with db.engine.connect() as conn:  # never committed
        prefix = "EXPLAIN QUERY PLAN " if db.is_sqlite else "EXPLAIN (ANALYZE, BUFFERS) "
        for statement, parameters in dict.fromkeys(seen):
            plan = await conn.exec_driver_sql(prefix + statement, parameters)
            out.append(" ".join(statement.split())[:150])
            out.extend("    " + str(r[-1] if db.is_sqlite else r[0]) for r in plan)
    return out


async def mainnet_like(db: Database) -> str:
    """Both forms on a copy of ``transfers`` with heights spread like mainnet's (0..3.3M)."""
    async with db.write() as conn:
        for sql in SPREAD:
            await conn.execute(text(sql))
    await common.analyze(db)
    async with db.read() as conn:
        size = (await conn.execute(text("SELECT pg_relation_size('spread_i')"))).scalar() or 0
    return f"index {size / MIB:,.1f} MiB; " + await forms(db, "spread", 3_300_000 - 30)


async def time_ticks(engine: SyncEngine, timed: TimedWallet, sql: SqlTimer, n: int) -> str:
    """``n`` ticks after 3 warm-ups; cells: p50 | p99 | wallet-rpc p50 | SQL p50 (ms)."""
    total, wallet, spent = [], [], []
    for _ in range(n + 3):  # the first 3 are a warm-up
        timed.seconds = sql.seconds = 0.0
        total.append((await engine.tick()).seconds * 1000)
        wallet.append(timed.seconds * 1000)
        spent.append(sql.seconds * 1000)
    cells = (total[3:], 0.5), (total[3:], 0.99), (wallet[3:], 0.5), (spent[3:], 0.5)
    return " | ".join(f"{common.percentile(v, q):.2f}" for v, q in cells)


async def tick_points(args: argparse.Namespace, url: str, points: list[int]) -> None:
    """Grow the database through ``points`` and time the tick at each one."""
    (wallet_url, real, height), db = args.wallet, database(url)
    timed, daemon, backend = TimedWallet(wallet_url), DaemonClient(args.daemon_url), kind(url)
    try:
        await db.migrate()
        await common.set_sync_height(db, height)
        timers = (timed, SqlTimer(db.engine), args.ticks)
        engine = functools.partial(SyncEngine, SqlSyncStore(db), zero_conf=False, reorg_margin=10)
        plain, gated = engine(timed), engine(RefreshGate(timed, daemon))
        done = 0
        for n in points:
            started = time.perf_counter()
            await seed(db, done + 1, n + 1, max(args.transfers // args.top, 1), real, args.top + 1)
            done, seeded = n, time.perf_counter() - started
            start = (await plain.tick()).window_start
            ticks = f"{await time_ticks(plain, *timers)} | {await time_ticks(gated, *timers)}"
            window = await forms(db, "transfers", start)
            emit("tick", f"| {backend} | {n:,} | {ticks} | {window} | {seeded:.0f} s |")
            emit("size", f"| {backend} | {n:,} | {await sizes(db, url)} |")
        retention = RetentionStore(db, 90 * 86400).prune
        for what, work in (("the statements of one tick", plain.tick), ("retention", retention)):
            plans = "\n".join(await explain_calls(db, work))
            emit("plans", f"\n{backend}, {done:,} requests, {what} (rolled back):\n{plans}")
        if not db.is_sqlite:
            emit("plans", f"\nwindow SELECT, heights like mainnet's: {await mainnet_like(db)}")
    finally:
        await daemon.aclose()
        await timed.aclose()
        await db.dispose()


async def targets(db: Database, hi: int, count: int, offset: int) -> tuple[list[str], str]:
    """``count`` random addresses with index below ``hi``; the cursor after ``offset`` rows."""
    r = payment_requests.c
    newest = select(r.created_at, r.id).order_by(r.created_at.desc(), r.id.desc())
    async with db.read() as conn:
        rows = (await conn.execute(select(r.address).where(r.subaddr_index < hi))).all()
        at = (await conn.execute(newest.offset(offset).limit(1))).one()
    sample = random.Random(hi).sample(rows, min(count, len(rows)))
    return [row[0] for row in sample], encode_cursor(as_utc(at[0]), at[1])


def read_point(args: argparse.Namespace, url: str, workdir: Path, n: int, hi: int) -> None:
    """Time the reads against a gateway process at ``n`` requests; explain them."""
    addresses, cursor = on_db(url, lambda db: targets(db, hi, args.repeats, n // 2))
    shapes: list[tuple[str, dict[str, Any]]] = [
        ("list, first page (limit 100)", {}),
        (f"list, page after {n // 2:,} rows (cursor)", {"cursor": cursor}),
        ("list, status=waiting", {"status": "waiting"}),
        ("list, status=paid, after that cursor", {"status": "paid", "cursor": cursor}),
    ]
    gateway = GatewayProcess(workdir, f"http://127.0.0.1:{free_port()}", url)
    gateway.start(wait=False)
    try:
        with httpx.Client(base_url=gateway.url, timeout=30, trust_env=False) as client:

            def get(path: str, params: dict[str, Any] | None = None) -> tuple[bool, float]:
                started = time.perf_counter()
                try:
                    ok = client.get(path, params=params).status_code == 200
                except httpx.HTTPError:
                    ok = False
                return ok, (time.perf_counter() - started) * 1000

            wait_until("the gateway to list", lambda: get("/receive"), timeout=120)
            found = [get(f"/receive/{a}") for a in addresses]  # each once: no cache hits
            assert all(ok for ok, _ in found), "GET /receive/:address failed"
            name = f"GET /receive/:address ({len(found)} distinct, 10 transfers each)"
            timed = [(name, [ms for _, ms in found])]
            timed += [(s, time_http(client, "/receive", p, args.repeats)) for s, p in shapes]
            for name, ms in timed:
                p50, p99 = common.percentile(ms, 0.5), common.percentile(ms, 0.99)
                emit("read", f"| {kind(url)} | {n:,} | {name} | {p50:.2f} | {p99:.2f} |")
    finally:
        gateway.stop()

    plans = on_db(url, lambda db: explain_calls(db, lambda: reads(db, addresses[0], cursor)))
    emit("plans", f"\n{kind(url)}, {n:,} requests, reads:\n" + "\n".join(plans))


async def reads(db: Database, address: str, cursor: str) -> None:
    """The status read and two list pages (a deep one and a status filter), as served."""
    await PaymentStore(db).status(address)
    listing, now, after = SqlListing(db), datetime.now(UTC), decode_cursor(cursor)
    await listing.page(ListQuery(frozenset(), None, None, 100, after), now)
    await listing.page(ListQuery(frozenset({InvoiceStatus.WAITING}), None, None, 100, None), now)


def read_points(args: argparse.Namespace, url: str, workdir: Path, points: list[int]) -> None:
    """Grow the database to each point (requests without transfers) and time the reads."""
    done = top = max(args.requests)
    for n in points:
        if n > done:
            on_db(url, functools.partial(seed, lo=done + 1, hi=n + 1, per=0, real={}, top=0))
            done = n
        if n != top:  # the tick points printed that one
            emit("size", f"| {kind(url)} | {n:,} | {on_db(url, lambda db: sizes(db, url))} |")
        read_point(args, url, workdir, n, top + 1)


def prepare_wallet(devnet: Devnet, count: int) -> tuple[Any, dict[int, str], int]:
    """A wallet-rpc with ``count`` subaddresses, five with real transfers; its height."""
    wallet = common.fresh_wallet(devnet, "bench-scale", open_wallet=True)
    try:
        real, height = _prepare_wallet(SimpleNamespace(devnet=devnet), wallet)  # type: ignore[arg-type]
        started, have = time.perf_counter(), max(real) + 1
        while have < count:
            params = {"account_index": 0, "count": min(64, count - have)}
            made = wallet.call("create_address", params, timeout=120)
            have = max(int(i) for i in made["address_indices"]) + 1
        wallet.call("store", timeout=120)
        rate = (count - len(real)) / (time.perf_counter() - started)
        print(f"wallet: {have:,} subaddresses ({rate:.0f}/s), height {height}", flush=True)
        return wallet, real, height
    except BaseException:
        wallet.stop()
        raise


def main(argv: Sequence[str] | None = None) -> None:
    """Devnet, wallet, growing databases: tick points, then read points; print tables."""
    args = _parse(argv)
    top = args.top = max(args.requests)
    if args.old_window:
        tick_rows.window_statement = old_window
    with tempfile.TemporaryDirectory(prefix="xmrgate-scale-") as tmp:
        workdir = Path(tmp)
        devnet, sqlite = Devnet(workdir / "devnet"), str(workdir / "scale.sqlite3")
        try:
            devnet.start()
            wallet, real, height = prepare_wallet(devnet, args.subaddresses)
            with common.fresh_database() as url:
                try:
                    args.wallet, args.daemon_url = (wallet.url, real, height), devnet.daemon_url
                    asyncio.run(tick_points(args, url, args.requests))
                    if args.sqlite:
                        asyncio.run(tick_points(args, sqlite, [top]))
                finally:
                    wallet.stop()
                read_points(args, url, workdir, args.read_requests)
                if args.sqlite:
                    read_points(args, sqlite, workdir, [top])
        finally:
            devnet.stop()
    for table, header in HEADERS.items():
        print(f"\n{header}\n" + "|---" * (header.count("|") - 1) + "|\n" + "\n".join(OUT[table]))


if __name__ == "__main__":
    main()
