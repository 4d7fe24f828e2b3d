"""An outside client: one burst of ``POST /receive`` over concurrent keep-alive connections.

Run it as its own process against any MoneroPay-v2-compatible gateway; it uses the
standard library only (nothing of xmrgate, not even the ``bench`` package: run it by
path)::

    python bench/outside_burst.py http://127.0.0.1:5000 --total 200 --connections 16

It opens ``--connections`` HTTP/1.1 connections first, then sends ``--total`` requests
over them as fast as they are answered (each connection sends its next request as soon
as it has read the previous answer, until the total is used up), and prints one JSON
object: the burst's wall time (first request sent to last answer read), every
latency in milliseconds, the answers by status, transport errors, and the addresses
the gateway handed out (the orchestrator reads them back with ``GET /receive/:address``).

Raw asyncio streams instead of httpx: at a thousand requests a second on a shared
2-core machine, httpx's own per-request cost would be a large part of the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit


@dataclass
class Burst:
    """What one burst measured."""

    requests: int
    connections: int
    wall_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    addresses: list[str] = field(default_factory=list)


def _request(host: str, port: int, amount: int, description: str) -> bytes:
    body = json.dumps({"amount": amount, "description": description}).encode()
    head = (
        f"POST /receive HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _read(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """One response: (status, body, the server closes the connection)."""
    head = (await reader.readuntil(b"\r\n\r\n")).lower()
    status = int(head[9:12])
    close = b"\r\nconnection: close" in head
    at = head.find(b"\r\ncontent-length:")
    if at >= 0:
        end = head.index(b"\r\n", at + 2)
        size = int(head[at + len(b"\r\ncontent-length:") : end])
        return status, await reader.readexactly(size) if size else b"", close
    if b"transfer-encoding: chunked" in head:
        chunks = []
        while True:
            line = await reader.readuntil(b"\r\n")
            size = int(line.split(b";", 1)[0], 16)
            chunks.append((await reader.readexactly(size + 2))[:size])
            if size == 0:
                return status, b"".join(chunks), close
    return status, await reader.read(), True


async def _connection(
    host: str,
    port: int,
    streams: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    remaining: list[int],
    payload: bytes,
    timeout: float,
    burst: Burst,
) -> None:
    reader, writer = streams
    clock = time.perf_counter
    # One event loop, no await between the test and the decrement: no two connections
    # take the same request.
    while remaining[0] > 0:
        remaining[0] -= 1
        started = clock()
        try:
            async with asyncio.timeout(timeout):
                writer.write(payload)
                status, body, close = await _read(reader)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            burst.errors += 1
            writer.close()
            reader, writer = await asyncio.open_connection(host, port)
            continue
        burst.latencies_ms.append((clock() - started) * 1000)
        burst.statuses[str(status)] = burst.statuses.get(str(status), 0) + 1
        if status == 200:
            try:
                address = json.loads(body).get("address")
            except ValueError:
                address = None
            if isinstance(address, str):
                burst.addresses.append(address)
        if close:
            writer.close()
            reader, writer = await asyncio.open_connection(host, port)
    writer.close()


async def burst(
    url: str, total: int, connections: int, amount: int = 1000, timeout: float = 60.0
) -> Burst:
    """Send ``total`` POST /receive over ``connections`` connections opened beforehand."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    payload = _request(host, port, amount, "outside burst")
    result = Burst(requests=total, connections=connections)
    # Connections are opened before the clock starts: the burst measures the answers,
    # not TCP handshakes.
    opened = await asyncio.gather(
        *(asyncio.open_connection(host, port) for _ in range(connections))
    )
    remaining = [total]
    started = time.perf_counter()
    await asyncio.gather(
        *(
            _connection(host, port, streams, remaining, payload, timeout, result)
            for streams in opened
        )
    )
    result.wall_s = time.perf_counter() - started
    return result


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run one burst, print it as one JSON line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("url", help="gateway base URL, e.g. http://127.0.0.1:5000")
    parser.add_argument("--total", type=int, default=200, help="requests in the burst")
    parser.add_argument("--connections", type=int, default=16, help="concurrent connections")
    parser.add_argument("--amount", type=int, default=1000, help="atomic units asked")
    parser.add_argument("--timeout", type=float, default=60.0, help="per request, seconds")
    args = parser.parse_args(argv)
    result = asyncio.run(burst(args.url, args.total, args.connections, args.amount, args.timeout))
    print(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
