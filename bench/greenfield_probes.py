"""What ``bench/greenfield.py`` measures besides time: PostgreSQL transactions and rows
per create, and where a create's CPU goes (py-spy, ``bench/profiling.py``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg

from bench import profiling
from bench.common import Context, hostport
from bench.greenfield_client import KINDS, run_client
from testsupport.gateway import GatewayProcess

NAME = "greenfield"


def _pg_counters(url: str) -> tuple[int, int, int]:
    """This database's committed transactions, rows inserted and rows read (pg_stat)."""

    async def read() -> tuple[int, int, int]:
        conn = await asyncpg.connect(url)
        try:
            # An idle backend flushes its counters within 10 s (PGSTAT_IDLE_INTERVAL).
            await asyncio.sleep(11)
            row = await conn.fetchrow(
                "SELECT xact_commit, tup_inserted, tup_returned + tup_fetched AS tup_read "
                "FROM pg_stat_database WHERE datname = current_database()"
            )
            assert row is not None
            return int(row["xact_commit"]), int(row["tup_inserted"]), int(row["tup_read"])
        finally:
            await conn.close()

    return asyncio.run(read())


def transactions(gateway: GatewayProcess, key: str, count: int) -> None:
    """PostgreSQL's transactions and rows per create of each kind (``count`` in a row,
    background work included: the sync poll, the rate refresh)."""
    host, port = hostport(gateway.url)
    spec = {"host": host, "port": port, "key": key, "mode": "block", "clients": 1}
    start = _pg_counters(gateway.database)
    idle = _pg_counters(gateway.database)  # the background's share of one window
    background = [b - a for a, b in zip(start, idle, strict=True)]
    for n, kind in enumerate(KINDS):
        before = _pg_counters(gateway.database)
        run_client(spec | {"kind": kind, "count": count, "base": 3_000_000 + n * 100_000})
        after = _pg_counters(gateway.database)
        xact, ins, read = (b - a - g for a, b, g in zip(before, after, background, strict=True))
        print(
            f"    PostgreSQL per {kind} create: {xact / count:.2f} transactions, "
            f"{ins / count:.2f} rows inserted, {read / count:.1f} rows read ({count} creates; "
            f"an idle window's {background[0]} transactions subtracted)",
            flush=True,
        )


# Where a sample's stack passes (the first marker found from the outermost frame wins).
_MARKERS = (
    ("Labeler.run", "wallet labels (background, after the answer)"),
    ("SqlGreenfieldInvoices.insert", "the invoice row's INSERT (its own transaction)"),
    ("GreenfieldInvoices._view", "the invoice's read-back (status, transfers, height)"),
    ("PaymentRequests.create", "the payment request (as POST /receive)"),
    ("invoice_data", "the Greenfield answer's JSON"),
    ("parse_new_invoice", "the Greenfield body's parsing"),
    ("require_permission", "the key's permissions and store lookup"),
)


def _attribute(raw: Path) -> str:
    """Samples per marker of ``_MARKERS`` (whole stacks; SQLAlchemy's greenlets cut
    stacks, so driver samples under them count as "elsewhere")."""
    if not raw.exists():
        return ""
    counts = {label: 0 for _, label in _MARKERS}
    total = elsewhere = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        total += int(count_text)
        label = next((lb for marker, lb in _MARKERS if marker in stack), None)
        if label is None:
            elsewhere += int(count_text)
        else:
            counts[label] += int(count_text)
    if not total:
        return ""
    lines = ["by stage (stack passes through):"]
    lines += [f"  {100 * n / total:5.1f}%  {label}" for label, n in counts.items() if n]
    lines.append(
        f"  {100 * elsewhere / total:5.1f}%  elsewhere (HTTP, routing, middleware, greenlets)"
    )
    return "\n".join(lines)


def profile(ctx: Context, gateway: GatewayProcess, key: str, count: int) -> None:
    """py-spy on the gateway during ``count`` sequential creates of each kind, one at a time."""
    if profiling.py_spy() is None:
        print("  (py-spy not found: no profile)", flush=True)
        return
    host, port = hostport(gateway.url)
    for n, kind in enumerate(KINDS):
        out = Path(ctx.workdir) / f"profile-{NAME}-{kind}.txt"
        spec = {"host": host, "port": port, "key": key, "mode": "block", "kind": kind}
        # Calibrate: how long ``count`` of this kind take, so the sampler covers the run.
        took = run_client(spec | {"clients": 1, "count": 20, "base": 2_000_000 + n * 100_000})
        seconds = max(2.0, took["wall"] / 20 * count + 1)
        spy = profiling.start(gateway.pid, seconds, out)
        if spy is None:
            return
        try:
            time.sleep(0.3)
            run_client(spec | {"clients": 1, "count": count, "base": 2_010_000 + n * 100_000})
            spy.wait(timeout=120)
        finally:
            if spy.poll() is None:
                spy.terminate()
                spy.wait()
        summary = profiling.summarize(out, top=12) + "\n" + _attribute(out)
        ctx.profiles.append((f"{kind}, sequential ({count})", summary))
