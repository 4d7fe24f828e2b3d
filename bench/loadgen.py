"""A closed-loop HTTP/1.1 load generator on raw asyncio streams (standard library only).

``python -m bench.loadgen SPEC.json`` runs ``concurrency`` clients, each on its own
keep-alive connection sending one request after the other (the next as soon as the
previous answer is read), for ``warmup + duration`` seconds, and prints one JSON
object: completed requests per second and latency percentiles of the requests
started after the warm-up. Requests cycle through ``requests`` (each client from its
own offset).

It runs as a separate process so that it never shares an interpreter lock with
what it measures. Hand-written HTTP instead of httpx: at a few thousand requests a
second on a 2-core machine, httpx's per-request cost would be a large part of the
figure being measured.
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_CONTENT_LENGTH = b"\r\ncontent-length:"
_CHUNKED = b"transfer-encoding: chunked"


@dataclass
class LoadResult:
    """What one load run measured (latencies in milliseconds)."""

    concurrency: int
    seconds: float
    completed: int
    errors: int
    statuses: dict[str, int]
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mean_body_bytes: float

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoadResult:
        """Parse the generator's output."""
        return cls(**data)


@dataclass
class _Stats:
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: int = 0
    body_bytes: int = 0


def _build(host: str, port: int, item: dict[str, Any]) -> bytes:
    method = str(item.get("method", "GET")).upper()
    body = item.get("body")
    lines = [f"{method} {item['path']} HTTP/1.1", f"Host: {host}:{port}"]
    payload = b""
    if body is not None:
        payload = (body if isinstance(body, str) else json.dumps(body)).encode()
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, int, bool]:
    """Read one response; return (status, body bytes, server closes the connection)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lower = head.lower()
    close = b"\r\nconnection: close" in lower or (
        head.startswith(b"HTTP/1.0") and b"connection: keep-alive" not in lower
    )
    at = lower.find(_CONTENT_LENGTH)
    if at >= 0:
        end = lower.index(b"\r\n", at + 2)
        size = int(lower[at + len(_CONTENT_LENGTH) : end])
        if size:
            await reader.readexactly(size)
        return status, size, close
    if _CHUNKED in lower:
        size = 0
        while True:
            line = await reader.readuntil(b"\r\n")
            chunk = int(line.split(b";", 1)[0], 16)
            await reader.readexactly(chunk + 2)
            size += chunk
            if chunk == 0:
                return status, size, close
    body = await reader.read()
    return status, len(body), True


async def _client(
    host: str,
    port: int,
    requests: list[bytes],
    offset: int,
    record_from: float,
    end_at: float,
    timeout: float,
    stats: _Stats,
) -> None:
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    k = offset
    clock = time.perf_counter
    while True:
        started = clock()
        if started >= end_at:
            break
        try:
            if writer is None or reader is None:
                reader, writer = await asyncio.open_connection(host, port)
            raw = requests[k % len(requests)]
            k += 1
            async with asyncio.timeout(timeout):
                writer.write(raw)
                status, size, close = await _read_response(reader)
            finished = clock()
            if started >= record_from and finished <= end_at:
                stats.latencies.append(finished - started)
                stats.statuses[status] = stats.statuses.get(status, 0) + 1
                stats.body_bytes += size
                if status >= 400:
                    stats.errors += 1
            if close:
                writer.close()
                reader = writer = None
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            if started >= record_from:
                stats.errors += 1
            if writer is not None:
                writer.close()
            reader = writer = None
            await asyncio.sleep(0.01)
    if writer is not None:
        writer.close()


def _quantile(ordered: list[float], q: float) -> float:
    if not ordered:
        return float("nan")
    rank = max(math.ceil(q * len(ordered)) - 1, 0)
    return ordered[min(rank, len(ordered) - 1)] * 1000


async def generate(spec: dict[str, Any]) -> LoadResult:
    """Run the load described by ``spec`` and summarise it."""
    host = str(spec["host"])
    port = int(spec["port"])
    concurrency = int(spec["concurrency"])
    duration = float(spec["duration"])
    warmup = float(spec.get("warmup", 0.5))
    timeout = float(spec.get("timeout", 30))
    requests = [_build(host, port, item) for item in spec["requests"]]
    stats = _Stats()
    now = time.perf_counter()
    record_from = now + warmup
    end_at = record_from + duration
    stride = max(len(requests) // max(concurrency, 1), 1)
    await asyncio.gather(
        *(
            _client(host, port, requests, i * stride, record_from, end_at, timeout, stats)
            for i in range(concurrency)
        )
    )
    ordered = sorted(stats.latencies)
    completed = len(ordered)
    return LoadResult(
        concurrency=concurrency,
        seconds=duration,
        completed=completed,
        errors=stats.errors,
        statuses={str(k): v for k, v in sorted(stats.statuses.items())},
        rps=completed / duration,
        p50_ms=_quantile(ordered, 0.50),
        p90_ms=_quantile(ordered, 0.90),
        p99_ms=_quantile(ordered, 0.99),
        max_ms=ordered[-1] * 1000 if ordered else float("nan"),
        mean_body_bytes=stats.body_bytes / completed if completed else 0.0,
    )


def run_load(
    url: str,
    requests: list[dict[str, Any]],
    *,
    concurrency: int,
    duration: float,
    warmup: float = 0.5,
    timeout: float = 30,
) -> LoadResult:
    """Run the generator in a child process against ``url`` (scheme://host:port)."""
    from bench.common import REPO_ROOT, hostport

    host, port = hostport(url)
    spec = {
        "host": host,
        "port": port,
        "concurrency": concurrency,
        "duration": duration,
        "warmup": warmup,
        "timeout": timeout,
        "requests": requests,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(spec, handle)
        path = Path(handle.name)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.loadgen", str(path)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=warmup + duration + timeout + 60,
            check=False,
        )
    finally:
        path.unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"load generator failed:\n{done.stderr[-2000:]}")
    return LoadResult.from_json(json.loads(done.stdout))


def main(argv: list[str]) -> None:
    """Entry point: read the spec file named by ``argv[0]``, print the result as JSON."""
    spec = json.loads(Path(argv[0]).read_text())
    result = asyncio.run(generate(spec))
    print(json.dumps(result.__dict__))


if __name__ == "__main__":
    main(sys.argv[1:])
