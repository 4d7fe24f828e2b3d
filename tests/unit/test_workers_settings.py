"""``--workers N``: secrets reach worker processes through a 0600 file, not the environment."""

from __future__ import annotations

import os
import stat

import pytest

from xmrgate.config import Settings
from xmrgate.runtime import workers


def test_secrets_are_in_a_private_file_not_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    monkeypatch.delenv(workers.SETTINGS_FILE_ENV, raising=False)
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
