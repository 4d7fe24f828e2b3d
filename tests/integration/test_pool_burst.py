"""A busy wallet is not a dead one, on real processes.

- A burst of ``POST /receive`` that outruns the address pool while wallet-rpc is busy
  (stopped for 1.2 s at a time with SIGSTOP, as a sync tick's refresh or the ``store``
  of a large wallet file holds the single-threaded wallet) gets no 503: requests wait
  for the refills. The old rule (a refill call older than 0.75 s means "hung") refused
  every waiting request at once.
- Right after start, before the first wallet check and fill, a request waits for them
  instead of an immediate 503, while ``/health`` stays 503 until the gateway is ready.
- A wallet that is known to be down (connection refused) still gets a 503 at once,
  saying so.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from testsupport.gateway import GatewayProcess
from xmrgate.devnet import Devnet, WalletRpc
from xmrgate.devnet.processes import free_port

pytestmark = pytest.mark.integration

# The pool is small so that the bursts below outrun it many times over.
SMALL_POOL = ["--poll-frequency", "0.5s", "--address-pool-size", "30"]
SMALL_POOL += ["--address-pool-low-water", "10"]


class BusyWallet:
    """Stops wallet-rpc for ``busy`` seconds, lets it run ``free`` seconds, again and again."""

    def __init__(self, wallet: WalletRpc, *, busy: float = 1.2, free: float = 0.8) -> None:
        self._pid, self._busy, self._free = wallet.pid, busy, free
        self._stop = threading.Event()
        self.stops = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> BusyWallet:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._free):
            os.kill(self._pid, signal.SIGSTOP)
            self.stops += 1
            try:
                self._stop.wait(self._busy)
            finally:
                os.kill(self._pid, signal.SIGCONT)


@pytest.fixture(scope="module")
def busy_gateway(
    devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[GatewayProcess, WalletRpc]]:
    """A gateway on SQLite with a pool of 30, on a fresh wallet-rpc."""
    wallet = devnet.start_wallet_rpc(f"burst-{uuid.uuid4().hex[:8]}")
    workdir = tmp_path_factory.mktemp("burst")
    gw = GatewayProcess(workdir, wallet.url, str(workdir / "x.sqlite3"), SMALL_POOL)
    try:
        gw.start()
        yield gw, wallet
    finally:
        gw.close()
        wallet.stop()


def _create(client: httpx.Client, url: str, i: int) -> tuple[int, str]:
    answer = client.post(url + "/receive", json={"amount": i + 1, "description": f"order {i}"})
    return answer.status_code, answer.text


def test_a_sequential_burst_while_the_wallet_is_busy_gets_no_503(
    busy_gateway: tuple[GatewayProcess, WalletRpc],
) -> None:
    gw, wallet = busy_gateway
    with httpx.Client(timeout=30, trust_env=False) as client, BusyWallet(wallet) as busy:
        started = time.monotonic()
        answers = [_create(client, gw.url, i) for i in range(300)]
        elapsed = time.monotonic() - started
    refused = [(i, text) for i, (code, text) in enumerate(answers) if code != 200]
    print(f"300 sequential in {elapsed:.1f}s ({300 / elapsed:.0f}/s), wallet stopped {busy.stops}x")
    assert not refused, f"{len(refused)} of 300 refused, first: {refused[:2]}"
    # 270 of the 300 need refills (at most ~160/s): the first stop, at 0.8 s, comes in.
    assert busy.stops >= 1, "the wallet was never busy during the burst: nothing was shown"


def test_a_burst_from_16_clients_while_the_wallet_is_busy_gets_no_503(
    busy_gateway: tuple[GatewayProcess, WalletRpc],
) -> None:
    gw, wallet = busy_gateway

    def create(i: int) -> tuple[int, str]:
        with httpx.Client(timeout=30, trust_env=False) as client:
            return _create(client, gw.url, i)

    with ThreadPoolExecutor(16) as pool, BusyWallet(wallet) as busy:
        started = time.monotonic()
        answers = list(pool.map(create, range(300)))
        elapsed = time.monotonic() - started
    refused = [text for code, text in answers if code != 200]
    print(f"300 from 16 clients in {elapsed:.1f}s, wallet stopped {busy.stops}x")
    assert not refused, f"{len(refused)} of 300 refused, first: {refused[:2]}"
    # 270 of the 300 need refills (at most ~160/s): the first stop, at 0.8 s, comes in.
    assert busy.stops >= 1, "the wallet was never busy during the burst: nothing was shown"


def _first_answer(gw: GatewayProcess, client: httpx.Client, path: str) -> httpx.Response:
    """Poll until the freshly started gateway answers HTTP at all."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return client.get(gw.url + path)
        except httpx.TransportError:
            if time.monotonic() > deadline or (gw.proc and gw.proc.poll() is not None):
                raise
            time.sleep(0.02)


def test_requests_right_after_start_wait_for_the_wallet(devnet: Devnet, tmp_path: Path) -> None:
    """A fresh database: the first check and a pool fill of 400 subaddresses take seconds,
    during which /health is 503; POST /receive and GET /balance made then get 200."""
    wallet = devnet.start_wallet_rpc(f"start-{uuid.uuid4().hex[:8]}")
    gw = GatewayProcess(
        tmp_path, wallet.url, str(tmp_path / "x.sqlite3"), ["--address-pool-size", "400"]
    )
    try:
        gw.start(wait=False)
        with httpx.Client(timeout=30, trust_env=False) as client:
            health = _first_answer(gw, client, "/health")
            started = time.monotonic()
            made = client.post(gw.url + "/receive", json={"amount": 5})
            waited = time.monotonic() - started
            balance = client.get(gw.url + "/balance")
        assert health.status_code == 503, f"ready before the test could ask: {health.text}"
        assert made.status_code == 200, made.text
        assert balance.status_code == 200, balance.text
        print(f"/health said {health.json().get('message')!r}; POST /receive waited {waited:.2f}s")
        gw.wait_ready()
    finally:
        gw.close()
        wallet.stop()


def test_a_wallet_known_down_at_start_is_503_at_once_saying_why(tmp_path: Path) -> None:
    """Nothing listens at the wallet's address: no waiting for 5 s, and the 503 says why."""
    gw = GatewayProcess(
        tmp_path,
        f"http://127.0.0.1:{free_port()}/json_rpc",
        str(tmp_path / "x.sqlite3"),
        ["--address-pool-size", "10"],
    )
    try:
        gw.start(wait=False)
        with httpx.Client(timeout=30, trust_env=False) as client:
            _first_answer(gw, client, "/health")
            deadline = time.monotonic() + 30
            while "unreachable" not in gw.log_tail():  # the first attempt was refused
                assert time.monotonic() < deadline, gw.log_tail()
                time.sleep(0.05)
            started = time.monotonic()
            made = client.post(gw.url + "/receive", json={"amount": 5})
            elapsed = time.monotonic() - started
        assert made.status_code == 503, made.text
        assert "Connect" in made.json()["message"], made.text
        assert elapsed < 1.0, f"a refused wallet took {elapsed:.2f}s to be reported"
    finally:
        gw.close()
