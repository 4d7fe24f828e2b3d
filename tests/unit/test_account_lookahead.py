"""The stores' accounts after a restore from keys (``core/account_lookahead.py``).

A fake wallet holding an account table: a restored one has account 0 alone, and 200
subaddresses per account. The check creates what a store uses and is missing, then
saves, rewinds the sync and rescans, in that order; nothing when all is there.
"""

from __future__ import annotations

import asyncio

from xmrgate.core.account_lookahead import ensure_accounts_lookahead


class TableWallet:
    """Accounts as lists of subaddress counts; every call recorded."""

    def __init__(self, tables: list[int]) -> None:
        self.tables = tables
        self.calls: list[str] = []

    async def account_count(self) -> int:
        self.calls.append("get_accounts")
        return len(self.tables)

    async def create_account(self, label: str = "") -> int:
        self.calls.append("create_account")
        self.tables.append(200)
        return len(self.tables) - 1

    async def has_subaddress(self, index: int, *, account: int = 0) -> bool:
        self.calls.append(f"get_address {account}/{index}")
        return index < self.tables[account]

    async def create_addresses(self, count: int, *, account: int = 0) -> list[tuple[str, int]]:
        assert 1 <= count <= 64
        first = self.tables[account]
        self.tables[account] += count
        return [(f"8addr{account}-{i}", i) for i in range(first, first + count)]

    async def save(self) -> None:
        self.calls.append("store")

    async def rescan(self) -> None:
        self.calls.append("rescan")


class Source:
    def __init__(self, highest: dict[int, int]) -> None:
        self.highest = highest
        self.full_reads = 0

    async def accounts(self) -> list[int]:
        return sorted(self.highest)

    async def highest_by_account(self) -> dict[int, int]:
        self.full_reads += 1
        return dict(self.highest)


def _run(wallet: TableWallet, source: Source, *, full: bool) -> tuple[bool, list[str]]:
    order: list[str] = []

    async def rewind() -> None:
        wallet.calls.append("rewind")

    result = asyncio.run(ensure_accounts_lookahead(wallet, source, rewind, full=full))
    order.extend(wallet.calls)
    return result, order


def test_a_restored_wallet_gets_every_store_account_back_and_rescans() -> None:
    """Stores on accounts 1 and 60 (past wallet-rpc's 50-account lookahead), index 300
    handed out in account 60: a restored wallet (account 0 alone) is extended to 61
    accounts and account 60's table to index 300, then saved, rewound, rescanned."""
    wallet = TableWallet([200])
    source = Source({0: 5, 1: 3, 60: 300})
    extended, calls = _run(wallet, source, full=False)
    assert extended
    assert len(wallet.tables) == 61
    assert wallet.tables[60] > 300
    assert calls[-3:] == ["store", "rewind", "rescan"]


def test_an_intact_wallet_costs_one_call_per_tick() -> None:
    wallet = TableWallet([200, 200, 200])
    source = Source({0: 5, 1: 3, 2: 150})
    extended, calls = _run(wallet, source, full=False)
    assert not extended
    assert calls == ["get_accounts"]
    assert source.full_reads == 0


def test_the_full_check_finds_a_short_table_of_an_existing_account() -> None:
    wallet = TableWallet([200, 200, 200])
    source = Source({0: 5, 1: 3, 2: 450})
    extended, calls = _run(wallet, source, full=True)
    assert extended and wallet.tables[2] > 450
    assert calls[-3:] == ["store", "rewind", "rescan"]
    assert "get_address 2/450" in calls


def test_no_store_but_the_default_asks_nothing() -> None:
    wallet = TableWallet([200])
    extended, calls = _run(wallet, Source({0: 900}), full=True)
    assert not extended and calls == []


def test_account_zero_extended_before_shares_the_one_rescan() -> None:
    """A restore with stores: account 0 was extended (and saved) just before, its
    accounts are short too: one rescan for both, never two."""
    wallet = TableWallet([200])

    async def rewind() -> None:
        wallet.calls.append("rewind")

    source = Source({0: 300, 3: 5})
    assert asyncio.run(
        ensure_accounts_lookahead(wallet, source, rewind, full=True, extended_before=True)
    )
    assert wallet.calls.count("rescan") == 1
    assert wallet.calls[-3:] == ["store", "rewind", "rescan"]
    # Nothing short here, but account 0 was: still its one rescan.
    intact = TableWallet([200, 200, 200, 200])
    source = Source({0: 300, 3: 5})

    async def rewind_intact() -> None:
        intact.calls.append("rewind")

    assert asyncio.run(
        ensure_accounts_lookahead(intact, source, rewind_intact, full=True, extended_before=True)
    )
    assert intact.calls.count("rescan") == 1
