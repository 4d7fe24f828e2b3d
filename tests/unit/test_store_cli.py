"""``xmrgate store add/key/list`` on a SQLite database, with a fake main wallet.

Refusals are one line on stderr, exit status 2, and leave the database as it was;
``store key`` prints the key alone on stdout.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from testsupport.migrated import MigratedTemplates
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.identity import SqlIdentityStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.config import Settings
from xmrgate.domain.errors import WalletUnavailable
from xmrgate.domain.stores import Store, StoreKey
from xmrgate.runtime import cli, store_cli
from xmrgate.runtime.store_cli import MainWalletAccounts, main

OURS = "4" + "A" * 94
THEIRS = "4" + "B" * 94


@dataclass
class FakeAccounts:
    labels: list[str] = field(default_factory=list)

    async def create_account(self, label: str) -> int:
        self.labels.append(label)
        return 10 + len(self.labels)


@dataclass
class FakeWallet:
    """primary_address + create_account, as WalletClient answers them."""

    address: str = OURS
    labels: list[str] = field(default_factory=list)

    async def primary_address(self) -> str:
        return self.address

    async def create_account(self, label: str = "") -> int:
        self.labels.append(label)
        return 4


@pytest.fixture
def settings(tmp_path: Path, migrated_templates: MigratedTemplates) -> Settings:
    """A database as a first start leaves it: a copy of this process's migrated template
    (``testsupport/migrated.py``; migrating costs 0.3-0.7 s of CPU per test). The
    command on a database file that does not exist yet:
    ``test_the_command_line_dispatches_with_the_gateways_options``."""
    path = tmp_path / "gateway.sqlite3"
    migrated_templates.sqlite_copy(path)
    return Settings(sqlite=str(path))


def read(settings: Settings) -> tuple[list[Store], list[StoreKey]]:
    """The stores and active keys in the database (migrated first: it may be new)."""

    async def scenario() -> tuple[list[Store], list[StoreKey]]:
        db = Database(settings.database_url())
        try:
            await db.migrate()
            repo = SqlStores(db)
            return await repo.all(), await repo.active_keys()
        finally:
            await db.dispose()

    return asyncio.run(scenario())


def refused(capsys: pytest.CaptureFixture[str], status: int) -> str:
    """The one stderr line of a refusal (and no stdout)."""
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_add_creates_a_store_on_a_new_account(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    accounts = FakeAccounts()
    status = main(["add", "shop-2", "--account", "--name", "My shop"], settings, accounts=accounts)
    out, _ = capsys.readouterr()
    assert status == 0 and "shop-2" in out and "account 11" in out
    assert accounts.labels == ["xmrgate store shop-2"]
    stores, _ = read(settings)
    assert [(s.id, s.name, s.account_index) for s in stores] == [
        ("default", "Default store", 0),
        ("shop-2", "My shop", 11),
    ]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["add", "Shop", "--account"], "store id"),
        (["add", "shop", "--account", "--name", " "], "name"),
        (["add", "default", "--account"], "already exists"),
        (["add", "shop"], "--account"),
        (["add", "shop", "--account", "--wallet-rpc", "http://127.0.0.1:1"], "not allowed"),
        # Port 1 on loopback: nothing listens, the connection is refused at once.
        (["add", "shop", "--wallet-rpc", "http://127.0.0.1:1"], "does not answer"),
        (["add", "shop", "--wallet-rpc", "ftp://127.0.0.1:1"], "http:// or https://"),
        (["add", "shop", "--account", "--rpc-login", "u:p"], "--rpc-login goes with"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_add_refusals_create_nothing(
    settings: Settings, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    accounts = FakeAccounts()
    line = refused(capsys, main(argv, settings, accounts=accounts))
    assert says in line and line.startswith("xmrgate store")
    assert accounts.labels == []
    stores, keys = read(settings)
    assert [s.id for s in stores] == ["default"] and keys == []


def test_a_duplicate_asks_the_wallet_once(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    accounts = FakeAccounts()
    assert main(["add", "shop", "--account"], settings, accounts=accounts) == 0
    capsys.readouterr()
    line = refused(capsys, main(["add", "shop", "--account"], settings, accounts=accounts))
    assert "a store 'shop' already exists" in line
    assert accounts.labels == ["xmrgate store shop"]


def test_key_prints_the_key_alone(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["add", "shop", "--account"], settings, accounts=FakeAccounts()) == 0
    capsys.readouterr()
    assert main(["key", "shop", "--scopes", "read+receive"], settings) == 0
    out, err = capsys.readouterr()
    token = out.removesuffix("\n")
    assert out == token + "\n" and "\n" not in token and token.startswith("xgs_")
    [key] = read(settings)[1]
    assert key.digest == hashlib.sha256(token.encode()).digest()
    assert (key.store_id, key.scopes) == ("shop", frozenset({"read", "receive"}))
    assert key.id in err and token not in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["key", "nope"], "no store 'nope'"),
        (["key", "default", "--scopes", "read+admin"], "scopes"),
        (["key", "default", "--scopes", ""], "scopes"),
    ],
)
def test_key_refusals_create_no_key(
    settings: Settings, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    line = refused(capsys, main(argv, settings))
    assert says in line
    assert read(settings)[1] == []


def test_list_as_text_and_json(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["add", "shop", "--account"], settings, accounts=FakeAccounts()) == 0
    for _ in range(3):
        assert main(["key", "shop"], settings) == 0
    revoked = read(settings)[1][0]

    async def revoke() -> None:
        db = Database(settings.database_url())
        try:
            assert await SqlStores(db).revoke_key("shop", revoked.id)
        finally:
            await db.dispose()

    asyncio.run(revoke())
    capsys.readouterr()
    assert main(["list"], settings) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        ["ID", "ACCOUNT", "STATE", "KEYS", "NAME"],
        ["default", "0", "enabled", "0", "Default", "store"],
        ["shop", "11", "enabled", "2", "shop"],  # active keys: one of three is revoked
    ]
    assert main(["list", "--json"], settings) == 0
    listed = json.loads(capsys.readouterr().out)["stores"]
    assert [(s["id"], s["wallet"]) for s in listed] == [
        ("default", {"account": 0}),
        ("shop", {"account": 11}),
    ]
    assert "callback_secret" not in listed[1]


def test_add_uses_the_configured_wallet_rpc_when_it_holds_our_wallet(
    settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a given account creator, ``add`` builds a WalletClient from the settings,
    checks the wallet's identity (recording it on a new database), and closes it."""
    made: list[dict[str, Any]] = []

    class Client(FakeWallet):
        def __init__(self, url: str, **options: Any) -> None:
            super().__init__()
            made.append({"url": url, **options, "closed": False})

        async def aclose(self) -> None:
            made[-1]["closed"] = True

    monkeypatch.setattr(store_cli, "WalletClient", Client)
    assert main(["add", "shop", "--account"], settings) == 0
    assert "account 4" in capsys.readouterr().out
    assert [(m["url"], m["closed"]) for m in made] == [(settings.rpc_address, True)]

    async def recorded() -> str | None:
        db = Database(settings.database_url())
        try:
            return await SqlIdentityStore(db).remembered()
        finally:
            await db.dispose()

    assert asyncio.run(recorded()) == OURS


def test_another_wallet_gets_no_account(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    wallet = FakeWallet(address=THEIRS)

    async def scenario() -> None:
        db = Database(settings.database_url())
        try:
            await db.migrate()
            identity = SqlIdentityStore(db)
            await identity.remember(OURS)
            with pytest.raises(WalletUnavailable, match="no account was created"):
                await MainWalletAccounts(wallet, identity).create_account("x")
            assert await MainWalletAccounts(FakeWallet(), identity).create_account("y") == 4
        finally:
            await db.dispose()

    asyncio.run(scenario())
    assert wallet.labels == []
    accounts = MainWalletAccounts(wallet, _Recorded(OURS))
    line = refused(capsys, main(["add", "shop", "--account"], settings, accounts=accounts))
    assert "is not usable" in line and THEIRS in line
    assert [s.id for s in read(settings)[0]] == ["default"]


@dataclass
class _Recorded:
    """An identity store that has recorded ``address``."""

    address: str

    async def remembered(self) -> str | None:
        return self.address

    async def remember(self, primary_address: str) -> str:
        return self.address


def test_the_command_line_dispatches_with_the_gateways_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``xmrgate store ...`` takes --sqlite anywhere among its own arguments."""
    path = tmp_path / "cli.sqlite3"
    with pytest.raises(SystemExit) as done:
        cli.main(["store", "key", "--sqlite", str(path), "default", "--scopes", "read"])
    assert done.value.code == 0
    token = capsys.readouterr().out.strip()
    [key] = read(Settings(sqlite=str(path)))[1]
    assert key.digest == hashlib.sha256(token.encode()).digest()
    with pytest.raises(SystemExit) as failed:
        cli.main(["store", "key", "nope", "-sqlite", str(path)])
    assert failed.value.code == 2
    assert capsys.readouterr().err.strip() == "xmrgate store key: no store 'nope'"
