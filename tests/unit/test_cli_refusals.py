"""Configurations ``xmrgate`` refuses at start, with a clear message and no traceback.

Each runs the real command line in a child process; none gets as far as a wallet or a
database, so no regtest network is needed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from xmrgate.devnet import free_port


def xmrgate(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m xmrgate ARGS`` (it must exit by itself, quickly)."""
    return subprocess.run(
        [sys.executable, "-m", "xmrgate", *args],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def test_public_bind_without_keys_is_refused(tmp_path: Path) -> None:
    """Binding a non-loopback address without API keys exits with a clear message."""
    result = xmrgate(
        "serve", "--bind", f"0.0.0.0:{free_port()}", "--sqlite", str(tmp_path / "x.sqlite3")
    )
    assert result.returncode != 0
    assert "refusing to serve" in result.stderr and "--api-key" in result.stderr


def test_bad_api_key_config_is_refused() -> None:
    """A too-short key or an unknown scope is a configuration error, not a crash."""
    for spec in ("short", "long-enough-key-1234:superuser"):
        result = xmrgate("serve", "--api-key", spec)
        assert result.returncode != 0
        assert "invalid configuration" in result.stderr
        assert "Traceback" not in result.stderr


def test_workers_need_postgresql(tmp_path: Path) -> None:
    """--workers above 1 on SQLite is refused with a clear message."""
    result = xmrgate("--workers", "2", "--sqlite", str(tmp_path / "x.sqlite3"))
    assert result.returncode != 0 and "needs --postgresql" in result.stderr
