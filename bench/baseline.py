"""A previous version of the gateway, measured beside this one in the same run.

``python -m bench --baseline cad089a`` checks that commit out in a temporary git
worktree under /tmp (never committed, removed at the end), and the benchmarks that
compare versions start its gateway with ``PYTHONPATH`` pointing at the checkout's
``src``: same interpreter, same installed dependencies, same devnet chain, same
PostgreSQL server (a database of its own: its schema is its own migrations').
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from testsupport.gateway import GatewayProcess

# The repository this benchmark runs from (the baseline is checked out beside it).
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Baseline:
    """The checkout of ``rev``; ``label`` names it in figures."""

    rev: str
    path: Path

    @property
    def label(self) -> str:
        """Short name for the figures."""
        return f"baseline {self.rev[:7]}"

    def gateway(
        self, workdir: Path, wallet_url: str, database: str, extra_args: Sequence[str] = ()
    ) -> GatewayProcess:
        """A gateway process of the baseline's code (not started)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.path / "src")
        return GatewayProcess(workdir, wallet_url, database, extra_args, env=env)


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO_ROOT), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


@contextlib.contextmanager
def checkout(rev: str) -> Iterator[Baseline]:
    """``git worktree add`` of ``rev`` under /tmp; removed (``git worktree remove``) after."""
    full = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    path = Path("/tmp") / f"xmrgate-baseline-{full[:7]}-{uuid.uuid4().hex[:6]}"
    _git("worktree", "add", "--detach", str(path), full)
    try:
        yield Baseline(full, path)
    finally:
        _git("worktree", "remove", "--force", str(path))


def same_gateway(
    baseline: Baseline | None,
    workdir: Path,
    wallet_url: str,
    database: str,
    extra_args: Sequence[str] = (),
) -> GatewayProcess:
    """This version's gateway (``baseline`` None) or the baseline's, on the same arguments."""
    if baseline is None:
        return GatewayProcess(workdir, wallet_url, database, extra_args)
    return baseline.gateway(workdir, wallet_url, database, extra_args)
