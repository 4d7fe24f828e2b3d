"""``xmrgate dev``: a new user starts it, runs the printed commands, and sees the payment."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from xmrgate.devnet import free_port

pytestmark = pytest.mark.integration


def xmrgate(args: list[str]) -> list[str]:
    """The printed ``xmrgate ...`` command, run with this interpreter."""
    assert args[0] == "xmrgate"
    return [sys.executable, "-m", "xmrgate", *args[1:]]


def test_playground_pay_with_printed_commands(tmp_path: Path) -> None:
    """The banner's pay and mine commands turn the sample request complete; Ctrl-C stops all."""
    workdir = tmp_path / "play"
    port = free_port()
    log_path = tmp_path / "dev.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            xmrgate(["xmrgate", "dev", "--dir", str(workdir), "--bind", f"127.0.0.1:{port}"]),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while "mine 10" not in log_path.read_text():
            assert proc.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.5)
        banner = log_path.read_text()
        pay = next(ln.strip() for ln in banner.splitlines() if " pay " in ln)
        mine = next(ln.strip() for ln in banner.splitlines() if ln.strip().endswith("mine 10"))
        checkout = re.search(r"checkout page: (\S+)", banner)
        assert checkout, banner
        address = shlex.split(pay)[-2]
        state = json.loads((workdir / "state.json").read_text())

        subprocess.run(xmrgate(shlex.split(pay)), check=True, timeout=120)
        with httpx.Client(timeout=10) as client:
            assert client.get(checkout.group(1)).status_code == 200
            subprocess.run(xmrgate(shlex.split(mine)), check=True, timeout=120)
            deadline = time.monotonic() + 30
            while True:
                body = client.get(f"http://127.0.0.1:{port}/receive/{address}").json()
                if body["complete"]:
                    break
                assert time.monotonic() < deadline, body
                time.sleep(0.3)
        assert body["amount"] == {
            "expected": 1_500_000_000_000,
            "covered": {"total": 1_500_000_000_000, "unlocked": 1_500_000_000_000},
        }
    finally:
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    pids = [state["pids"]["monerod"], state["pids"]["funder"], *state["pids"]["wallets"].values()]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not (workdir / "state.json").exists()
