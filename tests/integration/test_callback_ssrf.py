"""Callbacks under attack, against the real gateway on regtest: internal destinations and
invalid URLs refused at POST /receive, the --callback-allow escape hatch, a receiver
trickling its answer cut at the total deadline while others are served, and a 100 MB
answer read only up to 64 KB. Receivers are real sockets on loopback."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

import pytest

from tests.integration.callback_support import XMR, callbacks, wait_callbacks
from tests.integration.receiver import start_receiver
from testsupport.gateway import SYNC_WAIT, Gateway, count_rows
from xmrgate.devnet import Devnet, free_port

pytestmark = pytest.mark.integration

DEADLINE = 2.0
PORTS = {name: free_port() for name in ("allowed", "fast", "slow", "huge")}
GATEWAY_ARGS = [
    "--callback-timeout",
    f"{DEADLINE:g}s",
    "--callback-retry-base",
    "0.5s",
    "--callback-allow",
    ",".join(f"127.0.0.1:{port}" for port in PORTS.values()),
]


def when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass
class Connection:
    """One connection a raw server accepted."""

    opened: float
    closed: float | None = None
    request: bytes = b""
    sent: int = 0


@dataclass
class RawServer:
    """A TCP server on 127.0.0.1 whose connections a test scripts byte by byte."""

    port: int
    handler: Callable[[socket.socket, Connection, threading.Event], None]
    connections: list[Connection] = field(default_factory=list)
    active: int = 0
    most_active: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", self.port))
        self.sock.settimeout(0.2)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        record = Connection(opened=time.monotonic())
        with self.lock:
            self.connections.append(record)
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            record.request = read_request(conn)
            self.handler(conn, record, self.stop)
        except OSError:
            pass
        finally:
            record.closed = time.monotonic()
            with self.lock:
                self.active -= 1
            conn.close()

    def finished(self) -> list[Connection]:
        with self.lock:
            return [c for c in self.connections if c.closed is not None]

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def read_request(conn: socket.socket) -> bytes:
    """The request head and its Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def peer_closed(conn: socket.socket, wait: float) -> bool:
    """True once the gateway has closed its side (waits up to ``wait`` seconds)."""
    readable, _, _ = select.select([conn], [], [], wait)
    return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""


def trickle(conn: socket.socket, record: Connection, stop: threading.Event) -> None:
    """Answer one byte every 0.5 s and never finish the headers (each read is quick)."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not stop.is_set() and not peer_closed(conn, 0.5):
        conn.sendall(b"a")
        record.sent += 1


def huge(conn: socket.socket, record: Connection, stop: threading.Event) -> None:
    """A 200 answer announcing and sending 100 MB, until the gateway hangs up."""
    total = 100 * 1024 * 1024
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % total)
    block = b"x" * 65536
    while record.sent < total and not stop.is_set():
        conn.sendall(block)
        record.sent += len(block)


@pytest.fixture
def slow_server() -> Iterator[RawServer]:
    server = RawServer(PORTS["slow"], trickle)
    yield server
    server.close()


@pytest.fixture
def huge_server() -> Iterator[RawServer]:
    server = RawServer(PORTS["huge"], huge)
    yield server
    server.close()


@pytest.mark.parametrize(
    ("field_name", "url", "flag"),
    [
        ("callback_url", "http://127.0.0.1:{port}/hook", "127.0.0.1:{port}"),
        ("callback_url", "http://localhost:{port}/hook", "localhost:{port}"),
        ("callback_url", "http://2130706433:{port}/hook", "127.0.0.1:{port}"),
        ("callback_url", "http://0x7f.1:{port}/hook", "127.0.0.1:{port}"),
        ("callback_url", "http://[::1]:{port}/hook", "[::1]:{port}"),
        ("callback_url", "http://[::ffff:127.0.0.1]:{port}/", "[::ffff:7f00:1]:{port}"),
        ("callback_url", "http://169.254.169.254/latest/meta-data/", "169.254.169.254:80"),
        ("callback_url", "http://10.0.0.1/", "10.0.0.1:80"),
        ("callback_url", "http://100.64.0.1/", "100.64.0.1:80"),
        ("callback_url", "http://[fd00::1]/", "[fd00::1]:80"),
        ("callback_url", "http://0.0.0.0:{port}/", "0.0.0.0:{port}"),
        ("return_url", "http://192.168.1.1/admin", "192.168.1.1:80"),
        ("return_url", "http://127.0.0.1:{port}/thanks", "127.0.0.1:{port}"),
    ],
)
def test_internal_destination_is_400_naming_the_flag(
    gateway: Gateway, field_name: str, url: str, flag: str
) -> None:
    """Loopback (the operator's monerod), metadata, private and odd spellings: 400, no row,
    and the message tells the operator which --callback-allow entry would permit it."""
    port = free_port()  # not in the allow list
    before = count_rows(gateway, "payment_requests")
    r = gateway.post("/receive", json={"amount": 1, field_name: url.format(port=port)})
    assert r.status_code == 400, r.text
    message = r.json()["message"]
    assert message.startswith(f"{field_name}: ")
    assert f"--callback-allow {flag.format(port=port)}" in message
    assert count_rows(gateway, "payment_requests") == before


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:99999/p",
        "http://shop.example/p\nX-Injected: 1",
        "http://shop.example/p\r\n",
        "http://user:password@shop.example/p",
        "http://[::1/",
    ],
)
def test_invalid_url_is_400(gateway: Gateway, url: str) -> None:
    """URLs the sender could not deliver are refused up front, with the delivery parser."""
    r = gateway.post("/receive", json={"amount": 1, "callback_url": url})
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith("callback_url")


def test_allowed_loopback_is_accepted_and_delivered(gateway: Gateway, devnet: Devnet) -> None:
    """With --callback-allow 127.0.0.1:<port>, the shop on this host gets its callbacks,
    uncompressed (Accept-Encoding: identity)."""
    receiver = start_receiver(PORTS["allowed"])
    try:
        address = gateway.receive(XMR, callback_url=receiver.url + "?order=1")["address"]
        devnet.pay(address, XMR // 10, mine_blocks=1)
        receiver.wait_for(lambda d: len(d) == 1, timeout=SYNC_WAIT)
        [got] = receiver.delivered()
        assert got.path == "/callback?order=1"
        assert got.headers["accept-encoding"] == "identity"
    finally:
        receiver.close()


def test_trickling_receiver_is_cut_at_the_deadline_and_others_are_served(
    gateway: Gateway, devnet: Devnet, slow_server: RawServer
) -> None:
    """One byte every 0.5 s keeps every socket read alive, but not the try: each try ends at
    the total deadline, is counted, and is never run twice at once; another request's
    callback arrives meanwhile without waiting."""
    fast = start_receiver(PORTS["fast"])
    try:
        slow_address = gateway.receive(XMR, callback_url=f"http://127.0.0.1:{PORTS['slow']}/cb")[
            "address"
        ]
        fast_address = gateway.receive(XMR, callback_url=fast.url)["address"]
        devnet.pay_many([(slow_address, XMR // 10), (fast_address, XMR // 10)], mine_blocks=1)
        fast.wait_for(lambda d: len(d) == 1, timeout=SYNC_WAIT)
        [slow] = callbacks(gateway, slow_address)
        [quick] = callbacks(gateway, fast_address)
        assert quick["status"] == "delivered"
        assert (when(quick["delivered_at"]) - when(slow["created_at"])).total_seconds() < 1.5

        [slow] = wait_callbacks(
            gateway, slow_address, lambda cs: cs[0]["attempts"] >= 3, timeout=SYNC_WAIT
        )
        assert slow["status"] == "pending" and slow["last_error"] == "timeout"
        assert slow["last_status"] is None
        finished = slow_server.finished()
        assert len(finished) >= slow["attempts"] >= 3
        for conn in finished:
            assert conn.closed is not None
            assert DEADLINE - 0.5 < conn.closed - conn.opened < DEADLINE + 1.5, conn
            assert conn.sent >= 2  # the receiver did trickle
        assert slow_server.most_active == 1, "the same event was delivered twice at once"
    finally:
        fast.close()


def test_huge_answer_is_read_only_up_to_64_kb(gateway: Gateway, huge_server: RawServer) -> None:
    """A receiver answering 100 MB gets its connection closed after the status and at most
    64 KB: only what the kernel buffers on loopback leaves it."""
    address = gateway.receive(XMR, callback_url=f"http://127.0.0.1:{PORTS['huge']}/cb")["address"]
    gateway.devnet.pay(address, XMR // 10, mine_blocks=1)
    [event] = wait_callbacks(
        gateway, address, lambda cs: len(cs) == 1 and cs[0]["status"] == "delivered"
    )
    assert event["last_status"] == 200
    deadline = time.monotonic() + 10
    while not huge_server.finished() and time.monotonic() < deadline:
        time.sleep(0.05)
    [conn] = huge_server.finished()
    assert conn.sent < 16 * 1024 * 1024, f"{conn.sent} bytes left the receiver"
    assert b"accept-encoding: identity" in conn.request.lower()
