"""Processes of the devnet: free ports, spawning, ending by PID, log tails.

Every process is started in its own session with its output appended to a log
file, and ended by its PID (SIGTERM, then SIGKILL), never by name. On Linux it also
dies with the process that started it (:func:`die_with_parent`): a test run or an
``xmrgate dev`` killed before it could stop its network leaves no monerod behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from xmrgate.devnet.errors import DevnetError

#: How long a freshly started monerod or wallet-rpc gets to answer its first call.
STARTUP_TIMEOUT = 60.0
#: Pause between two readiness probes.
POLL_INTERVAL = 0.15
#: Lines of each log quoted in error messages.
LOG_TAIL_LINES = 40


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def log_tail(*paths: Path, lines: int = LOG_TAIL_LINES) -> str:
    """Return the last ``lines`` lines of each existing file, labelled ("" when none exists)."""
    parts: list[str] = []
    for path in paths:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        tail = "\n".join(text.splitlines()[-lines:])
        parts.append(f"--- {path} (tail) ---\n{tail}")
    return "\n".join(parts)


#: prctl(2)'s option that sets the signal a process gets when its parent ends.
PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen`: the child is SIGKILLed by the kernel
    when the process that starts it ends, however it ends (SIGKILL included), through
    prctl(PR_SET_PDEATHSIG). ``None`` (no such tie) off Linux, and in a thread other than
    the main one: the kernel sends the signal when the *thread* that forked the child ends,
    and such a thread may end long before its process.

    The function only calls prctl (and exits if the parent is gone already, as it may be
    by the time the signal is armed); nothing else runs between fork and exec.
    """
    if _LIBC is None or threading.current_thread() is not threading.main_thread():
        return None
    prctl = _LIBC.prctl
    parent = os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # it ended between fork and prctl: no signal will come
            os._exit(1)

    return arm


def spawn(
    cmd: list[str], stdout_log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own session with stdout+stderr appended to ``stdout_log``,
    tied to this process (:func:`die_with_parent`); ``env`` replaces the inherited
    environment when given."""
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
            env=env,
            preexec_fn=die_with_parent(),  # only prctl runs in the child: see there
        )


def pid_alive(pid: int) -> bool:
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


def terminate(pid: int, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGTERM ``pid``, wait up to ``timeout`` s, then SIGKILL. Ignores gone processes."""
    if proc is not None and proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if wait_gone(pid, proc, timeout):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    wait_gone(pid, proc, 10.0)


def kill(pid: int, proc: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL ``pid`` at once (as a crash would) and wait until it is gone."""
    alive = proc.poll() is None if proc is not None else pid_alive(pid)
    if alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_gone(pid, proc, 10.0)


def wait_gone(pid: int, proc: subprocess.Popen[bytes] | None, timeout: float) -> bool:
    """Wait for ``pid`` to exit (reaping it if it is our child)."""
    if proc is not None:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


def wait_answering(
    name: str,
    proc: subprocess.Popen[bytes] | None,
    call: Callable[[], object],
    timeout: float,
    tail: Callable[[], str],
) -> None:
    """Repeat ``call`` until it stops raising DevnetError (the process ``name`` answers).

    Raises DevnetError, with ``tail()`` (its logs), when ``proc`` exits or after ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise DevnetError(f"{name} exited with {proc.returncode}\n{tail()}")
        try:
            call()
            return
        except DevnetError:
            pass
        if time.monotonic() > deadline:
            raise DevnetError(f"{name} did not answer in {timeout} s\n{tail()}")
        time.sleep(POLL_INTERVAL)
