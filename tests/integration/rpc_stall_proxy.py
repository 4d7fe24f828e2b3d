"""A JSON-RPC-aware HTTP proxy in front of a real wallet-rpc that can stall one method.

The TCP proxy (``tcpproxy.py``) hangs a whole link; some failures happen on one call
only (the wallet stalls on ``validate_address`` right before a payout while every other
call works). This proxy forwards each POST to the real wallet-rpc and answers with its
reply, except calls to a method named in :meth:`stall`: those get no answer until
:meth:`release` (or ``max_stall`` seconds), then the connection is closed unanswered.
It also remembers the largest reply of each method (``largest_reply``).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx


class StallingRpcProxy:
    """Forwards JSON-RPC to ``target_url``; stalls the methods it is told to."""

    def __init__(self, target_url: str, *, max_stall: float = 60.0) -> None:
        self.target_url = target_url
        self.max_stall = max_stall
        self.stalled_calls: list[str] = []
        # The largest reply seen per method, in bytes.
        self.largest_reply: dict[str, int] = {}
        self._stall: set[str] = set()
        self._released = threading.Event()
        self._client = httpx.Client(timeout=60, trust_env=False)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                method = _method(body)
                if method in proxy._stall:
                    proxy.stalled_calls.append(method)
                    proxy._released.wait(proxy.max_stall)
                    self.close_connection = True
                    return
                reply = proxy._client.post(
                    proxy.target_url, content=body, headers={"Content-Type": "application/json"}
                )
                size = len(reply.content)
                proxy.largest_reply[method] = max(proxy.largest_reply.get(method, 0), size)
                self.send_response(reply.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            def log_message(self, format: str, *args: object) -> None:
                return

        # Port 0: the kernel picks a free port and it stays ours (no pick-then-bind race).
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The JSON-RPC URL to give the gateway instead of the wallet's."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/json_rpc"

    def stall(self, method: str) -> None:
        """From now on, calls to ``method`` get no answer."""
        self._released.clear()
        self._stall.add(method)

    def release(self) -> None:
        """Forward every method again and let stalled calls end (unanswered)."""
        self._stall.clear()
        self._released.set()

    def close(self) -> None:
        """Stop serving and end every stalled call."""
        self.release()
        self._server.shutdown()
        self._server.server_close()
        self._client.close()


def _method(body: bytes) -> str:
    try:
        return str(json.loads(body).get("method", ""))
    except (ValueError, AttributeError):
        return ""
