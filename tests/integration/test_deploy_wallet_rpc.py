"""deploy/monero-wallet-rpc.service's command line with deploy/monero-wallet-rpc.conf.example
really runs monero-wallet-rpc: the password comes from the file, not from the command line,
and the wallet syncs from the node the file names (the regtest node here)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import httpx
import pytest

from testsupport.processes import wait_until
from xmrgate.devnet import Devnet, free_port
from xmrgate.devnet.processes import spawn, terminate

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def exec_start(unit: str) -> list[str]:
    """The ExecStart command of a unit file, continuation lines joined."""
    text = (DEPLOY / unit).read_text().replace("\\\n", " ")
    match = re.search(r"^ExecStart=(.+)$", text, re.M)
    assert match, unit
    return shlex.split(match.group(1))


def test_wallet_rpc_runs_from_the_unit_and_the_config_file(devnet: Devnet, tmp_path: Path) -> None:
    port = free_port()
    conf = (
        (DEPLOY / "monero-wallet-rpc.conf.example")
        .read_text()
        .replace("node.example.org:18089", f"127.0.0.1:{devnet.daemon_rpc_port}")
        .replace("daemon-ssl=enabled", "daemon-ssl=disabled")  # the regtest node has no TLS
        .replace("rpc-bind-port=18082", f"rpc-bind-port={port}")
    )
    login = re.search(r"^rpc-login=(\S+):(\S+)$", conf, re.M)
    assert login, "the example sets rpc-login"
    user, password = login.groups()
    (tmp_path / "wallet-rpc.conf").write_text(conf)
    command = [
        arg.replace("/etc/xmrgate/monero-wallet-rpc.conf", str(tmp_path / "wallet-rpc.conf"))
        .replace("/var/lib/monero-wallet-rpc", str(tmp_path / "wallets"))
        .replace("/var/log/monero-wallet-rpc", str(tmp_path))
        for arg in exec_start("monero-wallet-rpc.service")
    ]
    assert password not in " ".join(command), "no secret on the command line"
    (tmp_path / "wallets").mkdir()
    proc = spawn([Path(command[0]).name, *command[1:]], tmp_path / "stdout.log")
    url = f"http://127.0.0.1:{port}/json_rpc"
    auth = httpx.DigestAuth(user, password)
    try:
        with httpx.Client(timeout=30, trust_env=False) as client:

            def call(method: str, params: dict[str, object] | None = None) -> httpx.Response:
                body = {"jsonrpc": "2.0", "id": "0", "method": method, "params": params or {}}
                return client.post(url, json=body, auth=auth)

            def answering() -> tuple[bool, str]:
                try:
                    return call("get_version").status_code == 200, "answering"
                except httpx.HTTPError as exc:
                    return False, repr(exc)

            wait_until(
                "wallet-rpc to answer with the config file's login",
                answering,
                timeout=60,
                log=tmp_path / "stdout.log",
                proc=proc,
            )
            anonymous = client.post(
                url, json={"jsonrpc": "2.0", "id": "0", "method": "get_version"}
            )
            assert anonymous.status_code == 401, "the login from the file is required"
            created = call("create_wallet", {"filename": "wallet", "language": "English"})
            assert "error" not in created.json(), created.text
            assert (tmp_path / "wallets" / "wallet.keys").exists(), "wallets go to --wallet-dir"
            call("refresh")
            height = call("get_height").json()["result"]["height"]
            assert height == devnet.height(), "synced from the node named in the file"
    finally:
        terminate(proc.pid, proc, 30.0)
