"""``xmrgate dev`` is a playground: loopback callbacks are allowed, and the banner says so."""

from __future__ import annotations

import ipaddress
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from xmrgate.config import Settings
from xmrgate.domain.callback_urls import parse_url, refusal
from xmrgate.runtime.dev import DEV_CALLBACK_ALLOW, _announce


@pytest.fixture
def fake_gateway() -> Iterator[str]:
    """Answers /health and POST /receive the way the gateway does, on loopback."""

    class Handler(BaseHTTPRequestHandler):
        def _json(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._json({"status": 200})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self._json({"address": "8SampleAddress"})

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_playground_allows_loopback_callbacks() -> None:
    """The playground's allow list permits the shop on this machine, by any loopback name."""
    entries = Settings(callback_allow=DEV_CALLBACK_ALLOW).callback_allow_entries
    for url, address in [
        ("http://127.0.0.1:8000/hook", "127.0.0.1"),
        ("http://localhost:3000/hook", "::1"),
        ("http://localhost:3000/hook", "127.0.0.1"),
        ("http://[::1]:9/hook", "::1"),
    ]:
        assert refusal(parse_url(url), [ipaddress.ip_address(address)], entries) is None
    assert refusal(parse_url("http://10.0.0.1/"), [ipaddress.ip_address("10.0.0.1")], entries)


def test_banner_says_loopback_callbacks_are_allowed(
    fake_gateway: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The banner tells the developer loopback callbacks work here and not in production."""
    _announce(fake_gateway, True, "xmrgate dev")
    banner = capsys.readouterr().out
    assert "Callbacks to loopback" in banner
    assert f"--callback-allow {DEV_CALLBACK_ALLOW}" in banner
    assert "production gateway refuses" in banner
