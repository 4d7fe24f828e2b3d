"""The regtest network: :class:`Devnet` starts, tracks and stops its processes.

A :class:`Devnet` runs one ``monerod --regtest`` plus a *funder*
``monero-wallet-rpc`` whose wallet receives every mined block, so it can pay
other wallets (see :class:`~xmrgate.devnet.chain.Chain`).  Extra wallet-rpc
processes (with no wallet opened) are started with :meth:`Devnet.start_wallet_rpc`.
Everything binds 127.0.0.1 on free ports; every process is ended by PID in
:meth:`Devnet.stop`.

Another process can drive a running network through a small JSON state file
(:meth:`Devnet.write_state` / :meth:`Devnet.attach`).

Regtest gotchas handled here (monero 0.18.0.0 as packaged by Debian):

* ``monerod --regtest`` binds its ZMQ RPC on 18082 unless told otherwise; all ports here
  are free ones, its ZMQ publisher (``--zmq-pub``) included (:attr:`Devnet.zmq_pub_url`).
* Both programs default to ``--rpc-ssl autodetect`` and then generate an RSA
  certificate at start (~1.5 s of CPU); ``--rpc-ssl disabled`` avoids that. The wallet
  makes one on every ``create_wallet`` and ``open_wallet`` all the same (its Bitmessage
  client), with a quick key here (:mod:`~xmrgate.devnet.quick_certificate`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import subprocess
import threading
from pathlib import Path
from types import TracebackType

import httpx

from xmrgate.devnet.chain import Chain
from xmrgate.devnet.errors import DevnetError
from xmrgate.devnet.processes import (
    STARTUP_TIMEOUT,
    free_port,
    log_tail,
    spawn,
    terminate,
    wait_answering,
)
from xmrgate.devnet.quick_certificate import wallet_environment
from xmrgate.devnet.rpc import WalletRpc

MONEROD = "monerod"
WALLET_RPC = "monero-wallet-rpc"

_LIVE: set[Devnet] = set()


@atexit.register
def _stop_leftovers() -> None:
    """Last resort: end processes of devnets nobody stopped."""
    for devnet in list(_LIVE):
        with contextlib.suppress(Exception):
            devnet.stop()


class Devnet(Chain):
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
        #: monerod's ZeroMQ publisher of new blocks and pool transactions.
        self.zmq_pub_url: str = ""
        self.daemon_pid: int | None = None
        self.funder_address: str = ""
        self._funder: WalletRpc | None = None
        self._daemon_proc: subprocess.Popen[bytes] | None = None
        self._owns_daemon = True
        self._wallets: list[WalletRpc] = []
        self._client = httpx.Client(trust_env=False)
        self._lock = threading.RLock()

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
        ports: list[int] = []
        while len(ports) < 4:  # RPC, P2P, ZMQ RPC, ZMQ publisher: four different ones
            port = free_port()
            if port not in ports:
                ports.append(port)
        self.daemon_rpc_port, self.daemon_p2p_port, self._zmq_rpc_port, zmq_pub = ports
        self.daemon_url = f"http://127.0.0.1:{self.daemon_rpc_port}"
        self.zmq_pub_url = f"tcp://127.0.0.1:{zmq_pub}"

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
                "--zmq-rpc-bind-ip",
                "127.0.0.1",
                "--zmq-rpc-bind-port",
                str(self._zmq_rpc_port),
                "--zmq-pub",
                self.zmq_pub_url,
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
            proc = spawn(cmd, stdout_log)
            self._daemon_proc = proc
            self.daemon_pid = proc.pid
            try:
                self._wait_daemon(proc, stdout_log)
                return
            except DevnetError as exc:
                last = exc
                terminate(proc.pid, proc, 20.0)
                self._daemon_proc = None
                self.daemon_pid = None
        assert last is not None
        raise last

    def _wait_daemon(self, proc: subprocess.Popen[bytes], stdout_log: Path) -> None:
        wait_answering(
            "monerod",
            proc,
            lambda: self._daemon_rpc("get_info", timeout=2),
            STARTUP_TIMEOUT,
            lambda: log_tail(stdout_log, self.daemon_log),
        )

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
        env = wallet_environment()
        proc = spawn(cmd, stdout_path, env)
        wallet = WalletRpc(
            port=port,
            pid=proc.pid,
            wallet_dir=wallet_dir,
            url=f"http://127.0.0.1:{port}/json_rpc",
            cmd=cmd,
            log_path=log_path,
            stdout_path=stdout_path,
            env=env,
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
            terminate(self.daemon_pid, self._daemon_proc, 30.0)
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

    # ----------------------------------------------------------------- state file

    def write_state(self, path: Path) -> None:
        """Write a JSON state file that :meth:`attach` (in another process) can read."""
        funder = self.funder
        state = {
            "workdir": str(self.workdir),
            "daemon_url": self.daemon_url,
            "daemon_rpc_port": self.daemon_rpc_port,
            "zmq_pub_url": self.zmq_pub_url,
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
        net.zmq_pub_url = str(state.get("zmq_pub_url", ""))
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
