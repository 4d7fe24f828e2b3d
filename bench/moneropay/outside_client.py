"""A tiny outside client: sequential ``POST /receive`` on one keep-alive connection.

Run it as its own process against any MoneroPay-v2-compatible gateway (MoneroPay
itself, xmrgate, ...); it imports nothing of xmrgate, only httpx::

    python bench/moneropay/outside_client.py http://127.0.0.1:5000 -n 200

It sends ``--warmup`` untimed requests first, then ``-n`` timed ones, one after the
other on a single HTTP/1.1 connection, and prints the median, p99 and max latency in
milliseconds, how many took over 100 ms, and the rate in requests per second (wall
clock over the timed requests).
Any answer other than 200 stops the run with an error. ``--json`` prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass

import httpx


@dataclass(frozen=True)
class Result:
    """Figures of one run."""

    url: str
    requests: int
    median_ms: float
    p99_ms: float
    max_ms: float
    over_100ms: int
    req_per_s: float
    connections: int


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def run(base_url: str, n: int, warmup: int, amount: int, timeout: float) -> Result:
    """Send ``warmup`` + ``n`` sequential POST /receive and measure the last ``n``."""
    url = base_url.rstrip("/") + "/receive"
    peers: set[tuple[str, int]] = set()
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    with httpx.Client(timeout=timeout, limits=limits, trust_env=False) as client:
        for i in range(warmup):
            _post(client, url, amount, f"warmup {i}", peers)
        started = time.perf_counter()
        for i in range(n):
            t0 = time.perf_counter()
            _post(client, url, amount, f"outside client {i}", peers)
            latencies.append((time.perf_counter() - t0) * 1000)
        elapsed = time.perf_counter() - started
    return Result(
        url=base_url,
        requests=n,
        median_ms=round(statistics.median(latencies), 3),
        p99_ms=round(percentile(latencies, 99), 3),
        max_ms=round(max(latencies), 3),
        over_100ms=sum(1 for ms in latencies if ms > 100),
        req_per_s=round(n / elapsed, 1),
        connections=len(peers),
    )


def _post(
    client: httpx.Client, url: str, amount: int, description: str, peers: set[tuple[str, int]]
) -> None:
    """One POST /receive; raise unless it answers 200 with an address."""
    response = client.post(url, json={"amount": amount, "description": description})
    if response.status_code != 200 or "address" not in response.json():
        raise RuntimeError(f"{url}: {response.status_code} {response.text[:200]}")
    stream = response.extensions.get("network_stream")
    if stream is not None:
        peer = stream.get_extra_info("client_addr")
        if peer is not None:
            peers.add(tuple(peer))


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="gateway base URL, e.g. http://127.0.0.1:5000")
    parser.add_argument("-n", type=int, default=200, help="timed requests (default 200)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed requests first")
    parser.add_argument("--amount", type=int, default=1000, help="atomic units asked")
    parser.add_argument("--timeout", type=float, default=30.0, help="per request, seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    result = run(args.url, args.n, args.warmup, args.amount, args.timeout)
    if args.json:
        print(json.dumps(asdict(result)))
    else:
        print(
            f"{result.url}: {result.requests} sequential POST /receive on "
            f"{result.connections} connection(s): median {result.median_ms:.2f} ms, "
            f"p99 {result.p99_ms:.2f} ms, max {result.max_ms:.2f} ms "
            f"({result.over_100ms} over 100 ms), "
            f"{result.req_per_s:.1f} req/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
