"""Stores on their own wallet-rpc at the admin API (``core/store_wallets.py``).

A fake wallet-rpc probe: which wallet each URL has open, or why it cannot tell. A store
is created only on a wallet that answers and is neither the main wallet nor another
store's; every refusal leaves nothing behind (no row, no account, no change announced).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.unit.test_stores_usecase import FakeAccounts, FakeStores
from xmrgate.core.store_wallets import WalletSpec, check_rpc_address
from xmrgate.core.stores import StoreAdmin
from xmrgate.domain.errors import AlreadyExists, InvalidInput
from xmrgate.domain.stores import DEFAULT_STORE

MAIN = "4MainWallet"
URL = "http://127.0.0.1:18090/json_rpc"


class FakeProbe:
    """URL -> the primary address its wallet-rpc has open, or the refusal it gives."""

    def __init__(self, answers: dict[str, str | InvalidInput]) -> None:
        self.answers = answers
        self.asked: list[WalletSpec] = []

    async def primary_address(self, spec: WalletSpec) -> str:
        self.asked.append(spec)
        answer = self.answers[spec.rpc_address]
        if isinstance(answer, InvalidInput):
            raise answer
        return answer


def _admin(probe: FakeProbe) -> tuple[StoreAdmin, FakeStores, FakeAccounts, list[int]]:
    repo, accounts, changes = FakeStores(), FakeAccounts(), []

    async def changed() -> None:
        changes.append(1)

    async def main_wallet() -> str:
        return MAIN

    admin = StoreAdmin(repo, accounts, changed, wallets=probe, main_wallet=main_wallet)
    return admin, repo, accounts, changes


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_store_on_its_own_wallet_records_its_wallet_and_no_account() -> None:
    probe = FakeProbe({URL: "4StoreWallet"})
    admin, _repo, accounts, changes = _admin(probe)
    store = _run(
        admin.create("shop", None, {"rpc_address": URL, "rpc_username": "u", "rpc_password": "p"})
    )
    assert store.own_wallet is not None
    assert store.own_wallet.primary_address == "4StoreWallet"
    assert (store.own_wallet.rpc_username, store.own_wallet.rpc_password) == ("u", "p")
    assert accounts.labels == []  # no account of the main wallet
    assert changes == [1]
    public = store.public()
    assert "rpc_password" not in public["wallet"] and public["wallet"]["rpc_address"] == URL
    assert probe.asked == [WalletSpec(URL, "u", "p")]


@pytest.mark.parametrize(
    ("answer", "refusal", "message"),
    [
        (InvalidInput(f"wallet-rpc at {URL} does not answer"), InvalidInput, "does not answer"),
        (InvalidInput(f"wallet-rpc at {URL} has no wallet open"), InvalidInput, "no wallet open"),
        (MAIN, AlreadyExists, "main wallet"),
    ],
    ids=["silent", "no-wallet", "main-wallet"],
)
def test_a_wallet_that_cannot_be_a_stores_is_refused_with_nothing_made(
    answer: str | InvalidInput, refusal: type[Exception], message: str
) -> None:
    admin, repo, accounts, changes = _admin(FakeProbe({URL: answer}))
    with pytest.raises(refusal, match=message):
        _run(admin.create("shop", None, {"rpc_address": URL}))
    assert list(repo.stores) == [DEFAULT_STORE] and accounts.labels == [] and changes == []


def test_another_stores_wallet_is_409_naming_that_store() -> None:
    other = "http://127.0.0.1:18091/json_rpc"
    admin, repo, _accounts, _changes = _admin(FakeProbe({URL: "4Same", other: "4Same"}))
    _run(admin.create("first", None, {"rpc_address": URL}))
    with pytest.raises(AlreadyExists, match="store 'first'"):
        _run(admin.create("second", None, {"rpc_address": other}))
    assert "second" not in repo.stores


@pytest.mark.parametrize(
    "wallet",
    [
        {"rpc_address": "ftp://127.0.0.1/json_rpc"},
        {"rpc_address": "http://user:pw@127.0.0.1:18083/json_rpc"},
        {"rpc_address": "http://127.0.0.1:99999/json_rpc"},
        {"rpc_address": "http:///json_rpc"},
        {"rpc_address": 5},
        {"rpc_address": URL, "rpc_password": "p"},
        {"rpc_address": URL, "rpc_username": "u\nx"},
        {"rpc_address": URL, "extra": 1},
    ],
    ids=[
        "scheme",
        "login-in-url",
        "port",
        "no-host",
        "not-a-string",
        "password-only",
        "control-char",
        "unknown-field",
    ],
)
def test_bad_wallet_input_is_400_before_any_wallet_is_asked(wallet: dict[str, Any]) -> None:
    probe = FakeProbe({})
    admin, repo, _accounts, _changes = _admin(probe)
    with pytest.raises(InvalidInput):
        _run(admin.create("shop", None, wallet))
    assert probe.asked == [] and list(repo.stores) == [DEFAULT_STORE]


def test_a_bare_host_gets_the_json_rpc_path() -> None:
    assert check_rpc_address("http://127.0.0.1:18083") == "http://127.0.0.1:18083/json_rpc"
    assert check_rpc_address("https://w.example/rpc") == "https://w.example/rpc"
