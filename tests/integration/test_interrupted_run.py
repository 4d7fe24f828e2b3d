"""A ``make test`` stopped half-way leaves no monerod or wallet-rpc behind.

A small pytest run (``interrupted_run.py``: each test takes its process's regtest
network and one more wallet-rpc, then waits) is started in a subprocess and stopped
while its tests wait: SIGTERM to pytest in three processes (what ``make`` does with the
SIGTERM it gets), Ctrl-C (SIGINT to the whole process group, as a terminal sends it),
and SIGKILL to a pytest in one process (nothing in it can stop anything: the kernel's
parent-death signal does). Each time, every monerod and wallet-rpc it started, found by
PID, is gone soon after, and pytest itself has ended.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import DEVNET_BLOCKS_ENV
from tests.integration.test_dev_interrupt import processes_under
from testsupport.processes import wait_until
from xmrgate.devnet.processes import log_tail, pid_alive

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(__file__).with_name("interrupted_run.py")
#: How long the stopped run's processes get to be gone.
GONE_WITHIN = 60.0
#: Run before pytest (the same process, through exec): SIGINT back at its default, so
#: the run's Python handles it as a terminal's Ctrl-C. A run started in the background
#: by a non-interactive shell (``(make test &)``) inherits SIGINT ignored, ignored again
#: in every process it starts; the Ctrl-C case then failed, its run deaf for 60 s.
SIGINT_AT_DEFAULT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, sys.argv[1:])"
)


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def still_there(pids: list[int], basetemp: Path) -> list[str]:
    """Those of ``pids`` that are still a monerod or wallet-rpc of this run (a PID taken
    again by another program meanwhile does not count)."""
    return [
        f"{pid}: {command_of(pid)[:150]}"
        for pid in pids
        if pid_alive(pid) and str(basetemp) in command_of(pid)
    ]


@pytest.mark.parametrize(
    ("workers", "how"),
    [(2, "sigterm"), (2, "ctrl-c"), (0, "sigkill")],
    ids=["sigterm-to-pytest-n2", "ctrl-c-n2", "sigkill-to-pytest"],
)
def test_a_stopped_run_leaves_no_process(tmp_path: Path, workers: int, how: str) -> None:
    basetemp = tmp_path / "run"
    pid_file = tmp_path / "pids.jsonl"
    log_path = tmp_path / "pytest.log"
    with log_path.open("w") as log:
        run = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SIGINT_AT_DEFAULT,
                sys.executable,
                "-m",
                "pytest",
                str(TARGET),
                "-n",
                str(workers),
                "--basetemp",
                str(basetemp),
                "-p",
                "no:cacheprovider",
                "-p",
                "no:schemathesis",
                "-q",
            ],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Its networks mine no blocks (nothing is paid): each starts in 2.6 s, not 12.
            # Unbuffered: what the run printed after the signal is in its log even when it
            # has to be killed (the failure message shows it).
            env={
                **os.environ,
                "XMRGATE_INTERRUPTED_PIDS": str(pid_file),
                DEVNET_BLOCKS_ENV: "0",
                "PYTHONUNBUFFERED": "1",
            },
            start_new_session=True,  # its own process group, for the Ctrl-C
        )
    try:
        expected = max(workers, 1)  # one test waiting in each process
        records = wait_until(
            f"{expected} tests to start their processes",
            lambda: (
                len(found := pid_file.read_text().splitlines() if pid_file.exists() else [])
                >= expected,
                found,
            ),
            timeout=300,
            log=log_path,
            proc=run,
        )
        runs = [json.loads(line) for line in records]
        assert {r["height"] for r in runs} == {1}  # no block mined: only the genesis
        pids = [pid for r in runs for pid in r["pids"]]
        assert len(pids) == 3 * expected  # monerod, the funder, one more wallet-rpc each
        assert len(still_there(pids, basetemp)) == len(pids)
        if how == "sigterm":
            run.send_signal(signal.SIGTERM)
        elif how == "ctrl-c":
            os.killpg(run.pid, signal.SIGINT)
        else:
            run.send_signal(signal.SIGKILL)
        started = time.monotonic()
        deadline = started + GONE_WITHIN
        while still_there(pids, basetemp) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = still_there(pids, basetemp)
        assert left == [], (
            f"left {time.monotonic() - started:.0f} s after the {how}:\n"
            + "\n".join(left)
            + "\n"
            + log_tail(log_path, lines=60)
        )
        run.wait(timeout=max(1.0, deadline - time.monotonic()))
        assert processes_under(basetemp) == []  # nothing else of the run either
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
