"""A real HTTP callback receiver on loopback, scriptable per test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    """One callback as the receiver saw it."""

    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    answered: int

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def summary(self) -> str:
        """Event, address (abbreviated) and answer, for failure messages."""
        try:
            address = str(self.json.get("address", "?"))
        except ValueError:
            address = "?"
        return f"{self.headers.get('x-xmrgate-event')} {address[:8]}... -> {self.answered}"


@dataclass
class Receiver:
    """Records every POST; ``responses`` scripts the answers (default 200).

    ``hang_seconds`` makes it sleep before answering (a slow or dead receiver).
    A receiver started with ``listening=False`` holds its port but refuses
    connections until :meth:`listen` (a receiver that is down, then comes back on
    the same port without anyone else taking the port meanwhile).
    """

    server: ThreadingHTTPServer
    received: list[Received] = field(default_factory=list)
    attempts: list[Received] = field(default_factory=list)
    responses: list[int] = field(default_factory=list)
    hang_seconds: float = 0.0
    # POSTs whose body was read, answered or not yet (a hanging one counts at once).
    arrivals: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    serving: bool = False

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/callback"

    def delivered(self) -> list[Received]:
        """Callbacks that were answered with a 2xx."""
        with self.lock:
            return [r for r in self.attempts if 200 <= r.answered < 300]

    def wait_for(
        self,
        predicate: Callable[[list[Received]], bool],
        timeout: float = 45,
        what: str = "the delivered callbacks to match",
    ) -> None:
        """Wait until ``predicate(delivered)`` holds; on timeout say what and what came."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self.delivered()):
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        with self.lock:
            seen = [r.summary() for r in self.attempts]
        raise AssertionError(
            f"receiver: timed out after {timeout:g}s waiting for {what}; "
            f"{len(seen)} attempts so far: {seen}"
        )

    def listen(self) -> None:
        """Start accepting connections (for a receiver started with ``listening=False``)."""
        if self.serving:
            return
        self.server.server_activate()
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.serving = True

    def close(self) -> None:
        if self.serving:
            self.server.shutdown()  # blocks until serve_forever has returned
            self.serving = False
        self.server.server_close()


def start_receiver(port: int = 0, listening: bool = True) -> Receiver:
    """Start a receiver on loopback (a free port unless ``port`` is given), in a daemon thread.

    With ``listening=False`` the port is bound (nobody else can take it) but
    connections are refused until :meth:`Receiver.listen`.
    """
    holder: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            receiver = holder["r"]
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            with receiver.lock:
                receiver.arrivals += 1
            if receiver.hang_seconds:
                time.sleep(receiver.hang_seconds)
            with receiver.lock:
                status = receiver.responses.pop(0) if receiver.responses else 200
                receiver.attempts.append(
                    Received(
                        path=self.path,
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=body,
                        at=time.time(),
                        answered=status,
                    )
                )
            try:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:
                pass

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler, bind_and_activate=False)
    server.daemon_threads = True
    try:
        server.server_bind()
    except OSError:
        server.server_close()
        raise
    receiver = Receiver(server=server)
    holder["r"] = receiver
    if listening:
        receiver.listen()
    return receiver
