"""Shared pieces of the benchmarks: figures, databases, seeding (CPU metering: ``metering.py``).

The gateway process and throwaway databases come from ``testsupport`` (shared with
the tests).

Every process and database made here is ended or dropped by the caller's ``finally``
blocks (processes by PID, databases by name), so an interrupted run leaves nothing.
"""

from __future__ import annotations

import json
import math
import os
import random
import secrets
import statistics
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from sqlalchemy import insert, text

from testsupport.postgres import fresh_pg_database
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.tables import events, payment_requests, sync_state, transfers
from xmrgate.config import postgres_async_url
from xmrgate.devnet import Devnet, WalletRpc

if TYPE_CHECKING:
    from bench.baseline import Baseline

REPO_ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get("XMRGATE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
DB_PREFIX = "xmrgate_bench_"
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
# Inserted per statement when seeding (asyncpg's limit is 32767 bound parameters).
SEED_CHUNK = 2000


# --------------------------------------------------------------------------- figures


@dataclass(frozen=True)
class Figure:
    """One reported number, with its target when it has one.

    ``higher_is_better`` says which side of the target is good: throughput and
    ratios must reach it, latencies must stay below it.
    """

    bench: str
    name: str
    value: float
    unit: str
    target: float | None = None
    higher_is_better: bool = False
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """``value / target`` (None without a target)."""
        if self.target is None or self.target == 0:
            return None
        return self.value / self.target

    @property
    def met(self) -> bool | None:
        """Whether the target is met (None without a target)."""
        if self.target is None:
            return None
        if self.higher_is_better:
            return self.value >= self.target
        return self.value < self.target

    def verdict(self) -> str:
        """``met``/``MISSED`` with the ratio to the target, or ``-``."""
        if self.target is None or self.ratio is None:
            return "-"
        sign = ">=" if self.higher_is_better else "<"
        word = "met" if self.met else "MISSED"
        return f"{word} ({self.ratio:.2f}x of {sign}{fmt(self.target)})"


@dataclass
class Context:
    """What every benchmark gets: the devnet, the options, and where to put results."""

    devnet: Devnet
    workdir: Path
    quick: bool
    repeats: int
    profile: str  # "auto" | "always" | "never"
    gateway_args: list[str] = field(default_factory=list)
    #: The previous version to measure beside this one (``--baseline REV``).
    baseline: Baseline | None = None
    figures: list[Figure] = field(default_factory=list)
    rss: list[tuple[str, int]] = field(default_factory=list)
    profiles: list[tuple[str, str]] = field(default_factory=list)

    def add(self, figure: Figure) -> None:
        """Record a figure and print it at once with its verdict."""
        self.figures.append(figure)
        note = f"  [{figure.note}]" if figure.note else ""
        print(
            f"  {figure.name:<52} {fmt(figure.value):>10} {figure.unit:<6} "
            f"{figure.verdict()}{note}",
            flush=True,
        )

    def record_rss(self, phase: str, kib: int | None) -> None:
        """Remember the peak RSS of a gateway process (KiB) for the summary."""
        if kib is not None:
            self.rss.append((phase, kib))
            print(f"  peak RSS of gateway ({phase}): {kib / 1024:.1f} MiB", flush=True)


def fmt(value: float) -> str:
    """A number with as many digits as it deserves."""
    if value == 0 or math.isnan(value):
        return f"{value:g}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(math.ceil(q * len(ordered)) - 1, 0)
    return ordered[min(rank, len(ordered) - 1)]


def median(values: Sequence[float]) -> float:
    """Median of the repeats (NaN for none)."""
    clean = [v for v in values if not math.isnan(v)]
    return statistics.median(clean) if clean else float("nan")


def section(title: str) -> None:
    """Print a benchmark's heading."""
    print(f"\n== {title}", flush=True)


# --------------------------------------------------------------------------- databases


def fresh_database() -> AbstractContextManager[str]:
    """A new PostgreSQL database for one benchmark, dropped afterwards."""
    return fresh_pg_database(PG_ADMIN_URL, DB_PREFIX)


def open_database(url: str) -> Database:
    """xmrgate's own ``Database`` on a libpq-style URL."""
    return Database(postgres_async_url(url))


# --------------------------------------------------------------------------- seeding


def fake_address(rng: random.Random) -> str:
    """A string shaped like a Monero subaddress (95 base58 characters starting with 8)."""
    return "8" + "".join(rng.choice(BASE58) for _ in range(94))


@dataclass(frozen=True)
class SeededRequest:
    """A payment request inserted by the benchmark."""

    id: int
    address: str
    subaddr_index: int


async def seed_requests(
    db: Database,
    count: int,
    *,
    first_index: int,
    rng: random.Random,
    real: dict[int, str] | None = None,
    callback_url: str | None = None,
    created_height: int = 1,
) -> list[SeededRequest]:
    """Insert ``count`` open payment requests with subaddress indices from ``first_index``.

    ``real`` maps indices to real wallet addresses; the others get made-up addresses.
    """
    real = real or {}
    now = datetime.now(UTC)
    rows = []
    for i in range(first_index, first_index + count):
        rows.append(
            {
                "address": real.get(i) or fake_address(rng),
                "subaddr_index": i,
                "amount": 1_000_000_000 + i,
                "description": f"bench order {i}",
                "callback_url": callback_url,
                "return_url": None,
                "created_at": now,
                "created_height": created_height,
            }
        )
    async with db.write() as conn:
        for start in range(0, len(rows), SEED_CHUNK):
            await conn.execute(insert(payment_requests), rows[start : start + SEED_CHUNK])
        result = await conn.execute(
            text(
                "SELECT id, address, subaddr_index FROM payment_requests "
                "WHERE subaddr_index >= :lo AND subaddr_index < :hi ORDER BY subaddr_index"
            ),
            {"lo": first_index, "hi": first_index + count},
        )
        return [SeededRequest(r.id, r.address, r.subaddr_index) for r in result]


async def seed_transfers(
    db: Database,
    requests: Sequence[SeededRequest],
    count: int,
    *,
    max_height: int,
    rng: random.Random,
) -> None:
    """Insert ``count`` unlocked transfers at heights 1..``max_height``, spread evenly."""
    now = datetime.now(UTC)
    rows = []
    for n in range(count):
        request = requests[n % len(requests)]
        height = rng.randint(1, max(max_height, 1))
        rows.append(
            {
                "tx_hash": secrets.token_hex(32),
                "subaddr_index": request.subaddr_index,
                "request_id": request.id,
                "amount": 250_000_000,
                "fee": 30_000_000,
                "height": height,
                "timestamp": 1_700_000_000 + height * 120,
                "unlock_time": 0,
                "double_spend_seen": False,
                "state": "unlocked",
                "updated_at": now,
            }
        )
    async with db.write() as conn:
        for start in range(0, len(rows), SEED_CHUNK):
            await conn.execute(insert(transfers), rows[start : start + SEED_CHUNK])


async def seed_events(
    db: Database, requests: Sequence[SeededRequest], callback_url: str, rng: random.Random
) -> None:
    """Insert one due ``transfer.confirmed`` outbox event per request."""
    now = datetime.now(UTC)
    rows = []
    for request in requests:
        tx_hash = secrets.token_hex(32)
        payload = {
            "amount": {
                "expected": 1_000_000_000,
                "covered": {"total": 1_000_000_000, "unlocked": 0},
            },
            "complete": False,
            "description": f"bench order {request.subaddr_index}",
            "created_at": now.isoformat().replace("+00:00", "Z"),
            "transaction": {
                "amount": 1_000_000_000,
                "confirmations": 1,
                "double_spend_seen": False,
                "fee": 30_000_000,
                "height": rng.randint(100, 200),
                "timestamp": "2026-01-01T00:00:00Z",
                "tx_hash": tx_hash,
                "unlock_time": 0,
                "locked": True,
            },
            "event": "transfer.confirmed",
            "address": request.address,
        }
        rows.append(
            {
                "id": str(uuid.uuid4()),
                "request_id": request.id,
                "kind": "transfer.confirmed",
                "tx_hash": tx_hash,
                "callback_url": callback_url,
                "payload": json.dumps(payload, separators=(",", ":")),
                "status": "pending",
                "attempts": 0,
                "created_at": now,
                "next_attempt_at": now,
            }
        )
    async with db.write() as conn:
        for start in range(0, len(rows), SEED_CHUNK):
            await conn.execute(insert(events), rows[start : start + SEED_CHUNK])


async def set_sync_height(db: Database, height: int) -> None:
    """Store the sync height (as if earlier ticks had run)."""
    async with db.write() as conn:
        await conn.execute(sync_state.delete())
        await conn.execute(
            insert(sync_state).values(id=1, wallet_height=height, updated_at=datetime.now(UTC))
        )


async def analyze(db: Database) -> None:
    """Refresh planner statistics after bulk seeding (autovacuum would, later)."""
    async with db.engine.connect() as conn:
        await (await conn.execution_options(isolation_level="AUTOCOMMIT")).execute(text("ANALYZE"))


async def clear_requests(db: Database) -> None:
    """Delete every payment request with its transfers and events."""
    async with db.write() as conn:
        # CASCADE: newer schemas have more tables that refer to these (callback tries).
        await conn.execute(text("TRUNCATE payment_requests, transfers, events CASCADE"))


# --------------------------------------------------------------------------- wallet


def fresh_wallet(devnet: Devnet, name: str, *, open_wallet: bool) -> WalletRpc:
    """Start a new wallet-rpc; with ``open_wallet`` also create and open wallet ``wallet``."""
    wallet = devnet.start_wallet_rpc(f"{name}-{uuid.uuid4().hex[:6]}")
    if open_wallet:
        try:
            wallet.call("create_wallet", {"filename": "wallet", "language": "English"}, timeout=120)
        except BaseException:
            wallet.stop()
            raise
    return wallet


def hostport(url: str) -> tuple[str, int]:
    """Host and port of an http URL."""
    parsed = httpx.URL(url)
    return parsed.host, parsed.port or 80


def pick(rng: random.Random, items: Sequence[str], count: int) -> list[str]:
    """``count`` items in random order (all of them when there are fewer)."""
    chosen = list(items)
    rng.shuffle(chosen)
    return chosen[:count]


def speedup(bench: str, name: str, new: float, old: float, target: float, note: str = "") -> Figure:
    """This version's rate over the baseline's, to reach ``target`` (e.g. 5 for 5x)."""
    ratio = new / old if old else float("nan")
    return Figure(bench, name, ratio, "x", target, higher_is_better=True, note=note)
