"""Run the real gateway (``python -m xmrgate serve``) as a subprocess for tests."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from xmrgate import devnet
from xmrgate.devnet import Devnet, WalletRpc, file_tail, free_port, wait_gateway_ready

# How long a test waits for the gateway to notice something (a liveness wait, not a
# latency bound: benchmarks measure latency). On the shared test devnet a wallet
# refresh can wait behind monerod mining a batch of blocks for another test.
SYNC_WAIT = 45.0

PG_ADMIN_URL = os.environ.get("XMRGATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


TEST_DB_PREFIX = "xmrgate_test_"


def create_pg_database() -> str:
    """Create a fresh PostgreSQL database; return its URL."""
    return devnet.create_pg_database(PG_ADMIN_URL, TEST_DB_PREFIX)


def drop_pg_database(url: str) -> None:
    """Drop a database made by ``create_pg_database``."""
    devnet.drop_pg_database(PG_ADMIN_URL, url, TEST_DB_PREFIX)


@dataclass
class Gateway:
    """A running xmrgate process with its own wallet-rpc and database."""

    devnet: Devnet
    wallet: WalletRpc
    backend: str
    db_arg: list[str]
    workdir: Path
    extra_args: list[str] = field(default_factory=list)
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "gateway.log"

    def start(self, wait: bool = True) -> None:
        """Start the process (again, on the same port when restarting)."""
        self.port = self.port or free_port()
        cmd = [
            sys.executable,
            "-m",
            "xmrgate",
            "serve",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--rpc-address",
            self.wallet.url,
            "--poll-frequency",
            "0.5s",
            *self.db_arg,
            *self.extra_args,
        ]
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until /health is 200 and the wallet's address header is present."""
        wait_gateway_ready(self.url, self.proc, self.log_path, timeout)

    def log_tail(self, lines: int = 40) -> str:
        return file_tail(self.log_path, lines)

    def stop(self) -> None:
        """SIGTERM and wait."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.client.get(self.url + path, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        return self.client.post(self.url + path, **kw)

    def delete(self, path: str, **kw: Any) -> httpx.Response:
        return self.client.delete(self.url + path, **kw)

    def receive(self, amount: int, **fields: Any) -> dict[str, Any]:
        """POST /receive and return the body (asserting 200)."""
        r = self.post("/receive", json={"amount": amount, **fields})
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def status(self, address: str, **params: Any) -> dict[str, Any]:
        r = self.get(f"/receive/{address}", params=params)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def wait_status(
        self, address: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = SYNC_WAIT
    ) -> dict[str, Any]:
        """Poll GET /receive until ``predicate`` holds."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = self.status(address)
            if predicate(last):
                return last
            time.sleep(0.1)
        raise AssertionError(f"status condition not met in {timeout}s; last: {last}")

    def close(self) -> None:
        self.stop()
        self.client.close()


def start_gateway(
    devnet: Devnet, backend: str, workdir: Path, extra_args: list[str] | None = None
) -> Gateway:
    """A fresh wallet-rpc, a fresh database of ``backend``, and the gateway on them."""
    workdir.mkdir(parents=True, exist_ok=True)
    wallet = devnet.start_wallet_rpc(f"gw-{workdir.name}-{uuid.uuid4().hex[:6]}")
    if backend == "postgresql":
        db_arg = ["--postgresql", create_pg_database()]
    else:
        db_arg = ["--sqlite", str(workdir / "xmrgate.sqlite3")]
    gateway = Gateway(
        devnet=devnet,
        wallet=wallet,
        backend=backend,
        db_arg=db_arg,
        workdir=workdir,
        extra_args=extra_args or [],
    )
    gateway.start()
    return gateway


def close_gateway(gateway: Gateway) -> None:
    """Stop the gateway and its wallet-rpc; drop its PostgreSQL database."""
    gateway.close()
    gateway.wallet.stop()
    if gateway.backend == "postgresql":
        drop_pg_database(gateway.db_arg[1])


def count_rows(gateway: Gateway, table: str) -> int:
    """Rows in one of the gateway's tables, read directly from its database."""
    query = f"SELECT count(*) FROM {table}"  # table names come from the tests only
    if gateway.backend == "postgresql":

        async def run() -> int:
            conn = await asyncpg.connect(gateway.db_arg[1])
            try:
                return int(await conn.fetchval(query))
            finally:
                await conn.close()

        return asyncio.run(run())
    import sqlite3

    with contextlib.closing(sqlite3.connect(gateway.db_arg[1])) as conn:
        return int(conn.execute(query).fetchone()[0])
