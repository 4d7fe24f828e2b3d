"""API keys and scopes, body limits, callback host allow-list, public bind refusal, secrets."""

from __future__ import annotations

import contextlib
import json
import socket
import time

import pytest

from testsupport.gateway import Gateway

pytestmark = pytest.mark.integration

READ_KEY = "read-key-0123456789abcdef"
FULL_KEY = "full-key-0123456789abcdef"
RPC_PASSWORD = "rpc-password-never-logged"
CALLBACK_SECRET = "callback-secret-never-logged"
GATEWAY_ARGS = [
    "--api-key",
    f"{READ_KEY}:read {FULL_KEY}",
    "--callback-allow",
    "127.0.0.1,*.example.com",
    "--rpc-username",
    "merchant",
    "--rpc-password",
    RPC_PASSWORD,
    "--callback-secret",
    CALLBACK_SECRET,
]
FULL = {"Authorization": f"Bearer {FULL_KEY}"}
READ = {"Authorization": f"Bearer {READ_KEY}"}


@pytest.fixture(scope="module", params=["sqlite"])
def gateway(request: pytest.FixtureRequest, devnet, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Security behaviour does not depend on the database: one backend is enough."""
    from testsupport.gateway import close_gateway, start_gateway

    gw = start_gateway(devnet, request.param, tmp_path_factory.mktemp("sec"), GATEWAY_ARGS)
    yield gw
    close_gateway(gw)


def test_requests_without_key_are_401(gateway: Gateway) -> None:
    """Every API endpoint wants a key: 401 JSON with WWW-Authenticate."""
    for method, path in [
        ("GET", "/balance"),
        ("POST", "/receive"),
        ("GET", "/receive/8abc"),
        ("POST", "/transfer"),
        ("GET", "/transfer/" + "ab" * 32),
        ("GET", "/payouts"),
    ]:
        r = gateway.client.request(method, gateway.url + path, json={"amount": 1})
        assert r.status_code == 401, (method, path, r.text)
        assert r.json()["status"] == 401
        assert r.headers["www-authenticate"] == "Bearer"


def test_wrong_key_is_401(gateway: Gateway) -> None:
    """An unknown key is refused."""
    r = gateway.get("/balance", headers={"Authorization": "Bearer not-a-key-at-all-xyz"})
    assert r.status_code == 401 and r.json()["message"] == "invalid API key"


def test_scopes(gateway: Gateway) -> None:
    """A read key reads but cannot create requests or pay; a full key can."""
    assert gateway.get("/balance", headers=READ).status_code == 200
    r = gateway.post("/receive", json={"amount": 1}, headers=READ)
    assert r.status_code == 403 and "receive" in r.json()["message"]
    r = gateway.post(
        "/transfer", json={"destinations": [{"amount": 1, "address": "x"}]}, headers=READ
    )
    assert r.status_code == 403 and "transfer" in r.json()["message"]
    r = gateway.post("/receive", json={"amount": 1}, headers=FULL)
    assert r.status_code == 200
    address = r.json()["address"]
    assert gateway.get(f"/receive/{address}", headers=READ).status_code == 200


def test_health_and_checkout_need_no_key(gateway: Gateway) -> None:
    """/health and the customer's checkout page stay open."""
    assert gateway.get("/health").status_code == 200
    address = gateway.post("/receive", json={"amount": 1}, headers=FULL).json()["address"]
    assert gateway.get(f"/pay/{address}").status_code == 200


def test_callback_allow_list(gateway: Gateway) -> None:
    """--callback-allow permits internal destinations (here 127.0.0.1 and *.example.com);
    other internal ones are refused, and outside ones never needed an entry."""
    for url, flag in (("http://10.0.0.1/cb", "10.0.0.1:80"), ("http://[::1]:9/x", "[::1]:9")):
        r = gateway.post("/receive", json={"amount": 1, "callback_url": url}, headers=FULL)
        assert r.status_code == 400 and f"--callback-allow {flag}" in r.json()["message"]
    for url in (
        "http://127.0.0.1:9/cb?x=1",
        "https://shop.example.com/hook",
        "http://example.com.evil.test/x",
    ):
        r = gateway.post("/receive", json={"amount": 1, "callback_url": url}, headers=FULL)
        assert r.status_code == 200, r.text


def test_body_size_limit(gateway: Gateway) -> None:
    """A body over 64 KB is refused with 413 before it is parsed."""
    big = b'{"amount": 1, "description": "' + b"x" * 70000 + b'"}'
    r = gateway.post("/receive", content=big, headers={**FULL, "content-type": "application/json"})
    assert r.status_code == 413 and r.json()["status"] == 413


def test_secrets_never_in_logs_or_errors(gateway: Gateway) -> None:
    """The RPC password, API keys and the callback secret appear in no log line or answer."""
    answers = [
        gateway.get("/balance", headers={"Authorization": f"Bearer {FULL_KEY}x"}).text,
        gateway.post("/receive", content=b"{", headers=FULL).text,
    ]
    gateway.wallet.kill()
    try:
        answers.append(gateway.post("/receive", json={"amount": 1}, headers=FULL).text)
        answers.append(gateway.get("/balance", headers=FULL).text)
    finally:
        gateway.wallet.restart()
    gateway.wait_ready()
    log = gateway.log_path.read_text()
    assert "wallet-rpc" in log  # the log is really there
    for secret in (RPC_PASSWORD, CALLBACK_SECRET, READ_KEY, FULL_KEY):
        assert secret not in log
        assert all(secret not in a for a in answers)


def _connect(gateway: Gateway) -> socket.socket:
    host, port = gateway.url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def _closed_by_peer(sock: socket.socket, within: float) -> bool:
    """True once the server has closed the connection (recv gives b'' or a reset)."""
    sock.settimeout(within)
    try:
        while chunk := sock.recv(65536):
            del chunk  # the rest of an answer; keep reading until the close
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_idle_keep_alive_connection_is_closed_after_5_seconds(gateway: Gateway) -> None:
    """uvicorn's timeout_keep_alive: a client that keeps a connection open and silent
    (many of them exhaust a public checkout's connections) is dropped after 5 s."""
    with _connect(gateway) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 "), first[:100]
        started = time.monotonic()
        assert _closed_by_peer(sock, within=15), "an idle connection was kept over 15 s"
        assert 3.0 < time.monotonic() - started < 12.0


def _answer(sock: socket.socket, timeout: float) -> bytes:
    """Everything the server sends until it closes (or ``timeout`` passes)."""
    sock.settimeout(timeout)
    got = b""
    with contextlib.suppress(ConnectionResetError, TimeoutError):
        while chunk := sock.recv(65536):
            got += chunk
    return got


def test_an_endless_header_block_is_cut_off(gateway: Gateway) -> None:
    """Header lines that never end the head are not buffered without bound (with
    httptools, uvicorn's own h11 limit does nothing): past 64 KB, a JSON 431 and the
    connection closed; the gateway keeps serving."""
    with _connect(gateway) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        with contextlib.suppress(ConnectionError):
            for _ in range(1024):  # up to 1 MB, never the blank line
                sock.sendall(b"X-Pad: " + b"a" * 1017 + b"\r\n")
        answer = _answer(sock, 10)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert json.loads(body)["status"] == 431
    assert gateway.get("/health").status_code == 200


def test_a_trickled_head_is_cut_off_after_10_seconds(gateway: Gateway) -> None:
    """Slowloris: a byte of header every 2 s resets uvicorn's keep-alive timer for ever;
    the head must be whole within 10 s of its first byte, else a JSON 408 and close."""
    with _connect(gateway) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /health HTTP/1.1\r\nX-Slow: ")
        answer = b""
        with contextlib.suppress(ConnectionError):
            while time.monotonic() - started < 30 and not answer:
                sock.sendall(b"a")
                sock.settimeout(2)
                with contextlib.suppress(TimeoutError):
                    answer = sock.recv(65536)
        elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert 9.0 < elapsed < 15.0, elapsed
    assert gateway.get("/health").status_code == 200
