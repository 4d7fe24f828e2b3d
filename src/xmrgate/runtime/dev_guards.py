"""What keeps ``xmrgate dev`` from waiting silently, or on a database it cannot use.

* :func:`set_aside_database`: every start makes a new chain and a new gateway wallet, so
  the previous run's database (it belongs to the old wallet, which the gateway's identity
  guard refuses, and describes payments on a chain that is gone) is moved aside;
* :func:`running_pids`: a second playground in the same folder is refused while the
  first runs (it would move the database from under it);
* :func:`wait_healthy`: the gateway answers ``GET /health`` with 200 within
  :data:`HEALTH_DEADLINE` seconds, or :class:`PlaygroundUnhealthy` says why
  (:func:`unhealthy_message` adds what to do and the last warnings logged,
  :class:`RecentProblems`).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import shlex
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

STATE_FILE = "state.json"
DATABASE = "xmrgate.sqlite3"
PREVIOUS_DATABASE = "xmrgate.previous.sqlite3"
# The files SQLite keeps a database in: they move together or the WAL is lost (or, left
# behind, replayed into another database of the same name).
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")
# Seconds the gateway gets from its start to answer GET /health with 200 (it takes a few).
HEALTH_DEADLINE = 45.0
# Hidden: tests shorten the deadline to see a playground that cannot become healthy end.
HEALTH_DEADLINE_ENV = "XMRGATE_DEV_HEALTH_DEADLINE"
# In /health's message when the database belongs to another wallet: that never heals.
WRONG_WALLET = "this database belongs to"


class PlaygroundUnhealthy(Exception):
    """The playground's gateway cannot become healthy; ``reason`` quotes what it said."""

    def __init__(self, reason: str, *, wrong_wallet: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wrong_wallet = wrong_wallet


def set_aside_database(workdir: Path) -> Path | None:
    """Move the previous run's database (its WAL and SHM with it) to ``PREVIOUS_DATABASE``.

    It belongs to the previous run's gateway wallet and chain, both gone: the new gateway
    would refuse its new wallet. One generation is kept to look at. Returns where the
    database went, or None when there was none.
    """
    current = workdir / DATABASE
    if not any(Path(f"{current}{suffix}").exists() for suffix in SQLITE_SUFFIXES):
        return None
    previous = workdir / PREVIOUS_DATABASE
    for suffix in SQLITE_SUFFIXES:
        # An older WAL left beside the moved database would be replayed into it.
        Path(f"{previous}{suffix}").unlink(missing_ok=True)
        with contextlib.suppress(FileNotFoundError):
            Path(f"{current}{suffix}").replace(f"{previous}{suffix}")
    return previous


def running_pids(workdir: Path) -> list[int]:
    """PIDs of a playground's processes still running in ``workdir`` (from its state file).

    A PID counts only while its command line names ``workdir``: after a reboot or a
    crash the state file's PIDs may belong to other programs.
    """
    try:
        pids = json.loads((workdir / STATE_FILE).read_text())["pids"]
        candidates = [pids["monerod"], pids["funder"], *pids["wallets"].values()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    running = []
    for pid in dict.fromkeys(candidates):
        try:
            cmdline = Path(f"/proc/{int(pid)}/cmdline").read_bytes()
        except (OSError, ValueError, TypeError):
            continue
        if str(workdir).encode() in cmdline:
            running.append(int(pid))
    return running


class RecentProblems(logging.Handler):
    """The last few warnings and errors logged, to quote when the gateway fails."""

    def __init__(self, keep: int = 3) -> None:
        """Keep the last ``keep`` WARNING-or-worse lines."""
        super().__init__(logging.WARNING)
        self.lines: collections.deque[str] = collections.deque(maxlen=keep)

    def emit(self, record: logging.LogRecord) -> None:
        """Remember one record as ``LEVEL logger: message``."""
        try:
            self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")
        except Exception:
            self.handleError(record)


def unhealthy_message(
    exc: PlaygroundUnhealthy, deadline: float, workdir: Path, log_lines: Sequence[str]
) -> str:
    """Why the playground ended and what to do, for the terminal."""
    again = f"rm -rf {shlex.quote(str(workdir))} and start again"
    if exc.wrong_wallet:
        head = "the gateway refuses its wallet: its database belongs to another wallet"
        advice = f"What to do: {again} (everything in it is a throwaway regtest playground)."
    else:
        head = f"the gateway did not become healthy within {deadline:g} s"
        advice = f"What to do: see the log above; if it happens again, {again}."
    lines = [f"{head}.", f"  {exc.reason}"]
    if log_lines:
        lines += ["The log said last:", *(f"  {line}" for line in log_lines)]
    lines.append(advice)
    return "\n".join(lines)


def wait_healthy(client: httpx.Client, url: str, deadline: float) -> None:
    """Poll ``GET /health`` until it answers 200.

    Raises :class:`PlaygroundUnhealthy` quoting the last answer once ``deadline`` seconds
    have passed, and at once when the gateway says its database belongs to another
    wallet (that does not heal by waiting).
    """
    end = time.monotonic() + deadline
    last = "no answer yet"
    while True:
        # /health answers within ~2.5 s; a hung request must not outlast the deadline.
        timeout = min(5.0, max(0.5, end - time.monotonic()))
        try:
            response = client.get(url + "/health", timeout=timeout)
        except httpx.HTTPError as exc:
            last = f"GET {url}/health: no answer ({exc or type(exc).__name__})"
        else:
            if response.status_code == 200:
                return
            last = f"GET {url}/health: {response.status_code} {response.text.strip()[:600]}"
            if WRONG_WALLET in response.text:
                raise PlaygroundUnhealthy(last, wrong_wallet=True)
        if time.monotonic() >= end:
            raise PlaygroundUnhealthy(last)
        time.sleep(0.2)
