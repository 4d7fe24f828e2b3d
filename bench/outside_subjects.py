"""The gateways that ``bench.outside`` compares: start them, wait for their address pools,
and read their processes' memory and CPU from ``/proc``.

Each gateway gets its own fresh wallet-rpc (with a fresh wallet) on the shared regtest
network and its own fresh PostgreSQL database; every process and database is ended or
dropped through the caller's ``ExitStack``, however the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx

from bench.baseline import Baseline, same_gateway
from bench.common import fresh_database, fresh_wallet
from bench.metering import cpu_seconds
from testsupport.processes import stop_process, wait_until
from xmrgate.config import Settings
from xmrgate.devnet import Devnet, WalletRpc, free_port
from xmrgate.devnet.processes import die_with_parent

# The gateways run on default settings: this version's low-water mark (a pool of
# 250, low water 150; a baseline with a lower mark would wait for its pool until the timeout).
POOL_LOW_WATER = int(Settings.model_fields["address_pool_low_water"].default)


@dataclass
class Subject:
    """One gateway under measurement."""

    key: str  # "new" | "baseline" | "moneropay"
    label: str
    url: str
    pid: int
    wallet: WalletRpc
    #: The gateway's database when it is an xmrgate one (its address pool is read there).
    pool_db: str | None = None
    #: Pool size once full (None: no pool to wait for).
    pool_full: int | None = None


def _pool_size(db_url: str) -> int | None:
    """Subaddresses in xmrgate's ``address_pool`` table (None when it has no such table)."""

    async def count() -> int | None:
        conn = await asyncpg.connect(db_url)
        try:
            return int(await conn.fetchval("SELECT count(*) FROM address_pool"))
        except asyncpg.UndefinedTableError:
            return None  # a version from before the pool
        finally:
            await conn.close()

    return asyncio.run(count())


def settle_pool(subject: Subject, timeout: float = 300.0) -> None:
    """Note the pool's full size: it has stopped growing for a second (after start-up)."""
    if subject.pool_db is None:
        return
    deadline = time.monotonic() + timeout
    last = _pool_size(subject.pool_db)
    while last is not None and time.monotonic() < deadline:
        time.sleep(1.0)
        now = _pool_size(subject.pool_db)
        if now == last and now:
            break
        last = now
    subject.pool_full = last


def wait_pool(subject: Subject, timeout: float = 180.0) -> float:
    """Wait until the pool holds its full size again; return the seconds waited.

    The gateway refills only at or below its low-water mark, to the full size, and hands
    out subaddresses during the refill too: after a run it can be left between the two
    (e.g. 173 of 250) with no refill coming. Then untimed ``POST /receive`` take it down
    to the mark, and the refill that starts brings it back to full.
    """
    started = time.monotonic()
    if subject.pool_db is None or subject.pool_full is None:
        return 0.0
    last, since = -1, started
    while time.monotonic() - started < timeout:
        size = _pool_size(subject.pool_db)
        if size is None or size >= subject.pool_full:
            break
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since > 1.0 and size > POOL_LOW_WATER:
            _take(subject.url, size - POOL_LOW_WATER)
            last = -1
        time.sleep(0.2)
    return time.monotonic() - started


def _take(url: str, count: int) -> None:
    """``count`` untimed POST /receive, one after the other."""
    with httpx.Client(timeout=30, trust_env=False) as client:
        for _ in range(count):
            client.post(url + "/receive", json={"amount": 1000, "description": "pool top-up"})


def start_xmrgate(
    devnet: Devnet,
    workdir: Path,
    stack: contextlib.ExitStack,
    baseline: Baseline | None,
) -> Subject:
    """``xmrgate serve --rpc-address ... --postgresql ...`` (nothing else) of this checkout
    or of ``baseline``, on a fresh wallet-rpc and database."""
    key = "new" if baseline is None else "baseline"
    wallet = fresh_wallet(devnet, f"outside-{key}", open_wallet=False)
    stack.callback(wallet.stop)
    db = stack.enter_context(fresh_database())
    gateway = same_gateway(baseline, workdir / key, wallet.url, db)
    stack.callback(gateway.close)
    # It creates its wallet and fills its pool (250) before /health says ready.
    gateway.start(wait=False)
    gateway.wait_ready(timeout=600)
    label = "new" if baseline is None else baseline.label
    subject = Subject(key, label, gateway.url, gateway.pid, wallet, pool_db=db)
    settle_pool(subject)
    return subject


def start_moneropay(
    devnet: Devnet,
    workdir: Path,
    stack: contextlib.ExitStack,
    binary: Path,
    source_dir: Path,
) -> Subject:
    """MoneroPay on a fresh wallet-rpc with its wallet open and a fresh database, run from
    ``source_dir`` (it reads its migrations from there)."""
    wallet = fresh_wallet(devnet, "outside-moneropay", open_wallet=True)
    stack.callback(wallet.stop)
    db = stack.enter_context(fresh_database())
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"moneropay-{port}.log"
    cmd = [
        str(binary.resolve()),
        "-bind",
        f"127.0.0.1:{port}",
        "-rpc-address",
        wallet.url,  # http://127.0.0.1:PORT/json_rpc
        "-postgresql",
        f"{db}?sslmode=disable",
    ]
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=source_dir,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent(),  # it dies with this process, however it ends
        )
    stack.callback(stop_process, proc)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> tuple[bool, str]:
        try:
            r = httpx.get(url + "/health", timeout=5, trust_env=False)
        except httpx.HTTPError as exc:
            return False, f"{type(exc).__name__}: {exc}"
        return r.status_code == 200, f"{r.status_code} {r.text[:300]}"

    wait_until("MoneroPay to answer /health 200", healthy, timeout=120, log=log_path, proc=proc)
    return Subject("moneropay", "MoneroPay", url, proc.pid, wallet)


# --------------------------------------------------------------------------- /proc


def _children(pid: int) -> list[int]:
    """Direct and indirect children of ``pid`` (from /proc/*/stat's parent field)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    return [pid, *_children(pid)]


def rss_kib(pids: list[int]) -> int:
    """Summed VmRSS of ``pids`` (KiB; gone processes count 0)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def cpu_of(pids: list[int]) -> float:
    """Summed utime + stime of ``pids`` (seconds)."""
    return sum(cpu_seconds(pid) for pid in pids)
