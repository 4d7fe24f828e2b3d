"""The gateway (``python -m xmrgate serve``) as a child process, for tests and benchmarks.

:class:`GatewayProcess` starts, waits for, restarts and ends one gateway process (by
PID) and talks HTTP to it. :class:`Gateway` is the same process as the integration
tests set it up (a devnet wallet-rpc, woken by its monerod's announcements, a poll every
2 s); :func:`start_gateway` and :func:`close_gateway` also make and remove its
wallet-rpc and database.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx

from testsupport.gateway_databases import migrated_postgresql, migrated_sqlite
from testsupport.ports import holds_listener, port_taken
from testsupport.postgres import drop_pg_database
from testsupport.processes import peak_rss_kib, stop_process, wait_until
from testsupport.wallet_pool import give_back, take_wallet_rpc
from xmrgate.devnet import Devnet, WalletRpc, free_port
from xmrgate.devnet.processes import LOG_TAIL_LINES, die_with_parent, kill, log_tail

# How long a test waits for the gateway to notice something (a liveness wait, not a
# latency bound: benchmarks measure latency). On the shared test devnet a wallet
# refresh can wait behind monerod mining a batch of blocks for another test.
SYNC_WAIT = 45.0
#: How long a gateway gets to answer /health with its wallet open.
READY_TIMEOUT = 90.0
#: The tests' sync poll period (the product's default is slower). Their gateways are woken
#: by monerod's announcements (``--daemon-zmq``) as soon as a block or a pool transaction
#: comes, so the poll only catches what the chain does not announce (an expiry, a wallet
#: changed behind the gateway): an idle test gateway polling every 0.5 s took 53 ms of CPU
#: a second (its wallet-rpc and monerod included), 21 ms woken and polling every 2 s, and a
#: run keeps three or four of them idle most of its 15 minutes. A module that needs the
#: faster poll passes its own --poll-frequency (later options win).
TEST_POLL_FREQUENCY = "2s"
#: The faster poll, for a module that counts ticks, times a catch-up by the poll, or
#: waits for what monerod does not announce (in its GATEWAY_ARGS).
FAST_POLL = ("--poll-frequency", "0.5s")
#: Lets test gateways call receivers on 127.0.0.1 (internal addresses are refused otherwise).
LOOPBACK_CALLBACKS = ("--callback-allow", "127.0.0.1")

T = TypeVar("T")


class GatewayProcess:
    """``python -m xmrgate serve`` on a wallet-rpc and a database, as production runs it.

    ``database`` is a PostgreSQL URL (``postgresql://...``) or a SQLite file path. The
    port is chosen once, so :meth:`start` after :meth:`stop` or :meth:`kill` restarts
    the gateway at the same URL, unless another process took the port meanwhile (then
    at a new one). Output goes to :attr:`log_path` in ``workdir``.
    """

    def __init__(
        self,
        workdir: Path,
        wallet_url: str,
        database: str,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        """Prepare (not start) a gateway on a free port.

        ``env`` replaces the environment (the benchmark runs a previous version of the
        gateway with ``PYTHONPATH`` pointing at its checkout).
        """
        self.workdir = workdir
        self.env = dict(env) if env is not None else None
        self.wallet_url = wallet_url
        self.database = database
        self.extra_args = list(extra_args)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.client = httpx.Client(timeout=30, trust_env=False)

    @property
    def backend(self) -> str:
        """``postgresql`` or ``sqlite``."""
        is_pg = self.database.startswith(("postgresql://", "postgres://"))
        return "postgresql" if is_pg else "sqlite"

    @property
    def db_arg(self) -> list[str]:
        """The command-line options that point the gateway at its database."""
        return [f"--{self.backend}", self.database]

    @property
    def url(self) -> str:
        """Base URL of the API."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        """Where the process's stdout and stderr go (appended to across restarts)."""
        return self.workdir / f"gateway-{self.port}.log"

    @property
    def pid(self) -> int:
        """PID of the running process."""
        assert self.proc is not None, "gateway not started"
        return self.proc.pid

    def start(self, *, wait: bool = True) -> None:
        """Spawn the process; with ``wait``, return once ``/health`` is 200 with a wallet."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if port_taken(self.port):  # by another test process since our last stop
            self.port = free_port()
        cmd = [
            sys.executable,
            "-m",
            "xmrgate",
            "serve",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--rpc-address",
            self.wallet_url,
            *self.db_arg,
            *self.extra_args,
        ]
        with self.log_path.open("ab") as log:
            self.started_at = time.time()
            self.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                preexec_fn=die_with_parent(),  # it dies with the test process, as its wallet
            )
        if wait:
            try:
                self.wait_ready()
            except BaseException:
                # A gateway that never became ready must not outlive the test.
                self.stop()
                raise

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until ``/health`` is 200 (the gateway has opened and verified its wallet).

        Raises :class:`~testsupport.processes.WaitFailed` (with the log's tail) when the
        process exits or time runs out. Only an answer from a socket of this process
        counts: another process on the port (it took it while we were stopped) is not
        this gateway, however healthy it is.
        """
        assert self.proc is not None, "gateway not started"
        pid = self.proc.pid
        with httpx.Client(timeout=5, trust_env=False) as client:

            def probe() -> tuple[bool, str]:
                try:
                    r = client.get(self.url + "/health")
                except httpx.HTTPError as exc:
                    return False, f"{type(exc).__name__}: {exc}"
                if not holds_listener(pid, self.port):
                    return False, f"{r.status_code} from a process other than {pid}"
                ready = r.status_code == 200
                return ready, f"{r.status_code} {r.text[:300]}"

            wait_until(
                f"the gateway at {self.url} to answer /health 200 (its wallet open)",
                probe,
                timeout=timeout,
                log=self.log_path,
                proc=self.proc,
            )

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The end of the gateway's log ("" before it has one)."""
        return log_tail(self.log_path, lines=lines)

    def peak_rss_kib(self) -> int | None:
        """VmHWM of the running process (None when there is none)."""
        return peak_rss_kib(self.proc.pid) if self.proc is not None else None

    def stop(self) -> None:
        """SIGTERM the process by PID and wait (SIGKILL after 20 s)."""
        stop_process(self.proc)
        self.proc = None

    def kill(self) -> None:
        """SIGKILL the process, as a crash would, and reap it."""
        if self.proc is not None:
            kill(self.proc.pid, self.proc)
        self.proc = None

    def close(self) -> None:
        """Stop the process and close the HTTP client."""
        self.stop()
        self.client.close()

    # ----------------------------------------------------------------- HTTP

    def get(self, path: str, **kw: Any) -> httpx.Response:
        """GET ``path`` on the API."""
        return self.client.get(self.url + path, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        """POST to ``path`` on the API."""
        return self.client.post(self.url + path, **kw)

    def delete(self, path: str, **kw: Any) -> httpx.Response:
        """DELETE ``path`` on the API."""
        return self.client.delete(self.url + path, **kw)

    def health(self) -> dict[str, Any]:
        """GET /health's body, or {} while the gateway is not listening (starting up)."""
        try:
            return dict(self.get("/health").json())
        except httpx.TransportError:
            return {}

    def receive(self, amount: int, **fields: Any) -> dict[str, Any]:
        """POST /receive and return the body (asserting 200)."""
        r = self.post("/receive", json={"amount": amount, **fields})
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def status(self, address: str, **params: Any) -> dict[str, Any]:
        """GET /receive/:address and return the body (asserting 200)."""
        r = self.get(f"/receive/{address}", params=params)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def wait_status(
        self, address: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = SYNC_WAIT
    ) -> dict[str, Any]:
        """Poll GET /receive/:address until ``predicate`` holds; return that status."""
        return self.wait_for(
            f"GET /receive/{address} to satisfy {getattr(predicate, '__qualname__', predicate)}",
            lambda: self.status(address),
            predicate,
            timeout,
        )

    def wait_for(
        self, what: str, fetch: Callable[[], T], predicate: Callable[[T], bool], timeout: float
    ) -> T:
        """Repeat ``fetch()`` until ``predicate`` holds for its result; return that result.

        Raises :class:`~testsupport.processes.WaitFailed` saying ``what`` was awaited, for
        how long, the last result and the tail of the gateway's log, after ``timeout``
        seconds or as soon as the gateway process exits.
        """

        def probe() -> tuple[bool, T]:
            value = fetch()
            return predicate(value), value

        return wait_until(what, probe, timeout=timeout, log=self.log_path, proc=self.proc)


class Gateway(GatewayProcess):
    """The gateway of an integration test: on a wallet-rpc of ``devnet``, woken by its
    monerod's ZeroMQ announcements (unless ``push`` is false) and polling every 2 s."""

    def __init__(
        self,
        *,
        devnet: Devnet,
        wallet: WalletRpc,
        backend: str,
        db_arg: Sequence[str],
        workdir: Path,
        extra_args: Sequence[str] = (),
        push: bool = True,
    ) -> None:
        """Prepare (not start) the gateway.

        ``db_arg`` is ``["--postgresql", URL]`` or ``["--sqlite", PATH]``; ``push`` adds
        ``--daemon-zmq`` (the devnet's publisher).
        """
        super().__init__(
            workdir,
            wallet.url,
            db_arg[1],
            # Test receivers listen on loopback, which the gateway refuses unless allowed;
            # a module's own --callback-allow (in extra_args, parsed later) replaces this.
            # No fiat prices unless a module asks (--rate-currencies in extra_args): no
            # test gateway tries to reach the real rate providers. A pool of 64, not 250:
            # a gateway is ready once its pool is filled, and the 186 subaddresses more
            # cost 2-4 s per start (over a hundred starts a run); the pool's own tests
            # set their sizes.
            [
                "--poll-frequency",
                TEST_POLL_FREQUENCY,
                *(["--daemon-zmq", devnet.zmq_pub_url] if push and devnet.zmq_pub_url else []),
                *LOOPBACK_CALLBACKS,
                "--rate-currencies",
                "",
                "--address-pool-size",
                "64",
                "--address-pool-low-water",
                "32",
                *extra_args,
            ],
        )
        if self.db_arg != list(db_arg) or self.backend != backend:
            raise ValueError(f"backend {backend!r} does not match database options {db_arg!r}")
        self.devnet = devnet
        self.wallet = wallet


def start_gateway(
    devnet: Devnet,
    backend: str,
    workdir: Path,
    extra_args: Sequence[str] = (),
    *,
    push: bool = True,
) -> Gateway:
    """A wallet-rpc with no wallet (an idle one of ``devnet``'s, else a new one), a fresh
    migrated database of ``backend``, and the gateway on them: the gateway creates a new
    wallet. ``push``: see :class:`Gateway`."""
    workdir.mkdir(parents=True, exist_ok=True)
    wallet = take_wallet_rpc(devnet, f"gw-{workdir.name}-{uuid.uuid4().hex[:6]}")
    # Migrated already (testsupport/gateway_databases.py): no migration child per start.
    if backend == "postgresql":
        db_arg = ["--postgresql", migrated_postgresql()]
    else:
        migrated_sqlite(workdir / "xmrgate.sqlite3")
        db_arg = ["--sqlite", str(workdir / "xmrgate.sqlite3")]
    gateway = Gateway(
        devnet=devnet,
        wallet=wallet,
        backend=backend,
        db_arg=db_arg,
        workdir=workdir,
        extra_args=extra_args,
        push=push,
    )
    gateway.start()
    return gateway


def close_gateway(gateway: Gateway) -> None:
    """Stop the gateway, close and remove its wallet (the wallet-rpc is kept for the next
    gateway: ``testsupport/wallet_pool.py``); drop its PostgreSQL database."""
    gateway.close()
    give_back(gateway.devnet, gateway.wallet)
    if gateway.backend == "postgresql":
        drop_pg_database(gateway.database)


def query_rows(gateway: GatewayProcess, query: str) -> list[tuple[Any, ...]]:
    """Run one statement of the test's own on the gateway's database, read directly: the
    rows of a SELECT, else [] (committed)."""
    if gateway.backend == "postgresql":

        async def run() -> list[tuple[Any, ...]]:
            conn = await asyncpg.connect(gateway.database)
            try:
                return [tuple(row) for row in await conn.fetch(query)]
            finally:
                await conn.close()

        return asyncio.run(run())
    with contextlib.closing(sqlite3.connect(gateway.database)) as conn:
        rows = [tuple(row) for row in conn.execute(query)]
        conn.commit()
        return rows


def count_rows(gateway: GatewayProcess, table: str) -> int:
    """Rows in one of the gateway's tables, read directly from its database."""
    # Table names come from the tests only.
    return int(query_rows(gateway, f"SELECT count(*) FROM {table}")[0][0])
