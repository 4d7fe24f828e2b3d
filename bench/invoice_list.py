"""``python -m bench.invoice_list``: ``GET /receive`` (the list) over 100,000 requests.

Seeds a throwaway PostgreSQL database with ``--requests`` payment requests (statuses,
creation times over 90 days, expiries, a few open requests past their expiry that no
tick has recorded yet), starts the real gateway on it (no wallet: the list reads the
database only) and times each query shape over HTTP, ``--repeats`` times in a row on
one keep-alive connection. It also prints PostgreSQL's own execution time of each
page's SELECT (EXPLAIN ANALYZE) and whether the plan reads an index only, never the
whole table. Target: a page in under 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
from sqlalchemy import insert, text

from bench.common import analyze, fake_address, fresh_database, open_database, percentile
from testsupport.gateway import GatewayProcess
from testsupport.processes import wait_until
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.listing import list_statement
from xmrgate.adapters.store.tables import payment_requests
from xmrgate.core.invoices import ListQuery, decode_cursor, encode_cursor
from xmrgate.devnet import free_port
from xmrgate.domain.invoice import InvoiceStatus

T = TypeVar("T")
TARGET_MS = 20.0
CHUNK = 2000
# How the seeded requests are spread over the recorded statuses.
MIX = [
    ("complete", 55),
    ("expired", 15),
    ("waiting", 12),
    ("partial", 5),
    ("paid", 8),
    ("paid_late", 5),
]


async def seed(db: Database, count: int, rng: random.Random) -> datetime:
    """Insert ``count`` requests created over the last 90 days; return the newest time."""
    now = datetime.now(UTC)
    statuses = [s for s, weight in MIX for _ in range(weight)]
    rows = []
    for i in range(1, count + 1):
        created = now - timedelta(seconds=rng.uniform(0, 90 * 86400))
        status = rng.choice(statuses)
        expires = created + timedelta(minutes=30) if rng.random() < 0.7 else None
        if status in ("waiting", "partial") and expires is not None and expires < now:
            # An open request past its expiry: the tick records those within seconds,
            # so only a few exist at any time. Keep 50 of them, the rest still open.
            expires = now + timedelta(minutes=30) if i > 50 else now - timedelta(seconds=5)
        rows.append(
            {
                "address": fake_address(rng),
                "subaddr_index": i,
                "amount": 1_000_000_000 + i,
                "description": f"bench order {i}",
                "callback_url": None,
                "return_url": None,
                "created_at": created,
                "created_height": 1,
                "expires_at": expires,
                "underpay_tolerance": 0,
                "status": status,
            }
        )
    await db.migrate()
    async with db.write() as conn:
        for start in range(0, len(rows), CHUNK):
            await conn.execute(insert(payment_requests), rows[start : start + CHUNK])
    await analyze(db)
    return now


async def deep_cursor(db: Database, offset: int) -> str:
    """The cursor after the ``offset``-th newest request (a page deep in the list)."""
    async with db.read() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT created_at, id FROM payment_requests "
                    "ORDER BY created_at DESC, id DESC OFFSET :n LIMIT 1"
                ),
                {"n": offset},
            )
        ).one()
    return encode_cursor(row[0], row[1])


def shapes(cursor: str, newest: datetime) -> list[tuple[str, dict[str, Any]]]:
    """The query shapes timed: name and query parameters."""
    day = newest - timedelta(days=45)
    return [
        ("first page, no filter (limit 100)", {}),
        ("page after 50,000 rows (cursor)", {"cursor": cursor}),
        ("first page, limit 500", {"limit": 500}),
        ("status=waiting", {"status": "waiting"}),
        ("status=expired (recorded + past expiry)", {"status": "expired"}),
        ("status=paid&status=paid_late", {"status": ["paid", "paid_late"]}),
        ("status=partial, after cursor", {"status": "partial", "cursor": cursor}),
        (
            "one day, created_after/created_before",
            {
                "created_after": (day - timedelta(days=1)).isoformat(),
                "created_before": day.isoformat(),
            },
        ),
    ]


def to_query(params: dict[str, Any]) -> ListQuery:
    """The ListQuery the route builds from these parameters."""
    statuses = params.get("status", [])
    statuses = [statuses] if isinstance(statuses, str) else statuses
    after = params.get("created_after")
    before = params.get("created_before")
    return ListQuery(
        statuses=frozenset(InvoiceStatus(s) for s in statuses),
        created_after=datetime.fromisoformat(after) if after else None,
        created_before=datetime.fromisoformat(before) if before else None,
        limit=int(params.get("limit", 100)),
        after_key=decode_cursor(params["cursor"]) if "cursor" in params else None,
    )


async def explain(db: Database, query: ListQuery) -> tuple[float, bool]:
    """PostgreSQL's execution time (ms) of the page's SELECT, and: no sequential scan."""
    statement = list_statement(query, datetime.now(UTC))
    compiled = statement.compile(db.engine, compile_kwargs={"literal_binds": True})
    async with db.read() as conn:
        plan = [r[0] for r in await conn.execute(text(f"EXPLAIN (ANALYZE, BUFFERS) {compiled}"))]
    ms = next(float(line.split()[2]) for line in plan if line.startswith("Execution Time"))
    return ms, not any("Seq Scan" in line for line in plan)


def on_db(url: str, work: Callable[[Database], Awaitable[T]]) -> T:
    """Run ``work(db)`` in its own event loop on its own engine (asyncpg pools are per loop)."""

    async def run() -> T:
        db = open_database(url)
        try:
            return await work(db)
        finally:
            await db.dispose()

    return asyncio.run(run())


def time_http(client: httpx.Client, url: str, params: dict[str, Any], repeats: int) -> list[float]:
    """Milliseconds of ``repeats`` sequential GETs (after two warm-up calls)."""
    for _ in range(2):
        assert client.get(url, params=params).status_code == 200
    found = []
    for _ in range(repeats):
        started = time.perf_counter()
        r = client.get(url, params=params)
        found.append((time.perf_counter() - started) * 1000)
        assert r.status_code == 200, r.text
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Seed, serve, measure, print a Markdown table."""
    parser = argparse.ArgumentParser(prog="python -m bench.invoice_list")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    rng = random.Random(10)
    with fresh_database() as url, tempfile.TemporaryDirectory() as workdir:
        started = time.perf_counter()
        newest = on_db(url, lambda db: seed(db, args.requests, rng))
        deep = 50_000 if args.requests > 50_000 else 0
        cursor = on_db(url, lambda db: deep_cursor(db, deep))
        print(f"seeded {args.requests} requests in {time.perf_counter() - started:.1f} s")
        # No wallet: the list never asks one (the port is closed; health says 503).
        gateway = GatewayProcess(Path(workdir), f"http://127.0.0.1:{free_port()}", url)
        gateway.start(wait=False)
        try:
            with httpx.Client(timeout=10, trust_env=False) as client:

                def up() -> tuple[bool, str]:
                    try:
                        r = client.get(gateway.url + "/receive", params={"limit": 1})
                    except httpx.HTTPError as exc:
                        return False, repr(exc)
                    return r.status_code == 200, f"{r.status_code}"

                wait_until("the gateway to list", up, timeout=60, log=gateway.log_path)
                print(
                    f"\n| query ({args.requests:,} requests) | rows | HTTP p50 | p95 | p99 |"
                    " SQL (EXPLAIN ANALYZE) | index only |"
                )
                print("|---|---|---|---|---|---|---|")
                for name, params in shapes(cursor, newest):
                    rows = len(
                        client.get(gateway.url + "/receive", params=params).json()["requests"]
                    )
                    ms = time_http(client, gateway.url + "/receive", params, args.repeats)
                    page_sql = functools.partial(explain, query=to_query(params))
                    sql_ms, indexed = on_db(url, page_sql)
                    p50, p95, p99 = (percentile(ms, q) for q in (0.5, 0.95, 0.99))
                    verdict = "yes" if indexed else "NO (seq scan)"
                    print(
                        f"| {name} | {rows} | {p50:.1f} ms | {p95:.1f} ms | {p99:.1f} ms |"
                        f" {sql_ms:.2f} ms | {verdict} |",
                        flush=True,
                    )
        finally:
            gateway.stop()
    print(f"\ntarget: a page in under {TARGET_MS:g} ms")


if __name__ == "__main__":
    main()
