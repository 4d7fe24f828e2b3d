"""``xmrgate dev`` is a playground: loopback callbacks are allowed, and the banner says so.

It never waits silently: a gateway that cannot become healthy ends the wait with what it
said; each start sets the previous run's database aside; one playground per folder.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from xmrgate.config import Settings
from xmrgate.devnet import free_port
from xmrgate.domain.callback_urls import parse_url, refusal
from xmrgate.runtime.dev import DEV_CALLBACK_ALLOW, _announce, run
from xmrgate.runtime.dev_guards import (
    PlaygroundUnhealthy,
    running_pids,
    set_aside_database,
    unhealthy_message,
)

Health = tuple[int, dict[str, Any]]
HEALTHY: Health = (200, {"status": 200})


@contextlib.contextmanager
def serve_gateway(health: Health = HEALTHY) -> Iterator[str]:
    """Answers /health with ``health`` and POST /receive the way the gateway does, on loopback."""

    class Handler(BaseHTTPRequestHandler):
        # TCP_NODELAY: http.server writes the headers and the body apart, and without
        # it the body waits for the client's delayed ACK of the headers (40 ms each).
        disable_nagle_algorithm = True

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._json(*health)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self._json(200, {"address": "8SampleAddress"})

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() below waits for serve_forever to look again: every 0.5 s unless told.
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    ).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fake_gateway() -> Iterator[str]:
    """A healthy fake gateway."""
    with serve_gateway() as url:
        yield url


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


STARTING: Health = (
    503,
    {
        "status": 503,
        "services": {"walletrpc": True, "sqlite": True},
        "message": "the gateway has not opened its wallet yet",
    },
)
WRONG_WALLET: Health = (
    503,
    {
        "status": 503,
        "services": {"walletrpc": True, "sqlite": True},
        "message": "wallet-rpc has the wallet 4New open, but this database belongs to the wallet "
        "4Old: open the right wallet (nothing is synced or sent until then)",
    },
)


def announce_failure(url: str, deadline: float | None = None) -> tuple[BaseException | None, float]:
    """Run ``_announce`` in a thread: what it raised and how long it took.

    The thread is given 10 s, so a wait that never ends fails the test instead of hanging it.
    """
    raised: list[BaseException] = []

    def target() -> None:
        try:
            if deadline is None:  # the default deadline
                _announce(url, True, "xmrgate dev")
            else:
                _announce(url, True, "xmrgate dev", deadline=deadline)
        except BaseException as exc:
            raised.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=10)
    elapsed = time.monotonic() - started
    assert not thread.is_alive(), "the wait for a gateway that cannot become healthy went on"
    return (raised[0] if raised else None), elapsed


def test_wrong_wallet_ends_the_wait_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    """A database of another wallet never heals: no waiting for the deadline, and the
    message quotes /health and says to remove the playground's folder."""
    with serve_gateway(WRONG_WALLET) as url:
        error, elapsed = announce_failure(url)
    assert isinstance(error, PlaygroundUnhealthy), error
    assert error.wrong_wallet and elapsed < 5
    assert "this database belongs to the wallet 4Old" in error.reason
    assert "mine 10" not in capsys.readouterr().out  # no banner
    message = unhealthy_message(error, 45, Path("/x/.devnet"), ["ERROR x: wrong wallet open"])
    assert "belongs to another wallet" in message
    assert "this database belongs to the wallet 4Old" in message
    assert "ERROR x: wrong wallet open" in message
    assert "rm -rf /x/.devnet and start again" in message


@pytest.mark.parametrize("answer", ["starting", "no answer"])
def test_gateway_never_healthy_ends_the_wait_at_the_deadline(answer: str) -> None:
    """A gateway that stays 503 (or never answers) ends the wait once the deadline (0.5 s
    here: three of its looks, 0.2 s apart) has passed, with the last thing it said."""
    with contextlib.ExitStack() as stack:
        if answer == "starting":
            url = stack.enter_context(serve_gateway(STARTING))
        else:
            url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        error, elapsed = announce_failure(url, deadline=0.5)
    assert isinstance(error, PlaygroundUnhealthy), error
    assert not error.wrong_wallet
    assert 0.5 <= elapsed < 5
    expected = "not opened its wallet yet" if answer == "starting" else "no answer"
    assert expected in error.reason, error.reason
    message = unhealthy_message(error, 1.0, Path("/x/.devnet"), [])
    assert message.startswith("the gateway did not become healthy within 1 s.")
    assert expected in message and "rm -rf /x/.devnet and start again" in message


def test_previous_database_is_set_aside_with_its_wal(tmp_path: Path) -> None:
    """The old database moves with its WAL and SHM; an older one's WAL is not left beside it."""
    assert set_aside_database(tmp_path) is None
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"xmrgate.sqlite3{suffix}").write_text(f"new{suffix}")
    (tmp_path / "xmrgate.previous.sqlite3-journal").write_text("older")
    moved = set_aside_database(tmp_path)
    assert moved == tmp_path / "xmrgate.previous.sqlite3"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "xmrgate.previous.sqlite3",
        "xmrgate.previous.sqlite3-shm",
        "xmrgate.previous.sqlite3-wal",
    ]
    assert (tmp_path / "xmrgate.previous.sqlite3-wal").read_text() == "new-wal"


def test_second_playground_in_a_folder_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    """The first one's database stays where it is. Only processes that still name the
    folder count (the state file of a crashed playground may name other programs)."""
    script = "import time; print('up', flush=True); time.sleep(60)"
    stand_in = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE
    )
    # The port is taken: a run that is not refused ends when its gateway cannot bind.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        try:
            # Its command line is readable once it runs (right after fork and exec, empty).
            assert stand_in.stdout is not None and stand_in.stdout.readline() == b"up\n"
            pids = {"monerod": stand_in.pid, "funder": os.getpid(), "wallets": {}}
            (tmp_path / "state.json").write_text(json.dumps({"pids": pids}))
            (tmp_path / "xmrgate.sqlite3").write_text("in use")
            assert running_pids(tmp_path) == [stand_in.pid]
            with pytest.raises(SystemExit, match=f"already running in {tmp_path} .*{stand_in.pid}"):
                run(tmp_path, f"127.0.0.1:{taken.getsockname()[1]}")
            assert (tmp_path / "xmrgate.sqlite3").read_text() == "in use"
        finally:
            stand_in.kill()
            stand_in.communicate()
    assert running_pids(tmp_path) == []
