"""``xmrgate store key STORE --permission NAME ...``: a shop plugin's key from the
command line, on a migrated SQLite copy, with its refusals."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from testsupport.migrated import MigratedTemplates
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.config import Settings
from xmrgate.domain.stores import DEFAULT_STORE, StoreKey
from xmrgate.runtime.store_cli import main

VIEW = "btcpay.store.canviewinvoices"
CREATE = "btcpay.store.cancreateinvoice"


@pytest.fixture
def settings(tmp_path: Path, migrated_templates: MigratedTemplates) -> Settings:
    path = tmp_path / "gateway.sqlite3"
    migrated_templates.sqlite_copy(path)
    return Settings(sqlite=str(path))


def keys(settings: Settings) -> list[StoreKey]:
    async def scenario() -> list[StoreKey]:
        db = Database(settings.database_url())
        try:
            return await SqlStores(db).active_keys()
        finally:
            await db.dispose()

    return asyncio.run(scenario())


def test_permission_keys_carry_exactly_the_names(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["key", DEFAULT_STORE, "--permission", VIEW, "--permission", CREATE]
    assert main(argv, settings) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    [key] = keys(settings)
    assert key.digest == hashlib.sha256(token.encode()).digest()
    assert key.permissions == (VIEW, CREATE)
    assert key.scopes == frozenset({"read", "receive"})
    assert VIEW in err and token not in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["key", DEFAULT_STORE, "--permission", "btcpay.store.nope"], "btcpay.store.nope"),
        (["key", DEFAULT_STORE, "--permission", "unrestricted"], "unrestricted"),
    ],
)
def test_bad_permissions_make_no_key(
    settings: Settings, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    assert main(argv, settings) == 2
    assert says in capsys.readouterr().err
    assert keys(settings) == []


def test_scopes_and_permissions_exclude_each_other(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["key", DEFAULT_STORE, "--scopes", "read", "--permission", VIEW], settings) == 2
    assert "not allowed with" in capsys.readouterr().err
    assert keys(settings) == []
