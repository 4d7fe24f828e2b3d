"""``bench/outside.py``'s table: its rows, each subject's figures, the ratios."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bench.common import fmt
from bench.outside_profile import Profile
from bench.outside_subjects import Subject

SEQUENTIAL = 200
BURST = 200  # < the default pool of 250: every request of a burst is served from it
CONNECTIONS = 16


@dataclass(frozen=True)
class Row:
    """One line of the table: ``key`` in each subject's figures."""

    key: str
    title: str
    unit: str


ROWS = (
    Row("seq_rps", f"POST /receive, {SEQUENTIAL} sequential, 1 conn: rate", "req/s"),
    Row("seq_p50", "  median", "ms"),
    Row("seq_p99", "  p99", "ms"),
    Row("burst_rps", f"POST /receive, bursts of {BURST} over {CONNECTIONS} conns: rate", "req/s"),
    Row("burst_p50", "  p50", "ms"),
    Row("burst_p99", "  p99", "ms"),
    Row("read_rps", f"GET /receive/:address, {CONNECTIONS} conns: rate", "req/s"),
    Row("read_p50", "  p50", "ms"),
    Row("read_p99", "  p99", "ms"),
    Row("rss", "gateway VmRSS after the loads", "MiB"),
    Row("idle_gateway", "idle CPU: gateway", "s/min"),
    Row("idle_wallet", "idle CPU: its wallet-rpc", "s/min"),
)


@dataclass
class Figures:
    """Everything measured of one subject."""

    subject: Subject
    values: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    addresses: list[str] = field(default_factory=list)
    #: With --profile: "POST" / "GET" -> where the gateway's CPU went.
    profiles: dict[str, Profile] = field(default_factory=dict)


def _cell(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{fmt(value)} {unit}"


def _ratio(new: float | None, other: float | None) -> str:
    if new is None or other is None or math.isnan(new) or math.isnan(other) or other == 0:
        return "-"
    return f"{new / other:.2f}x"


def table(figures: list[Figures]) -> str:
    """The one table: a column per gateway, then new/MoneroPay and new/baseline."""
    by_key = {f.subject.key: f for f in figures}
    columns = [f.subject.label for f in figures]
    header = ["figure", *columns]
    if "moneropay" in by_key:
        header.append("new/MoneroPay")
    if "baseline" in by_key:
        header.append("new/baseline")
    lines = [header]
    for row in ROWS:
        values = {k: f.values.get(row.key) for k, f in by_key.items()}
        cells = [row.title, *(_cell(values[f.subject.key], row.unit) for f in figures)]
        if "moneropay" in by_key:
            cells.append(_ratio(values.get("new"), values["moneropay"]))
        if "baseline" in by_key:
            cells.append(_ratio(values.get("new"), values["baseline"]))
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        first = line[0].ljust(widths[0])
        rest = [cell.rjust(widths[i + 1]) for i, cell in enumerate(line[1:])]
        out.append("  ".join([first, *rest]).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
