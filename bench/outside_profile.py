"""Where a request's CPU goes: ``python -m bench.outside --profile``.

While the sequential POSTs and the first round of GETs run, py-spy samples each
xmrgate gateway (only samples holding the GIL: Python CPU time), and the gateway's
CPU seconds are read from /proc. Each sample goes to the stage of the innermost frame
that names one (``STAGES``, checked from the leaf up: a database call made by the use
case counts as database), and a stage's share of the samples times the CPU per request
gives its microseconds per request. Needs py-spy (``pip install py-spy``); without it
the table says so.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench import profiling
from bench.outside_subjects import cpu_of

# (stage, markers): a frame whose "function (file)" contains a marker belongs to it.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("database (SQLAlchemy, asyncpg)", ("/sqlalchemy/", "/asyncpg/", "/greenlet/")),
    ("wallet-rpc calls (labels, pool refills)", ("/httpx/", "/httpcore/", "wallet_rpc")),
    ("answer sent to the socket", ("RequestResponseCycle.send", "CoalescingTransport")),
    ("JSON encoding", ("JSONResponse.render", "/json/")),
    ("HTTP parsing (uvicorn, httptools)", ("HttpToolsProtocol", "/httptools/")),
    ("FastAPI parameters and body", ("solve_dependencies", "request_body_to_args",
                                     "request_params_to_args", "/pydantic", "_validate")),
    ("middleware (xmrgate's and Starlette's)", ("Middleware", "HttpMetrics", "HeaderLimits",
                                                "BodySizeLimit", "ApiKeyGate", "MoneroPayHeaders",
                                                "/prometheus_client/")),
    ("xmrgate: handlers, use cases, read cache", ("/xmrgate/web/", "/xmrgate/core/",
                                                  "/xmrgate/domain/", "/xmrgate/adapters/")),
    ("routing (Starlette, FastAPI)", ("/starlette/routing", "/fastapi/routing")),
)  # fmt: skip
OTHER = "event loop and everything else"


def stage_of(frames: list[str]) -> str:
    """The stage of one stack (root first), by its innermost frame that names one."""
    for frame in reversed(frames):
        for name, markers in STAGES:
            if any(marker in frame for marker in markers):
                return name
    return OTHER


def shares(raw: Path) -> dict[str, float]:
    """Each stage's share (0..1) of the samples in a py-spy raw file."""
    counts: Counter[str] = Counter()
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            counts[stage_of(stack.split(";"))] += int(count)
    total = sum(counts.values())
    return {name: n / total for name, n in counts.items()} if total else {}


@dataclass
class Profile:
    """One profiled load of one gateway: CPU per request and its stages."""

    requests: int = 0
    cpu_s: float = 0.0
    stage_share: dict[str, float] = field(default_factory=dict)

    @property
    def us_per_request(self) -> float:
        """Gateway CPU microseconds per request."""
        return self.cpu_s / self.requests * 1e6 if self.requests else float("nan")


class Sampler:
    """py-spy and the CPU clock around one load of ``pid``."""

    def __init__(self, pid: int, seconds: float, out: Path) -> None:
        self.pid, self.out = pid, out
        self.cpu0 = cpu_of([pid])
        self.proc: subprocess.Popen[bytes] | None = profiling.start(pid, seconds + 2, out)

    def stop(self, requests: int) -> Profile:
        """End sampling; the profile of ``requests`` served meanwhile."""
        cpu = cpu_of([self.pid]) - self.cpu0
        if self.proc is not None:
            self.proc.send_signal(2)  # py-spy writes its file on SIGINT
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        found = shares(self.out) if self.out.exists() else {}
        return Profile(requests, cpu, found)


def table(profiles: dict[str, dict[str, Profile]]) -> str:
    """Microseconds per request by stage: a column per (load, gateway)."""
    columns = [(load, who) for load, by in profiles.items() for who in by]
    if not columns:
        return "(nothing profiled)"
    if all(not profiles[load][who].stage_share for load, who in columns):
        return "(py-spy not found: pip install py-spy, then --profile again)"
    header = ["gateway CPU per request, us", *(f"{load} {who}" for load, who in columns)]
    lines = [header]
    for name in [*(n for n, _ in STAGES), OTHER]:
        row = [name]
        for load, who in columns:
            p = profiles[load][who]
            row.append(f"{p.stage_share.get(name, 0.0) * p.us_per_request:.0f}")
        lines.append(row)
    lines.append(["total", *(f"{profiles[x][y].us_per_request:.0f}" for x, y in columns)])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            [
                line[0].ljust(widths[0]),
                *(c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)),
            ]
        )
        for line in lines
    )
