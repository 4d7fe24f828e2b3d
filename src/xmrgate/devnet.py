"""A throwaway Monero regtest network made of real processes.

Used by the integration-test fixtures and by the ``xmrgate dev`` command.

A :class:`Devnet` runs one ``monerod --regtest`` plus a *funder*
``monero-wallet-rpc`` whose wallet receives every mined block, so it can pay
other wallets.  Extra wallet-rpc processes (with no wallet opened) are started
with :meth:`Devnet.start_wallet_rpc`.  Everything binds 127.0.0.1 on free
ports; every process is ended by PID in :meth:`Devnet.stop`.

Another process can drive a running network through a small JSON state file
(:meth:`Devnet.write_state` / :meth:`Devnet.attach`).

Regtest gotchas handled here (monero 0.18.0.0 as packaged by Debian):

* ``monerod --regtest`` without ``--no-zmq`` binds 18082; all ports here are free ones.
* Both programs default to ``--rpc-ssl autodetect`` and then generate an RSA
  certificate at start (~1.5 s of CPU); ``--rpc-ssl disabled`` avoids that. The
  wallet still spends ~1.5 s generating one on every ``create_wallet`` and
  ``open_wallet`` (its bitmessage client), which cannot be switched off.
* wallet-rpc 0.18.0 loops forever (100% CPU, ignores SIGTERM) in ``transfer``
  when the chain has exactly 76 unlocked RingCT outputs; see
  :meth:`Devnet.ensure_decoy_safe`.
* A transaction just accepted by an offline monerod is briefly held for
  Dandelion++ and left out of block templates; :meth:`Devnet.mine` waits for it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

__all__ = [
    "Devnet",
    "DevnetError",
    "WalletRpc",
    "create_pg_database",
    "drop_pg_database",
    "file_tail",
    "free_port",
    "wait_gateway_ready",
]

MONEROD = "monerod"
WALLET_RPC = "monero-wallet-rpc"

#: Wallet-rpc errors that mean "the funder has no spendable outputs right now".
_NOT_ENOUGH_CODES = frozenset({-17, -19})
_NOT_ENOUGH_TEXTS = ("not enough money", "not enough unlocked", "not enough outputs")

#: CRYPTONOTE_DEFAULT_TX_SPENDABLE_AGE: outputs younger than this many blocks are locked.
_SPENDABLE_AGE = 10
#: Outputs wallet2 0.18 asks the daemon for per RingCT input: (16 * 1.5 + 1) + (60 - 10).
_DECOY_REQUEST = 75
#: Unlocked RingCT outputs from which wallets choose decoys without trouble.
SAFE_RCT_OUTPUTS = 100

_STARTUP_TIMEOUT = 60.0
_POLL_INTERVAL = 0.15
_LOG_TAIL_LINES = 40


class DevnetError(Exception):
    """Raised for any devnet failure: process start, RPC error object, bad state.

    ``code`` is the JSON-RPC error code when the failure came from an error
    object (``None`` for transport errors and process failures).
    """

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --------------------------------------------------------------------------- helpers


def _log_tail(*paths: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """Return the last ``lines`` lines of each existing file, labelled."""
    parts: list[str] = []
    for path in paths:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        tail = "\n".join(text.splitlines()[-lines:])
        parts.append(f"--- {path} (tail) ---\n{tail}")
    return "\n".join(parts)


def file_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ("" when it does not exist yet)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def wait_gateway_ready(
    url: str, proc: subprocess.Popen[bytes] | None, log_path: Path, timeout: float
) -> None:
    """Wait until the gateway at ``url`` answers /health 200 with its wallet's address header.

    Raises RuntimeError with the tail of ``log_path`` if the process exits or time runs out.
    """
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=5, trust_env=False) as client:
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"gateway exited:\n{file_tail(log_path)}")
            try:
                r = client.get(url + "/health")
                if r.status_code == 200 and r.headers.get("x-moneropay-address"):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    raise RuntimeError(f"gateway not ready in {timeout}s:\n{file_tail(log_path)}")


def create_pg_database(admin_url: str, prefix: str) -> str:
    """Create a fresh PostgreSQL database named ``<prefix><random>``; return its URL."""
    import asyncio

    import asyncpg

    name = f"{prefix}{os.urandom(5).hex()}"

    async def run() -> None:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(run())
    return admin_url.rsplit("/", 1)[0] + f"/{name}"


def drop_pg_database(admin_url: str, url: str, prefix: str) -> None:
    """Drop a database made by :func:`create_pg_database` (closing its sessions).

    Refuses any database whose name does not start with ``prefix``.
    """
    import asyncio

    import asyncpg

    name = url.rsplit("/", 1)[1]
    if not name.startswith(prefix):
        raise ValueError(f"refusing to drop {name!r}: not made with prefix {prefix!r}")

    async def run() -> None:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    asyncio.run(run())


def _pid_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # state is the field after the parenthesised command name
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in ("Z", "X")


def _terminate(pid: int, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGTERM ``pid``, wait up to ``timeout`` s, then SIGKILL. Ignores gone processes."""
    if proc is not None and proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if _wait_gone(pid, proc, timeout):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _wait_gone(pid, proc, 10.0)


def _wait_gone(pid: int, proc: subprocess.Popen[bytes] | None, timeout: float) -> bool:
    """Wait for ``pid`` to exit (reaping it if it is our child)."""
    if proc is not None:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return True
        time.sleep(0.05)
    return not _pid_alive(pid)


def _rpc_error(method: str, body: Any) -> DevnetError | None:
    """Turn a JSON-RPC error object into a DevnetError (None when there is none)."""
    if isinstance(body, dict) and body.get("error"):
        err = body["error"]
        code = err.get("code") if isinstance(err, dict) else None
        msg = err.get("message", str(err)) if isinstance(err, dict) else str(err)
        return DevnetError(f"{method}: {msg} (code {code})", code=code)
    return None


def _json_rpc(
    client: httpx.Client,
    url: str,
    method: str,
    params: dict[str, Any] | None,
    timeout: float,
) -> dict[str, Any]:
    """POST one JSON-RPC 2.0 request; return ``result`` or raise DevnetError."""
    payload = {"jsonrpc": "2.0", "id": "0", "method": method, "params": params or {}}
    try:
        resp = client.post(url, json=payload, timeout=timeout)
        resp.raise_for_status()
        body = resp.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise DevnetError(f"{method} at {url}: {type(exc).__name__}: {exc}") from exc
    err = _rpc_error(method, body)
    if err is not None:
        raise err
    result = body.get("result", {}) if isinstance(body, dict) else {}
    return result if isinstance(result, dict) else {}


def _spawn(cmd: list[str], stdout_log: Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own session with stdout+stderr appended to ``stdout_log``."""
    exe = shutil.which(cmd[0])
    if exe is None:
        raise DevnetError(f"{cmd[0]} not found on PATH (Debian: apt-get install monero)")
    stdout_log.parent.mkdir(parents=True, exist_ok=True)
    with stdout_log.open("ab") as out:
        return subprocess.Popen(
            [exe, *cmd[1:]],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )


# --------------------------------------------------------------------------- WalletRpc


@dataclass
class WalletRpc:
    """One running ``monero-wallet-rpc`` process (possibly with no wallet open)."""

    port: int
    pid: int
    wallet_dir: Path
    url: str
    cmd: list[str] = field(default_factory=list, repr=False)
    log_path: Path | None = field(default=None, repr=False)
    stdout_path: Path | None = field(default=None, repr=False)
    owned: bool = field(default=True, repr=False)
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    _client: httpx.Client = field(
        default_factory=lambda: httpx.Client(trust_env=False), repr=False, compare=False
    )

    def call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        """Make one JSON-RPC call and return its ``result``.

        Raises :class:`DevnetError` on an error object (``.code`` set) or on a
        transport failure (``.code`` is ``None``).
        """
        return _json_rpc(self._client, self.url, method, params, timeout)

    def alive(self) -> bool:
        """True while the process runs."""
        if self._proc is not None:
            return self._proc.poll() is None
        return _pid_alive(self.pid)

    def stop(self) -> None:
        """SIGTERM the process, wait up to 10 s, then SIGKILL. Idempotent."""
        _terminate(self.pid, self._proc, 10.0)
        self._reset_client()

    def kill(self) -> None:
        """SIGKILL the process at once (for fault tests)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        _wait_gone(self.pid, self._proc, 10.0)
        self._reset_client()

    def restart(self) -> None:
        """Start the process again on the same port and wallet dir; wait until it answers.

        Stops it first if it is still running. No wallet is open afterwards.
        """
        if not self.cmd or self.stdout_path is None:
            raise DevnetError("this WalletRpc was attached, not started here: cannot restart")
        if self.alive():
            self.stop()
        self._reset_client()
        last: DevnetError | None = None
        # The port may linger for a moment after a kill; retry a few times.
        for _ in range(5):
            self._proc = _spawn(self.cmd, self.stdout_path)
            self.pid = self._proc.pid
            self.owned = True
            try:
                self.wait_ready()
                return
            except DevnetError as exc:
                last = exc
                self.stop()
                time.sleep(0.5)
        assert last is not None
        raise last

    def wait_ready(self, timeout: float = _STARTUP_TIMEOUT) -> None:
        """Poll ``get_version`` until it answers; raise DevnetError (with log tail) if not."""
        deadline = time.monotonic() + timeout
        while True:
            if self._proc is not None and self._proc.poll() is not None:
                raise DevnetError(
                    f"monero-wallet-rpc on port {self.port} exited with "
                    f"{self._proc.returncode}\n{self._tail()}"
                )
            try:
                self.call("get_version", timeout=2)
                return
            except DevnetError:
                pass
            if time.monotonic() > deadline:
                raise DevnetError(
                    f"monero-wallet-rpc on port {self.port} did not answer in {timeout} s\n"
                    f"{self._tail()}"
                )
            time.sleep(_POLL_INTERVAL)

    def _tail(self) -> str:
        paths = [p for p in (self.stdout_path, self.log_path) if p is not None]
        return _log_tail(*paths)

    def _reset_client(self) -> None:
        """Drop pooled keep-alive connections (they die with the process)."""
        self._client.close()
        self._client = httpx.Client(trust_env=False)


# --------------------------------------------------------------------------- Devnet

_LIVE: set[Devnet] = set()


@atexit.register
def _stop_leftovers() -> None:
    """Last resort: end processes of devnets nobody stopped."""
    for devnet in list(_LIVE):
        with contextlib.suppress(Exception):
            devnet.stop()


class Devnet:
    """A regtest monerod + a funder wallet-rpc with a funded wallet.

    Use as a context manager (``with Devnet(tmp) as net:``) or call
    :meth:`start` / :meth:`stop`. All files (chain, wallets, logs) live under
    ``workdir``.
    """

    FUNDER_WALLET = "funder"

    def __init__(self, workdir: Path) -> None:
        """Prepare a devnet rooted at ``workdir`` (nothing starts until :meth:`start`)."""
        self.workdir = Path(workdir).resolve()
        self.daemon_rpc_port: int = 0
        self.daemon_p2p_port: int = 0
        self.daemon_url: str = ""
        self.daemon_pid: int | None = None
        self.funder_address: str = ""
        self._funder: WalletRpc | None = None
        self._daemon_proc: subprocess.Popen[bytes] | None = None
        self._owns_daemon = True
        self._wallets: list[WalletRpc] = []
        self._client = httpx.Client(trust_env=False)
        self._lock = threading.RLock()

    # ----------------------------------------------------------------- properties

    @property
    def funder(self) -> WalletRpc:
        """The funder wallet-rpc (wallet ``funder`` open). Raises before start."""
        if self._funder is None:
            raise DevnetError("devnet not started")
        return self._funder

    @property
    def wallets(self) -> list[WalletRpc]:
        """Every wallet-rpc started by this devnet (the funder first)."""
        return list(self._wallets)

    @property
    def daemon_log(self) -> Path:
        """monerod's own log file."""
        return self.workdir / "monerod.log"

    # ----------------------------------------------------------------- lifecycle

    def start(self, initial_blocks: int = 80) -> None:
        """Start monerod and the funder wallet, and mine ``initial_blocks`` to it.

        When ``initial_blocks > 0`` a few more blocks are mined until the chain
        has :data:`SAFE_RCT_OUTPUTS` unlocked outputs (see
        :meth:`ensure_decoy_safe`); with the default the height ends near 111.
        The chain always starts empty (monerod wipes a regtest database unless
        told otherwise); a funder wallet left in ``workdir`` is replaced.

        On any failure every process already started is ended and
        :class:`DevnetError` (with log tails) is raised.
        """
        if self.daemon_pid is not None:
            raise DevnetError("devnet already started")
        self.workdir.mkdir(parents=True, exist_ok=True)
        for stale in ("", ".keys", ".address.txt"):
            (self.workdir / self.FUNDER_WALLET / f"{self.FUNDER_WALLET}{stale}").unlink(
                missing_ok=True
            )
        _LIVE.add(self)
        ok = False
        try:
            # The wallet-rpc does not need the daemon to start up: launch both,
            # then wait for both (saves a couple of seconds).
            self._choose_daemon_ports()
            funder = self._spawn_wallet_rpc(self.FUNDER_WALLET)
            self._start_daemon()
            if f"127.0.0.1:{self.daemon_rpc_port}" not in funder.cmd:
                # monerod needed other ports: relaunch the funder pointing at them
                funder.stop()
                with self._lock:
                    self._wallets = [w for w in self._wallets if w is not funder]
                funder = self._spawn_wallet_rpc(self.FUNDER_WALLET)
            funder = self._await_wallet_rpc(funder, self.FUNDER_WALLET)
            self._funder = funder
            funder.call("create_wallet", {"filename": self.FUNDER_WALLET, "language": "English"})
            self.funder_address = funder.call("get_address", {"account_index": 0})["address"]
            if initial_blocks > 0:
                self.mine(initial_blocks)
                self.ensure_decoy_safe(force=True)
            funder.call("refresh", timeout=120)
            ok = True
        finally:
            if not ok:
                self.stop()

    def _choose_daemon_ports(self) -> None:
        self.daemon_rpc_port = free_port()
        self.daemon_url = f"http://127.0.0.1:{self.daemon_rpc_port}"
        self.daemon_p2p_port = free_port()
        while self.daemon_p2p_port == self.daemon_rpc_port:
            self.daemon_p2p_port = free_port()

    def _start_daemon(self) -> None:
        stdout_log = self.workdir / "monerod.stdout.log"
        last: DevnetError | None = None
        for attempt in range(3):
            if attempt:  # maybe a port race with another process: new ports
                self._choose_daemon_ports()
            cmd = [
                MONEROD,
                "--regtest",
                "--offline",
                "--fixed-difficulty",
                "1",
                "--no-zmq",
                "--non-interactive",
                "--data-dir",
                str(self.workdir / "monerod"),
                "--p2p-bind-ip",
                "127.0.0.1",
                "--p2p-bind-port",
                str(self.daemon_p2p_port),
                "--rpc-bind-ip",
                "127.0.0.1",
                "--rpc-bind-port",
                str(self.daemon_rpc_port),
                "--log-file",
                str(self.daemon_log),
                "--log-level",
                "0",
                "--no-igd",
                "--disable-rpc-ban",
                "--rpc-ssl",
                "disabled",
                "--rpc-max-connections-per-private-ip",
                "1000",
                "--rpc-max-connections",
                "1000",
                "--db-sync-mode",
                "fastest:async:1000000000bytes",
            ]
            proc = _spawn(cmd, stdout_log)
            self._daemon_proc = proc
            self.daemon_pid = proc.pid
            try:
                self._wait_daemon(proc, stdout_log)
                return
            except DevnetError as exc:
                last = exc
                _terminate(proc.pid, proc, 20.0)
                self._daemon_proc = None
                self.daemon_pid = None
        assert last is not None
        raise last

    def _wait_daemon(self, proc: subprocess.Popen[bytes], stdout_log: Path) -> None:
        deadline = time.monotonic() + _STARTUP_TIMEOUT
        while True:
            if proc.poll() is not None:
                raise DevnetError(
                    f"monerod exited with {proc.returncode}\n"
                    f"{_log_tail(stdout_log, self.daemon_log)}"
                )
            try:
                self._daemon_rpc("get_info", timeout=2)
                return
            except DevnetError:
                pass
            if time.monotonic() > deadline:
                raise DevnetError(
                    f"monerod did not answer in {_STARTUP_TIMEOUT} s\n"
                    f"{_log_tail(stdout_log, self.daemon_log)}"
                )
            time.sleep(_POLL_INTERVAL)

    def start_wallet_rpc(self, name: str) -> WalletRpc:
        """Start a new ``monero-wallet-rpc`` on a free port with ``--wallet-dir workdir/<name>``.

        No wallet is opened. Returns once ``get_version`` answers. The process
        is tracked, so :meth:`stop` ends it.
        """
        return self._await_wallet_rpc(self._spawn_wallet_rpc(name), name)

    def _spawn_wallet_rpc(self, name: str) -> WalletRpc:
        """Launch a wallet-rpc without waiting for it; it is tracked at once."""
        if not self.daemon_url:
            raise DevnetError("devnet not started")
        wallet_dir = self.workdir / name
        wallet_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.workdir / f"{name}.log"
        stdout_path = self.workdir / f"{name}.stdout.log"
        port = free_port()
        cmd = [
            WALLET_RPC,
            "--daemon-address",
            f"127.0.0.1:{self.daemon_rpc_port}",
            "--trusted-daemon",
            "--daemon-ssl",
            "disabled",
            "--rpc-bind-ip",
            "127.0.0.1",
            "--rpc-bind-port",
            str(port),
            "--disable-rpc-login",
            "--rpc-ssl",
            "disabled",
            "--wallet-dir",
            str(wallet_dir),
            "--shared-ringdb-dir",
            str(wallet_dir / ".shared-ringdb"),
            "--log-file",
            str(log_path),
            "--log-level",
            os.environ.get("XMRGATE_DEVNET_WALLET_LOG_LEVEL", "0"),
            "--non-interactive",
            "--no-dns",
        ]
        proc = _spawn(cmd, stdout_path)
        wallet = WalletRpc(
            port=port,
            pid=proc.pid,
            wallet_dir=wallet_dir,
            url=f"http://127.0.0.1:{port}/json_rpc",
            cmd=cmd,
            log_path=log_path,
            stdout_path=stdout_path,
            _proc=proc,
        )
        with self._lock:
            self._wallets.append(wallet)
        return wallet

    def _await_wallet_rpc(self, wallet: WalletRpc, name: str) -> WalletRpc:
        """Wait for a spawned wallet-rpc; on failure relaunch it (port races) twice."""
        for attempt in range(3):
            try:
                wallet.wait_ready()
                return wallet
            except DevnetError:
                wallet.stop()
                with self._lock:
                    self._wallets = [w for w in self._wallets if w is not wallet]
                if attempt == 2:
                    raise
                wallet = self._spawn_wallet_rpc(name)
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """End every process this devnet started (wallet-rpcs, then monerod). Idempotent.

        A devnet obtained with :meth:`attach` (without ``owned=True``) leaves
        the processes running.
        """
        with self._lock:
            wallets = list(self._wallets)
        for wallet in reversed(wallets):
            if wallet.owned:
                with contextlib.suppress(Exception):
                    wallet.stop()
        if self.daemon_pid is not None and self._owns_daemon:
            _terminate(self.daemon_pid, self._daemon_proc, 30.0)
        _LIVE.discard(self)

    def pids(self) -> list[int]:
        """PIDs of monerod and every tracked wallet-rpc (as last started)."""
        with self._lock:
            out = [w.pid for w in self._wallets]
        if self.daemon_pid is not None:
            out.insert(0, self.daemon_pid)
        return out

    def __enter__(self) -> Devnet:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ----------------------------------------------------------------- daemon RPC

    def _daemon_rpc(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        return _json_rpc(self._client, f"{self.daemon_url}/json_rpc", method, params, timeout)

    def _daemon_other(
        self, path: str, body: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        url = f"{self.daemon_url}/{path.lstrip('/')}"
        try:
            resp = self._client.post(url, json=body or {}, timeout=timeout)
            resp.raise_for_status()
            data = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise DevnetError(f"{path}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(data, dict):
            raise DevnetError(f"{path}: unexpected answer {data!r}")
        status = data.get("status")
        if status is not None and status != "OK":
            raise DevnetError(f"{path}: status {status!r}")
        return data

    def daemon_call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        """Make a daemon JSON-RPC call (``/json_rpc``) and return its ``result``."""
        return self._daemon_rpc(method, params, timeout)

    def height(self) -> int:
        """Daemon chain height (number of blocks, i.e. top index + 1)."""
        return int(self._daemon_rpc("get_info")["height"])

    def mine(self, blocks: int = 1, address: str | None = None) -> int:
        """Mine ``blocks`` blocks (to the funder by default); return the new daemon height.

        Waits first (briefly) until every pool transaction is minable, so a
        transaction sent just before is included in the first block.
        """
        target = address or self.funder_address
        if not target:
            raise DevnetError("no address to mine to")
        if blocks > 0:
            self.wait_pool_relayed()
            self._daemon_rpc(
                "generateblocks",
                {"amount_of_blocks": blocks, "wallet_address": target},
                timeout=max(60.0, blocks * 1.0),
            )
        return self.height()

    def wait_pool_relayed(self, timeout: float = 10.0) -> bool:
        """Wait until no pool transaction is still waiting to be relayed; True if none is.

        monerod (offline) first holds a new transaction for Dandelion++ and
        leaves it out of block templates until its P2P thread has given up
        relaying it (``relayed: false`` in ``/get_transaction_pool``), usually
        a few milliseconds after the wallet returned. Mining in that window
        leaves the transaction in the pool.
        """
        deadline = time.monotonic() + timeout
        while True:
            txs = self._daemon_other("get_transaction_pool").get("transactions") or []
            waiting = [t for t in txs if not t.get("relayed") and not t.get("do_not_relay")]
            if not waiting:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def unlocked_rct_outputs(self) -> int:
        """Number of RingCT outputs old enough to be used as decoys (what wallets count)."""
        dist = self._daemon_rpc(
            "get_output_distribution",
            {"amounts": [0], "cumulative": True, "from_height": 0, "binary": False},
        )["distributions"][0]["distribution"]
        if len(dist) < _SPENDABLE_AGE:
            return 0
        return int(dist[len(dist) - _SPENDABLE_AGE])

    def ensure_decoy_safe(self, force: bool = False) -> int:
        """Mine until wallets on this chain cannot hang in decoy selection; return the height.

        monero-wallet-rpc 0.18.0 loops forever in ``transfer`` when the chain
        has 76 unlocked RingCT outputs: it asks for 75 distinct decoy
        candidates but its gamma picker can reach one fewer (fixed upstream in
        0.18.2, monero PR #8794). Chains with at most 75 such outputs are
        fine (the wallet takes them all), and so are chains with
        :data:`SAFE_RCT_OUTPUTS` or more. This mines to the funder while the
        count is in between, or (``force``) whenever it is below
        :data:`SAFE_RCT_OUTPUTS`, so that a growing chain never crosses the
        bad spot later.
        """
        for _ in range(50):
            count = self.unlocked_rct_outputs()
            if count >= SAFE_RCT_OUTPUTS or (count <= _DECOY_REQUEST and not force):
                break
            # every block unlocks at least one more (coinbase) output
            self.mine(SAFE_RCT_OUTPUTS - count)
        return self.height()

    def pop_blocks(self, n: int) -> None:
        """Remove the top ``n`` blocks; their transactions go back to the pool."""
        self._daemon_other("pop_blocks", {"nblocks": n})

    def flush_txpool(self) -> None:
        """Drop every transaction from the daemon's pool."""
        self._daemon_rpc("flush_txpool")

    def pool_hashes(self) -> list[str]:
        """Hashes of the transactions currently in the daemon's pool."""
        data = self._daemon_other("get_transaction_pool_hashes")
        return [str(h) for h in data.get("tx_hashes") or []]

    # ----------------------------------------------------------------- payments

    def pay(self, address: str, amount: int, mine_blocks: int = 0) -> str:
        """Send ``amount`` piconero from the funder to ``address``; return the tx hash.

        Mines extra blocks to the funder (before sending) when it lacks
        unlocked outputs, then mines ``mine_blocks`` blocks after sending.
        """
        return self.pay_many([(address, amount)], mine_blocks=mine_blocks)

    def pay_many(self, destinations: list[tuple[str, int]], mine_blocks: int = 0) -> str:
        """Send one transaction paying every ``(address, amount)``; return its hash.

        See :meth:`pay` for the funding and mining behaviour.
        """
        if not destinations:
            raise DevnetError("pay_many: no destinations")
        dests = [{"address": a, "amount": int(v)} for a, v in destinations]
        with self._lock:
            funder = self.funder
            self.ensure_decoy_safe()
            funder.call("refresh", timeout=120)
            tx_hash = ""
            for attempt in range(6):
                try:
                    res = funder.call(
                        "transfer",
                        {
                            "destinations": dests,
                            "account_index": 0,
                            "priority": 0,
                            "get_tx_key": False,
                        },
                        timeout=120,
                    )
                    tx_hash = str(res["tx_hash"])
                    self.wait_pool_relayed()
                    break
                except DevnetError as exc:
                    if attempt == 5 or not _is_not_enough(exc):
                        raise
                    # Spent outputs' change locks for 10 blocks; mining unlocks it
                    # plus one coinbase output per block.
                    self.mine(10 + 10 * attempt)
                    funder.call("refresh", timeout=120)
            if mine_blocks > 0:
                self.mine(mine_blocks)
            return tx_hash

    # ----------------------------------------------------------------- state file

    def write_state(self, path: Path) -> None:
        """Write a JSON state file that :meth:`attach` (in another process) can read."""
        funder = self.funder
        state = {
            "workdir": str(self.workdir),
            "daemon_url": self.daemon_url,
            "daemon_rpc_port": self.daemon_rpc_port,
            "funder_url": funder.url,
            "funder_port": funder.port,
            "funder_wallet_dir": str(funder.wallet_dir),
            "funder_address": self.funder_address,
            "pids": {
                "monerod": self.daemon_pid,
                "funder": funder.pid,
                "wallets": {str(w.wallet_dir.name): w.pid for w in self.wallets},
            },
        }
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, path)

    @classmethod
    def attach(cls, state_path: Path, owned: bool = False) -> Devnet:
        """Return a Devnet driving an already-running network described by ``state_path``.

        Usable for :meth:`pay`, :meth:`mine`, :meth:`height` etc.; its
        :meth:`stop` ends nothing unless ``owned=True`` (then it ends monerod
        and the funder by PID).
        """
        try:
            state = json.loads(Path(state_path).read_text())
        except (OSError, ValueError) as exc:
            raise DevnetError(f"cannot read devnet state {state_path}: {exc}") from exc
        net = cls(Path(state["workdir"]))
        net.daemon_url = state["daemon_url"]
        net.daemon_rpc_port = int(state["daemon_rpc_port"])
        net.funder_address = state["funder_address"]
        pids = state.get("pids") or {}
        net.daemon_pid = pids.get("monerod")
        net._owns_daemon = owned
        funder = WalletRpc(
            port=int(state["funder_port"]),
            pid=int(pids.get("funder") or 0),
            wallet_dir=Path(state["funder_wallet_dir"]),
            url=state["funder_url"],
            owned=owned,
        )
        net._funder = funder
        net._wallets.append(funder)
        net.height()  # fails early if the daemon is gone
        try:
            funder.call("get_address", {"account_index": 0})
        except DevnetError as exc:
            if exc.code != -13:  # -13: no wallet open
                raise
            funder.call("open_wallet", {"filename": cls.FUNDER_WALLET})
        if owned:
            _LIVE.add(net)
        return net


def _is_not_enough(exc: DevnetError) -> bool:
    """True when a transfer failed because the funder lacks (unlocked) outputs."""
    text = exc.message.lower()
    return exc.code in _NOT_ENOUGH_CODES or any(t in text for t in _NOT_ENOUGH_TEXTS)
