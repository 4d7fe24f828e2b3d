"""``make dev`` again in the same checkout works, and one that cannot work says so and ends.

Each start makes a new regtest network and a new gateway wallet, so the first run's
database (it belongs to the first wallet) must not be reused: the gateway would refuse the
new wallet and never become healthy. A playground whose gateway does not become healthy
stops everything and exits with the reason, instead of running on with no banner.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_dev_interrupt import (
    ended_quietly,
    processes_under,
    start,
    wait_for_output,
)
from xmrgate.runtime.dev_guards import HEALTH_DEADLINE_ENV

pytestmark = pytest.mark.integration


def test_second_start_in_the_same_directory(tmp_path: Path) -> None:
    """Start, Ctrl-C, start again in the same ``--dir``: both print the banner and end cleanly."""
    play = tmp_path / "play"
    for run in (1, 2):
        proc, log_path = start(tmp_path, f"dev-{run}.log")
        try:
            wait_for_output(
                proc, log_path, "mine 10", f"print its banner (start {run})", timeout=120
            )
        finally:
            proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
            ended_quietly(proc, log_path, tmp_path)
        assert (play / "xmrgate.sqlite3").exists()
    # The first run's database (of a chain that is gone) was set aside, not reused.
    assert (play / "xmrgate.previous.sqlite3").exists()


def test_gateway_that_cannot_become_healthy_ends_the_playground(tmp_path: Path) -> None:
    """No gateway opens its wallet in half a second: the playground stops everything and
    exits 1 with what /health said and what to do."""
    proc, log_path = start(tmp_path, env={HEALTH_DEADLINE_ENV: "0.5"})
    wait_for_output(proc, log_path, "Uvicorn running", "start its gateway", timeout=120)
    serving = time.monotonic()
    try:
        returncode = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # stops its network; then the test fails
        ended_quietly(proc, log_path, tmp_path)
        pytest.fail(f"it went on running: {log_path.read_text()[-2000:]}")
    took = time.monotonic() - serving
    output = log_path.read_text()
    assert returncode == 1, output[-2000:]
    assert took < 30, f"it took {took:.0f}s to end"
    assert "Traceback" not in output, output[-3000:]
    assert "mine 10" not in output  # no banner
    # Everything is stopped first, then the reason is the last thing on the terminal.
    reason = output[output.index("stopped.") :]
    assert "the gateway did not become healthy within 0.5 s" in reason, output[-2000:]
    assert "/health: " in reason
    assert f"if it happens again, rm -rf {tmp_path / 'play'} and start again" in reason
    assert processes_under(tmp_path / "play") == []
    assert not (tmp_path / "play" / "state.json").exists()
