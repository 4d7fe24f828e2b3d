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


@dataclass
class Receiver:
    """Records every POST; ``responses`` scripts the answers (default 200).

    ``hang_seconds`` makes it sleep before answering (a slow or dead receiver).
    """

    server: ThreadingHTTPServer
    received: list[Received] = field(default_factory=list)
    attempts: list[Received] = field(default_factory=list)
    responses: list[int] = field(default_factory=list)
    hang_seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/callback"

    def delivered(self) -> list[Received]:
        """Callbacks that were answered with a 2xx."""
        with self.lock:
            return [r for r in self.attempts if 200 <= r.answered < 300]

    def wait_for(self, predicate: Callable[[list[Received]], bool], timeout: float = 45) -> None:
        """Wait until ``predicate(delivered)`` holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.delivered()):
                return
            time.sleep(0.05)
        raise AssertionError(
            f"receiver: condition not met in {timeout}s; got "
            f"{[(r.headers.get('x-xmrgate-event'), r.answered) for r in self.attempts]}"
        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_receiver(port: int = 0) -> Receiver:
    """Start a receiver on loopback (a free port unless ``port`` is given), in a daemon thread."""
    holder: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            receiver = holder["r"]
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
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

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    receiver = Receiver(server=server)
    holder["r"] = receiver
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver
