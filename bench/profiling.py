"""Sampling profiles of the gateway process with py-spy (``pip install py-spy``).

Used when a throughput target is missed: py-spy samples the running gateway while
the load generator keeps it busy, and the collapsed stacks are summarised as the
share of samples per layer and per package (by the innermost frame) and the
functions with the most samples of their own.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]*)(?::\d+)?\)$")


def py_spy() -> str | None:
    """Path of the py-spy binary (next to this interpreter or on PATH)."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def start(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes] | None:
    """Start sampling ``pid`` for ``seconds`` into ``out`` (collapsed stacks)."""
    binary = py_spy()
    if binary is None:
        return None
    return subprocess.Popen(
        [
            binary,
            "record",
            "--pid",
            str(pid),
            "--duration",
            str(max(int(seconds), 1)),
            "--rate",
            "250",
            "--nonblocking",
            # Only samples holding the GIL: on a busy 2-core machine a thread preempted
            # inside send() would otherwise look like time spent writing to sockets.
            "--gil",
            "--full-filenames",
            "--format",
            "raw",
            "--output",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )


def _package(path: str) -> str:
    """``sqlalchemy``, ``xmrgate``, ``stdlib:asyncio``... from a full file name."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if "/xmrgate/" in path:
        return "xmrgate"
    match = re.search(r"/python3\.\d+/([^/]+)", path)
    if match:
        return "stdlib:" + match.group(1).removesuffix(".py")
    return path


def _short(frame: str) -> tuple[str, str]:
    """``function (short/path.py)`` and the package of one py-spy frame."""
    match = _FRAME.match(frame.strip())
    if not match:
        return frame.strip(), "?"
    path = match.group("file")
    tail = re.split(r"site-packages/|/python3\.\d+/|/src/", path)[-1]
    return f"{match.group('func')} ({tail})", _package(path)


_LAYERS = (
    ("socket I/O syscalls (asyncio transports, selector)", ("stdlib:selectors",)),
    ("PostgreSQL driver (asyncpg)", ("asyncpg",)),
    ("SQLAlchemy Core + async adaptation (greenlet)", ("sqlalchemy", "greenlet")),
    ("FastAPI / Starlette / pydantic", ("fastapi", "starlette", "pydantic", "pydantic_core")),
    ("HTTP server (uvicorn, h11, httptools)", ("uvicorn", "h11", "httptools")),
    ("thread-pool hop (anyio, threading, queue)", ("anyio", "stdlib:threading", "stdlib:queue")),
    ("xmrgate's own code", ("xmrgate",)),
    ("asyncio event loop", ("stdlib:asyncio",)),
)


def _layer(package: str, leaf: str) -> str:
    if package == "stdlib:asyncio" and ("Transport.write" in leaf or "_read_ready" in leaf):
        return _LAYERS[0][0]
    for name, packages in _LAYERS:
        if package in packages:
            return name
    return "other"


def summarize(raw: Path, top: int = 12) -> str:
    """Human summary of a py-spy ``raw`` (collapsed stacks) file.

    Stacks under SQLAlchemy's greenlets are cut at the greenlet boundary, so only
    innermost frames are attributed (per function, package and layer).
    """
    if not raw.exists():
        return "(no profile written)"
    own: Counter[str] = Counter()
    packages: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_short(f) for f in stack.split(";") if "(" in f]
        if not frames:
            continue
        total += count
        leaf, package = frames[-1]
        own[leaf] += count
        packages[package] += count
        layers[_layer(package, leaf)] += count
    if not total:
        return "(no samples)"

    def share(n: int) -> str:
        return f"{100 * n / total:5.1f}%"

    lines = [f"{total} samples of the gateway holding the GIL (Python CPU time)"]
    lines.append("by layer (innermost frame):")
    lines += [f"  {share(n)}  {name}" for name, n in layers.most_common()]
    lines.append("by package (innermost frame):")
    lines += [f"  {share(n)}  {name}" for name, n in packages.most_common(top)]
    lines.append("functions with most own samples:")
    lines += [f"  {share(n)}  {name}" for name, n in own.most_common(top)]
    return "\n".join(lines)
