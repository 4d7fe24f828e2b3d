"""One send per answer (runtime/http_writes.py): uvicorn's head and body writes joined.

A fake transport shows the rules (what is joined, when a lone write leaves, what close
and abort do); a real uvicorn on loopback with the gateway's protocol shows that a
plain answer reaches the socket in one write, that a streamed body's head leaves before
the rest of it exists, and that HEAD answers still arrive.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from xmrgate.runtime.http_writes import CoalescingTransport, GatewayHttpProtocol


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def get_write_buffer_size(self) -> int:
        return 0


def _wrapped() -> tuple[CoalescingTransport, FakeTransport, asyncio.AbstractEventLoop]:
    loop = asyncio.get_running_loop()
    below = FakeTransport()
    return CoalescingTransport(below, loop), below, loop


async def _one_turn() -> None:
    await asyncio.sleep(0)


def test_a_head_and_its_body_leave_in_one_write() -> None:
    async def scenario() -> None:
        transport, below, _ = _wrapped()
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        assert below.writes == []  # held for the body
        assert transport.get_write_buffer_size() == 19
        transport.write(b"body")
        assert below.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
        await _one_turn()
        assert below.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]  # nothing sent twice

    asyncio.run(scenario())


def test_a_lone_write_leaves_at_the_end_of_the_loop_turn() -> None:
    async def scenario() -> None:
        transport, below, _ = _wrapped()
        transport.write(b"head")
        await _one_turn()
        assert below.writes == [b"head"]
        transport.writelines([b"a", b"b"])
        await _one_turn()
        assert below.writes == [b"head", b"ab"]

    asyncio.run(scenario())


def test_close_sends_what_is_held_and_abort_drops_it() -> None:
    async def scenario() -> None:
        transport, below, _ = _wrapped()
        transport.write(b"last words")
        transport.close()
        assert below.writes == [b"last words"] and below.closed
        transport, below, _ = _wrapped()
        transport.write(b"never sent")
        transport.abort()
        await _one_turn()
        assert below.writes == [] and below.aborted

    asyncio.run(scenario())


def test_nothing_is_written_to_a_transport_that_is_closing() -> None:
    async def scenario() -> None:
        transport, below, _ = _wrapped()
        transport.write(b"late")
        below.closed = True  # the peer went away within the turn
        await _one_turn()
        assert below.writes == []

    asyncio.run(scenario())


# ----------------------------------------------------------------- a real uvicorn


WRITES: list[bytes] = []
# Set by the test once the streamed answer's head has arrived: only then does the app
# send the rest of the body (a head held for the body would never arrive).
HEAD_SEEN = threading.Event()


class CountingTransport(FakeTransport):
    """Below the coalescing wrapper: counts the writes that reach the real socket."""

    def __init__(self, real: asyncio.Transport) -> None:
        super().__init__()
        self.real = real

    def write(self, data: Any) -> None:
        WRITES.append(bytes(data))
        self.real.write(data)

    def close(self) -> None:
        self.real.close()

    def is_closing(self) -> bool:
        return self.real.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.real.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self.real.pause_reading()

    def resume_reading(self) -> None:
        self.real.resume_reading()


class CountedProtocol(GatewayHttpProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CountingTransport(transport))


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/stream":
        head = [(b"content-type", b"text/plain")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        for _ in range(500):  # the rest of the body does not exist until the head arrived
            if HEAD_SEEN.is_set():
                break
            await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b"late", "more_body": False})
        return
    body = b'{"ok": true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"12")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, http=CountedProtocol, lifespan="off", log_level="warning")
    served = uvicorn.Server(config)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(served.serve([sock]),))
    thread.start()
    deadline = time.monotonic() + 10
    while not served.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert served.started
    try:
        yield sock.getsockname()[1]
    finally:
        served.should_exit = True
        thread.join(10)
        loop.close()


def _ask(port: int, request: bytes, until: bytes, timeout: float = 5) -> bytes:
    """Send ``request``; read until ``until`` has arrived (at most ``timeout`` s a read)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(request)
        got = b""
        while until not in got:
            chunk = conn.recv(65536)
            assert chunk, f"connection closed after {got!r}"
            got += chunk
        return got


def test_a_plain_answer_reaches_the_socket_in_one_write(server: int) -> None:
    WRITES.clear()
    got = _ask(server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b'{"ok": true}')
    assert got.startswith(b"HTTP/1.1 200 OK\r\n")
    assert len(WRITES) == 1 and WRITES[0] == got


def test_a_streamed_head_leaves_before_its_body_exists(server: int) -> None:
    HEAD_SEEN.clear()
    try:
        with socket.create_connection(("127.0.0.1", server), timeout=5) as conn:
            conn.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            got = b""
            while b"\r\n\r\n" not in got:  # a head held for its body: recv times out
                chunk = conn.recv(65536)
                assert chunk, f"connection closed after {got!r}"
                got += chunk
            assert got.startswith(b"HTTP/1.1 200 OK\r\n") and b"late" not in got
            HEAD_SEEN.set()
            while b"late" not in got:
                chunk = conn.recv(65536)
                assert chunk, f"connection closed after {got!r}"
                got += chunk
    finally:
        HEAD_SEEN.set()


def test_a_head_request_gets_its_head(server: int) -> None:
    got = _ask(server, b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", b"\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: 12" in got
