"""``--workers N``: secrets reach worker processes through a 0600 file, not the environment."""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from socket import socket

import pytest
from uvicorn import Config
from uvicorn._subprocess import get_subprocess

from xmrgate.config import Settings
from xmrgate.runtime import workers

# As an operator would set them; "rpc_password" in lower case, which Settings reads too.
OPERATOR_ENVIRONMENT = {
    "API_KEYS": "very-secret-api-key-123:read",
    "CALLBACK_SECRET": "very-secret-hmac",
    "rpc_password": "very-secret-rpc",
    "RPC_USERNAME": "very-secret-user",
    "POSTGRESQL": "postgresql://xmrgate:very-secret-pg@127.0.0.1:5432/xmrgate",
}


@pytest.fixture
def environ() -> Iterator[None]:
    """The process environment, put back as it was afterwards (the code under test
    deletes variables, which monkeypatch would not restore)."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_secrets_are_in_a_private_file_not_in_the_environment(
    environ: None, tmp_path: Path
) -> None:
    settings = Settings(
        sqlite=f"{tmp_path}/x.sqlite3",
        api_keys="very-secret-api-key-123:read",
        callback_secret="very-secret-hmac",
        rpc_password="very-secret-rpc",
    )
    path = workers.hand_settings_to_workers(settings)
    environment = "\n".join(f"{k}={v}" for k, v in os.environ.items())
    for secret in ("very-secret-api-key-123", "very-secret-hmac", "very-secret-rpc"):
        assert secret not in environment
        assert secret in path.read_text()
    assert os.environ[workers.SETTINGS_FILE_ENV] == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    app = workers.app_from_settings_file()
    assert app.state.gateway.api_keys[0].scopes == frozenset({"read"})


def _worker(report: str, sockets: list[socket] | None = None) -> None:
    """Runs in the spawned child, where uvicorn would run its server: what it got."""
    given = Path("/proc/self/environ").read_bytes().decode("utf-8", "replace")
    settings = json.loads(workers.settings_from_file().to_json())
    app = workers.app_from_settings_file()  # the factory uvicorn's workers call
    scopes = sorted(app.state.gateway.api_keys[0].scopes)
    out = {"environ": [v for v in given.split("\0") if v], "settings": settings, "scopes": scopes}
    Path(report).write_text(json.dumps(out), encoding="utf-8")


def test_worker_process_environment_has_no_setting_and_the_file_has_them_all(
    environ: None, tmp_path: Path
) -> None:
    """A real worker child, started as uvicorn starts them, after the parent's hand-over.

    The child's environment as the kernel shows it (``/proc/self/environ``) holds none of
    the operator's settings variables; the settings, secrets included, arrive through
    the file.
    """
    os.environ.update(OPERATOR_ENVIRONMENT)
    os.environ["XMRGATE_UNRELATED"] = "kept"
    settings = Settings()  # from the environment, as ``xmrgate serve`` reads it
    path = workers.hand_settings_to_workers(settings)
    report = tmp_path / "report.json"
    target = functools.partial(_worker, str(report))
    # uvicorn's --workers supervisor starts each worker with this (a "spawn" process).
    child = get_subprocess(Config(app="unused", log_config=None), target, sockets=[])
    child.start()
    child.join(60)
    assert child.exitcode == 0
    got = json.loads(report.read_text(encoding="utf-8"))
    names = {entry.partition("=")[0] for entry in got["environ"]}
    assert not {n for n in names if n.lower() in Settings.model_fields}
    assert "very-secret" not in "\n".join(got["environ"])
    assert f"{workers.SETTINGS_FILE_ENV}={path}" in got["environ"]
    assert "XMRGATE_UNRELATED=kept" in got["environ"]
    assert {name.lower(): got["settings"][name.lower()] for name in OPERATOR_ENVIRONMENT} == {
        name.lower(): value for name, value in OPERATOR_ENVIRONMENT.items()
    }
    assert got["scopes"] == ["read"]


def test_settings_variables_are_found_in_any_case() -> None:
    names = ["API_KEYS", "rpc_password", "Callback_Secret", "PATH", "XMRGATE_SETTINGS_FILE"]
    assert workers.settings_variables(names) == ["API_KEYS", "rpc_password", "Callback_Secret"]
