"""CPU metering of a benchmark point: the gateway, its PostgreSQL backends, the load
generator (this process's children), other processes, and the machine as a whole.

Read from ``/proc`` (processes and the machine) and ``pg_stat_activity`` /
``pg_stat_database`` (backends and new sessions).
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from bench.common import PG_ADMIN_URL

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def machine_busy_seconds() -> float:
    """CPU seconds all cores of the machine have spent busy since boot (from /proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    # guest time is already counted in user time
    return (sum(values[:8]) - idle) / _CLOCK_TICKS


def children_cpu_seconds() -> float:
    """CPU seconds of this process's finished child processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class Usage:
    """CPU used during one measurement, by whom (seconds), and PostgreSQL sessions opened."""

    wall: float
    gateway: float
    postgres: float
    children: float
    machine: float
    sessions: int
    extra: float = 0.0

    @property
    def others(self) -> float:
        """CPU seconds used by processes that are not part of this measurement."""
        return max(self.machine - self.gateway - self.postgres - self.children - self.extra, 0.0)


async def _pg_snapshot(db_name: str) -> tuple[dict[int, float], int]:
    conn = await asyncpg.connect(PG_ADMIN_URL)
    try:
        pids = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            db_name,
        )
        sessions = await conn.fetchval(
            "SELECT sessions FROM pg_stat_database WHERE datname = $1", db_name
        )
    finally:
        await conn.close()
    return {int(r["pid"]): cpu_seconds(int(r["pid"])) for r in pids}, int(sessions or 0)


class Meter:
    """Measures CPU of the gateway, its PostgreSQL backends, our children and the machine."""

    def __init__(self, gateway_pid: int, pg_url: str, extra_pids: Sequence[int] = ()) -> None:
        """Meter the gateway, the backends of ``pg_url``'s database and ``extra_pids``."""
        self.gateway_pid = gateway_pid
        self.db_name = pg_url.rsplit("/", 1)[1]
        self.extra_pids = list(extra_pids)
        self._start: tuple[float, float, dict[int, float], int, float, float, float] | None = None

    def start(self) -> None:
        """Take the starting snapshot."""
        backends, sessions = asyncio.run(_pg_snapshot(self.db_name))
        self._start = (
            time.monotonic(),
            cpu_seconds(self.gateway_pid),
            backends,
            sessions,
            children_cpu_seconds(),
            machine_busy_seconds(),
            sum(cpu_seconds(pid) for pid in self.extra_pids),
        )

    def stop(self) -> Usage:
        """Take the closing snapshot and return the differences."""
        assert self._start is not None
        wall0, gw0, backends0, sessions0, children0, machine0, extra0 = self._start
        machine = machine_busy_seconds() - machine0
        gateway = cpu_seconds(self.gateway_pid) - gw0
        children = children_cpu_seconds() - children0
        backends, sessions = asyncio.run(_pg_snapshot(self.db_name))
        # Backends that closed during the run are lost: an undercount, noted in the docs.
        postgres = sum(cpu - backends0.get(pid, 0.0) for pid, cpu in backends.items())
        return Usage(
            wall=time.monotonic() - wall0,
            gateway=gateway,
            postgres=postgres,
            children=children,
            machine=machine,
            sessions=sessions - sessions0,
            extra=sum(cpu_seconds(pid) for pid in self.extra_pids) - extra0,
        )
