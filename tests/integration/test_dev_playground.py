"""``xmrgate dev``: a new user starts it, runs the printed commands, and sees the payment."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from testsupport.gateway import SYNC_WAIT
from testsupport.processes import wait_until
from xmrgate.devnet import free_port

pytestmark = pytest.mark.integration


REPO = Path(__file__).resolve().parents[2]


def console_script() -> str:
    """The virtualenv's ``xmrgate``, relative to the repository, as ``make dev`` runs it
    (``.venv/bin/xmrgate``: not on PATH, so the banner must print it like that)."""
    return os.path.relpath(Path(sys.executable).with_name("xmrgate"), REPO)


def xmrgate(args: list[str]) -> list[str]:
    """``xmrgate ARGS`` started as ``make dev`` starts it (from the repository)."""
    assert args[0] == "xmrgate"
    return [console_script(), *args[1:]]


@pytest.mark.parametrize("flags", [[], ["--view-only"]], ids=["full", "view-only"])
def test_playground_pay_with_printed_commands(tmp_path: Path, flags: list[str]) -> None:
    """The banner's pay and mine commands turn the sample request complete; Ctrl-C stops all.

    With ``--view-only`` the gateway's wallet has no spend key: payments work the same,
    /health says so and POST /transfer is refused."""
    workdir = tmp_path / "play"
    port = free_port()
    log_path = tmp_path / "dev.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            xmrgate(
                ["xmrgate", "dev", "--dir", str(workdir), "--bind", f"127.0.0.1:{port}", *flags]
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    try:
        wait_until(
            "`xmrgate dev` to print its banner (ending with the `mine 10` command)",
            lambda: ("mine 10" in (text := log_path.read_text()), text[-300:]),
            timeout=120,
            log=log_path,
            proc=proc,
            interval=0.5,
        )
        banner = log_path.read_text()
        pay = next(ln.strip() for ln in banner.splitlines() if " pay " in ln)
        mine = next(ln.strip() for ln in banner.splitlines() if ln.strip().endswith("mine 10"))
        checkout = re.search(r"checkout page: (\S+)", banner)
        assert checkout, banner
        address = shlex.split(pay)[-2]
        # Printed as it works from where `make dev` ran: run verbatim, no PATH lookup.
        assert shlex.split(pay)[0] == shlex.split(mine)[0] == console_script(), banner
        state = json.loads((workdir / "state.json").read_text())

        subprocess.run(shlex.split(pay), check=True, timeout=120, cwd=REPO)
        with httpx.Client(timeout=10) as client:
            assert client.get(checkout.group(1)).status_code == 200
            if flags:
                assert "VIEW-ONLY" in banner
                url = f"http://127.0.0.1:{port}"
                assert client.get(f"{url}/health").json()["wallet"] == "view-only"
                payout = {"destinations": [{"amount": 1, "address": state["funder_address"]}]}
                assert client.post(f"{url}/transfer", json=payout).status_code == 409
            subprocess.run(shlex.split(mine), check=True, timeout=120, cwd=REPO)

            def status() -> tuple[bool, dict[str, Any]]:
                body: dict[str, Any] = client.get(
                    f"http://127.0.0.1:{port}/receive/{address}"
                ).json()
                return body["complete"], body

            body = wait_until(
                "the sample request to be complete after `pay` and `mine 10`",
                status,
                timeout=SYNC_WAIT,
                log=log_path,
                proc=proc,
                interval=0.3,
            )
        assert body["amount"] == {
            "expected": 1_500_000_000_000,
            "covered": {"total": 1_500_000_000_000, "unlocked": 1_500_000_000_000},
            "due": 0,
        }
    finally:
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        try:
            returncode = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            returncode = proc.wait()
    pids = [state["pids"]["monerod"], state["pids"]["funder"], *state["pids"]["wallets"].values()]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not (workdir / "state.json").exists()
    # Ctrl-C ends it quietly: no KeyboardInterrupt traceback after the clean-up.
    output = log_path.read_text()
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output[-3000:]
    assert output.rstrip().endswith("stopped."), output[-1000:]
    assert returncode == 0, f"Ctrl-C ended the playground with {returncode}: {output[-1000:]}"
