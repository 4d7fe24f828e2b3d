"""Waiting on child processes and ending them.

Every wait here that gives up raises :class:`WaitFailed` with what it waited for, for
how long, what it saw last, and the tail of the process's log.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from xmrgate.devnet.processes import LOG_TAIL_LINES, log_tail, terminate

T = TypeVar("T")


class WaitFailed(AssertionError):
    """A wait gave up: its condition did not hold in time, or the watched process exited."""


def describe_log(log: Path | None, lines: int = LOG_TAIL_LINES) -> str:
    """The tail of ``log`` for an error message (saying so when there is nothing to quote)."""
    if log is None:
        return ""
    return "\n" + (log_tail(log, lines=lines) or f"(log {log} is missing or empty)")


def wait_until(
    what: str,
    probe: Callable[[], tuple[bool, T]],
    *,
    timeout: float,
    log: Path | None = None,
    proc: subprocess.Popen[bytes] | None = None,
    interval: float = 0.1,
) -> T:
    """Call ``probe`` until it returns ``(True, value)``; return that value.

    ``probe`` returns ``(done, value)``; the last ``value`` is quoted when the wait
    gives up. Raises :class:`WaitFailed` after ``timeout`` seconds, or at once when
    ``proc`` (the process that should make the condition true) has exited; the
    message quotes ``what``, the time waited and the tail of ``log``.
    """
    started = time.monotonic()
    while True:
        if proc is not None and proc.poll() is not None:
            raise WaitFailed(
                f"waited for {what}: process {proc.pid} exited with {proc.returncode} "
                f"after {time.monotonic() - started:.1f}s{describe_log(log)}"
            )
        done, value = probe()
        if done:
            return value
        if time.monotonic() - started > timeout:
            raise WaitFailed(
                f"waited {timeout:g}s for {what}, in vain; last seen: {value!r}{describe_log(log)}"
            )
        time.sleep(interval)


def stop_process(proc: subprocess.Popen[bytes] | None, timeout: float = 20) -> None:
    """SIGTERM one process we started (by its PID), then SIGKILL if it lingers."""
    if proc is not None:
        terminate(proc.pid, proc, timeout)


def peak_rss_kib(pid: int) -> int | None:
    """VmHWM (peak resident set) of a live process in KiB, from /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None
