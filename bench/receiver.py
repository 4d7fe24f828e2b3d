"""A fast callback receiver on loopback, run as its own process.

``python -m bench.receiver`` binds a free port on 127.0.0.1, prints it on the first
line of stdout, and answers every POST with 200 (keep-alive, HTTP/1.1), recording
when it arrived (``time.time()``), the event kind and the address from the body (a
Greenfield webhook delivery's ``type`` and ``invoiceId``).
``GET /stats`` returns ``{"count", "first", "last"}``, ``GET /items`` the records,
``GET /reset`` forgets them. It stops on SIGTERM.

An asyncio server with a hand-written parser rather than ``http.server``: delivery
throughput is measured here, and the receiver must not be the slowest part.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"


@dataclass
class _Book:
    items: list[tuple[float, str, str]] = field(default_factory=list)


def _reply(body: Any) -> bytes:
    data = json.dumps(body).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    return head.encode() + b"\r\n" + data


async def _serve(book: _Book, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            arrived = time.time()
            lower = head.lower()
            size = 0
            at = lower.find(b"\r\ncontent-length:")
            if at >= 0:
                size = int(lower[at + 17 : lower.index(b"\r\n", at + 2)])
            body = await reader.readexactly(size) if size else b""
            method, path = head.split(b" ", 2)[:2]
            if method == b"POST":
                try:
                    data = json.loads(body)
                    # A callback names its event and address; a Greenfield webhook's
                    # delivery its type and invoice.
                    kind = data.get("event") or data.get("type")
                    about = data.get("address") or data.get("invoiceId")
                    book.items.append((arrived, str(kind), str(about)))
                except ValueError:
                    book.items.append((arrived, "?", "?"))
                writer.write(_OK)
            elif path == b"/stats":
                first = book.items[0][0] if book.items else None
                last = book.items[-1][0] if book.items else None
                writer.write(_reply({"count": len(book.items), "first": first, "last": last}))
            elif path == b"/items":
                writer.write(_reply({"items": book.items}))
            elif path == b"/reset":
                book.items.clear()
                writer.write(_reply({"count": 0}))
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
    finally:
        writer.close()


async def _main() -> None:
    book = _Book()
    server = await asyncio.start_server(lambda r, w: _serve(book, r, w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    async with server:
        await stop.wait()


class ReceiverProcess:
    """Starts and queries a receiver process; :meth:`stop` ends it by PID."""

    def __init__(self) -> None:
        """Start the process and learn its port."""
        from bench.common import REPO_ROOT

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.receiver"],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        try:
            assert self.proc.stdout is not None
            self.port = int(self.proc.stdout.readline().strip())
        except BaseException:
            self.stop()
            raise
        self._http = httpx.Client(timeout=10, trust_env=False)

    @property
    def url(self) -> str:
        """The callback URL to give the gateway."""
        return f"http://127.0.0.1:{self.port}/callback"

    def _get(self, path: str) -> dict[str, Any]:
        data: dict[str, Any] = self._http.get(f"http://127.0.0.1:{self.port}{path}").json()
        return data

    def stats(self) -> dict[str, Any]:
        """``{"count", "first", "last"}`` of the callbacks received."""
        return self._get("/stats")

    def items(self) -> list[tuple[float, str, str]]:
        """Every callback received: (arrival unix time, event, address)."""
        return [(float(a), str(e), str(d)) for a, e, d in self._get("/items")["items"]]

    def reset(self) -> None:
        """Forget what was received."""
        self._get("/reset")

    def stop(self) -> None:
        """SIGTERM the process and wait."""
        from testsupport.processes import stop_process

        with contextlib.suppress(AttributeError):
            self._http.close()
        stop_process(self.proc, timeout=10)


if __name__ == "__main__":
    asyncio.run(_main())
