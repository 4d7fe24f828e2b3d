"""JSON-RPC over HTTP for monerod and monero-wallet-rpc, and :class:`WalletRpc`."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from xmrgate.devnet.errors import DevnetError
from xmrgate.devnet.processes import (
    STARTUP_TIMEOUT,
    kill,
    log_tail,
    pid_alive,
    spawn,
    terminate,
    wait_answering,
)


def rpc_error(method: str, body: Any) -> DevnetError | None:
    """Turn a JSON-RPC error object into a DevnetError (None when there is none)."""
    if isinstance(body, dict) and body.get("error"):
        err = body["error"]
        code = err.get("code") if isinstance(err, dict) else None
        msg = err.get("message", str(err)) if isinstance(err, dict) else str(err)
        return DevnetError(f"{method}: {msg} (code {code})", code=code)
    return None


def json_rpc(
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
    err = rpc_error(method, body)
    if err is not None:
        raise err
    result = body.get("result", {}) if isinstance(body, dict) else {}
    return result if isinstance(result, dict) else {}


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
    #: The environment it was started with (``None``: inherited), kept for restarts.
    env: dict[str, str] | None = field(default=None, repr=False)
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
        return json_rpc(self._client, self.url, method, params, timeout)

    def alive(self) -> bool:
        """True while the process runs."""
        if self._proc is not None:
            return self._proc.poll() is None
        return pid_alive(self.pid)

    def stop(self) -> None:
        """SIGTERM the process, wait up to 10 s, then SIGKILL. Idempotent."""
        terminate(self.pid, self._proc, 10.0)
        self._reset_client()

    def kill(self) -> None:
        """SIGKILL the process at once (for fault tests)."""
        kill(self.pid, self._proc)
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
            self._proc = spawn(self.cmd, self.stdout_path, self.env)
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

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Poll ``get_version`` until it answers; raise DevnetError (with log tail) if not."""
        wait_answering(
            f"monero-wallet-rpc on port {self.port}",
            self._proc,
            lambda: self.call("get_version", timeout=2),
            timeout,
            self._tail,
        )

    def _tail(self) -> str:
        paths = [p for p in (self.stdout_path, self.log_path) if p is not None]
        return log_tail(*paths)

    def _reset_client(self) -> None:
        """Drop pooled keep-alive connections (they die with the process)."""
        self._client.close()
        self._client = httpx.Client(trust_env=False)
