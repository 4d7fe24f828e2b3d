"""``GET /receive/:address`` load from outside: ``wrk`` cycling through paths, or
``bench.loadgen`` when wrk is not installed (Debian package ``wrk``).

Either runs as a separate process and knows nothing of xmrgate; :class:`ReadLoad`
says which one measured.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.loadgen import run_load

# wrk's duration units in its report (``Latency Distribution``: "99%   12.34ms").
_UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}
_PERCENT = re.compile(r"^\s*(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m)\s*$", re.MULTILINE)
_RATE = re.compile(r"^Requests/sec:\s+([\d.]+)", re.MULTILINE)
_TOTAL = re.compile(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m)", re.MULTILINE)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")

# Each wrk thread has its own Lua state: ``init`` gets the thread's offset so that the
# threads do not walk the paths in step.
_SCRIPT = """\
local paths = {%s}
local n = 0
function setup(thread)
  thread:set("offset", %d * (thread_count or 0))
  thread_count = (thread_count or 0) + 1
end
function init(args)
  n = offset or 0
end
function request()
  n = n + 1
  return wrk.format("GET", paths[(n %% #paths) + 1])
end
"""


@dataclass(frozen=True)
class ReadLoad:
    """Rate and latency of one read load (milliseconds), and the client that measured it."""

    client: str
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    failed: int


def wrk_available() -> bool:
    """Whether the ``wrk`` binary is on PATH."""
    return shutil.which("wrk") is not None


def parse_wrk(output: str) -> ReadLoad:
    """Figures from ``wrk --latency`` output (raises ValueError when they are missing)."""
    marks = {q: float(v) * _UNITS_MS[u] for q, v, u in _PERCENT.findall(output)}
    rate = _RATE.search(output)
    total = _TOTAL.search(output)
    if rate is None or total is None or "50" not in marks or "99" not in marks:
        raise ValueError(f"unexpected wrk output:\n{output[-2000:]}")
    requests = int(total.group(1))
    non_2xx = sum(int(m) for m in _NON_2XX.findall(output))
    socket = _SOCKET.search(output)
    failed = non_2xx + (sum(int(g) for g in socket.groups()) if socket is not None else 0)
    # wrk's rate counts every answer; only 2xx ones count here (as with bench.loadgen).
    ok_rate = float(rate.group(1)) * (requests - non_2xx) / requests if requests else 0.0
    return ReadLoad("wrk", ok_rate, marks["50"], marks["99"], requests, failed)


def _lua_string(path: str) -> str:
    # Paths are URL paths of base58 addresses; escape anyway.
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def run_wrk(url: str, paths: list[str], connections: int, seconds: float, threads: int) -> ReadLoad:
    """``wrk -t THREADS -c CONNECTIONS -d SECONDS --latency`` cycling through ``paths``."""
    stride = max(len(paths) // max(threads, 1), 1)
    script = _SCRIPT % (", ".join(_lua_string(p) for p in paths), stride)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
        lua = Path(handle.name)
    try:
        # subprocess.run kills wrk on any exception (a timeout, Ctrl-C): nothing lingers.
        done = subprocess.run(
            [
                "wrk",
                f"-t{threads}",
                f"-c{connections}",
                f"-d{max(round(seconds), 1)}s",
                "--timeout",
                "10s",
                "--latency",
                "-s",
                str(lua),
                url.rstrip("/"),
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=False,
        )
    finally:
        lua.unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return parse_wrk(done.stdout)


def read_load(
    url: str, addresses: list[str], *, connections: int = 16, seconds: float = 10.0
) -> ReadLoad:
    """GET /receive/:address over ``addresses`` (cycling) on ``connections`` connections."""
    if not addresses:
        raise ValueError("no addresses to read")
    paths = [f"/receive/{a}" for a in addresses]
    if wrk_available():
        # As many wrk threads as cores: the machine has 2 and the gateway wants them too.
        return run_wrk(url, paths, connections, seconds, threads=2)
    result = run_load(
        url,
        [{"method": "GET", "path": p} for p in paths],
        concurrency=connections,
        duration=seconds,
        warmup=0.5,
    )
    ok = result.statuses.get("200", 0)
    # loadgen's errors are transport errors plus answers >= 400 (counted in statuses too).
    bad = sum(n for status, n in result.statuses.items() if int(status) >= 400)
    failed = result.completed - ok + result.errors - bad
    return ReadLoad(
        "bench.loadgen", ok / result.seconds, result.p50_ms, result.p99_ms, result.completed, failed
    )
