"""Ctrl-C stops ``xmrgate dev`` quietly at any moment: while the network starts, and a
second Ctrl-C while it is being stopped. No traceback, and no process of it is left."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.integration.test_dev_playground import REPO, xmrgate
from testsupport.processes import wait_until
from xmrgate.devnet import free_port

pytestmark = pytest.mark.integration


def processes_under(folder: Path) -> list[str]:
    """Processes whose command line names ``folder`` (monerod, wallet-rpcs of that devnet)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(folder) in command:
            found.append(f"{entry.name}: {command[:120]}")
    return found


def start(
    tmp_path: Path, log_name: str = "dev.log", env: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], Path]:
    """``xmrgate dev --dir tmp_path/play`` on a free port, its output in ``tmp_path/log_name``
    (``env``: variables to add to the environment)."""
    log_path = tmp_path / log_name
    command = ["xmrgate", "dev", "--dir", str(tmp_path / "play")]
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            xmrgate([*command, "--bind", f"127.0.0.1:{free_port()}"]),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env={**os.environ, **(env or {})},
        )
    return proc, log_path


def wait_for_output(
    proc: subprocess.Popen[bytes], log_path: Path, text: str, what: str, timeout: float
) -> None:
    """Wait until ``xmrgate dev``'s output holds ``text`` (``what`` names it if it never does)."""
    wait_until(
        f"`xmrgate dev` to {what}",
        lambda: (text in log_path.read_text(), ""),
        timeout=timeout,
        log=log_path,
        proc=proc,
    )


def ended_quietly(proc: subprocess.Popen[bytes], log_path: Path, tmp_path: Path) -> None:
    """It exits on its own, prints no traceback and leaves no process behind."""
    try:
        returncode = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = log_path.read_text()
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output[-3000:]
    assert returncode == 0, output[-1000:]
    assert output.rstrip().endswith("stopped."), output[-1000:]
    assert processes_under(tmp_path / "play") == []
    assert not (tmp_path / "play" / "state.json").exists()


@pytest.mark.parametrize("after", [1.0, 5.0])
def test_ctrl_c_while_the_network_starts(tmp_path: Path, after: float) -> None:
    """Interrupted while monerod and the wallets start (before the gateway serves)."""
    proc, log_path = start(tmp_path)
    wait_for_output(proc, log_path, "starting a regtest network", "start its network", timeout=30)
    time.sleep(after)
    assert "mine 10" not in log_path.read_text(), "too late: the banner is out"
    assert processes_under(tmp_path / "play"), "monerod or a wallet-rpc is running already"
    proc.send_signal(signal.SIGINT)
    ended_quietly(proc, log_path, tmp_path)


def test_second_ctrl_c_while_stopping(tmp_path: Path) -> None:
    """Ctrl-C, and Ctrl-C again while the network is being stopped: the clean-up finishes."""
    proc, log_path = start(tmp_path)
    wait_for_output(proc, log_path, "mine 10", "print its banner", timeout=120)
    assert processes_under(tmp_path / "play")
    proc.send_signal(signal.SIGINT)
    wait_for_output(
        proc, log_path, "stopping the regtest network", "start stopping its network", timeout=30
    )
    os.kill(proc.pid, signal.SIGINT)  # impatient: again, while the processes are stopped
    ended_quietly(proc, log_path, tmp_path)
