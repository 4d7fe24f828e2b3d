"""The lookahead of every store's account: a restored wallet must see every store.

A wallet restored from keys starts with account 0 alone and, in each account, a table
of 200 subaddresses; it looks ahead 50 accounts (monero#9213, ``DESIGN.md``). A payment
to a store on account 60, or to subaddress 300 of account 2, stays unseen until the
account and its table are created again and the chain rescanned.

Before every tick one ``get_accounts`` call tells whether the wallet has as many
accounts as our stores use (a restored wallet has not); at start, after every reopen
and once a minute, each store's account is also checked to reach the highest index we
handed out in it. What is short is created, the wallet saved, the sync rewound to the
oldest request and the chain rescanned (rewound first: a rescan that times out loses
nothing). Account 0 keeps its own check before every tick (``ensure_lookahead``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

log = logging.getLogger(__name__)

MAX_BATCH = 64  # create_address takes 1..64 per call


class AccountsWallet(Protocol):
    """The wallet calls of the accounts' lookahead (``adapters/wallet_rpc.py``)."""

    async def account_count(self) -> int:
        """How many accounts the wallet's table holds."""
        ...

    async def create_account(self, label: str = "") -> int:
        """Create the next account; its index."""
        ...

    async def has_subaddress(self, index: int, *, account: int = 0) -> bool:
        """Whether ``account``'s subaddress table reaches ``index``."""
        ...

    async def create_addresses(self, count: int, *, account: int = 0) -> list[tuple[str, int]]:
        """Create ``count`` (1..64) subaddresses in ``account``."""
        ...

    async def save(self) -> None:
        """Write the wallet file."""
        ...

    async def rescan(self) -> None:
        """Scan the chain again from the wallet's restore height."""
        ...


class StoreAccountsSource(Protocol):
    """The stores' accounts as the database knows them (``adapters/store``)."""

    async def accounts(self) -> list[int]:
        """Every store's account index."""
        ...

    async def highest_by_account(self) -> dict[int, int]:
        """Account -> the highest subaddress index in use or pooled in it."""
        ...


async def ensure_accounts_lookahead(
    wallet: AccountsWallet,
    source: StoreAccountsSource,
    rewind_sync: Callable[[], Awaitable[None]],
    *,
    full: bool,
    extended_before: bool = False,
    extending: Callable[[], None] = lambda: None,
) -> bool:
    """Create the stores' missing accounts and subaddresses; rescan when anything was.

    ``full``: also check every account's table (else only the number of accounts: one
    call, and one small read). ``extended_before``: account 0's table was just
    extended (and saved) without a rescan: this one rescan covers both. ``extending``
    is called before the first account or subaddress is created. True when the wallet
    was extended (here or before) and rescanned.
    """
    accounts = [a for a in await source.accounts() if a > 0]
    extended = False
    if accounts:
        extended = await _extend_accounts(wallet, source, accounts, full=full, extending=extending)
    if not (extended or extended_before):
        return False
    await wallet.save()
    # Rewound first: a rescan that times out loses nothing (see ``ensure_lookahead``).
    await rewind_sync()
    await wallet.rescan()
    return True


async def _extend_accounts(
    wallet: AccountsWallet,
    source: StoreAccountsSource,
    accounts: list[int],
    *,
    full: bool,
    extending: Callable[[], None],
) -> bool:
    """Create missing accounts (and, when ``full``, missing subaddresses); True if any."""
    count = await wallet.account_count()
    extended = False
    if count <= max(accounts):
        log.warning(
            "the wallet has %d accounts but a store uses account %d (restored wallet?): "
            "creating them and rescanning",
            count,
            max(accounts),
        )
        extending()
        while count <= max(accounts):
            count = await wallet.create_account("xmrgate store") + 1
        extended = full = True
    if full:
        highest_by_account = await source.highest_by_account()
        short: list[int] = []
        for account in sorted(accounts):
            highest = highest_by_account.get(account, 0)
            if highest > 0 and not await wallet.has_subaddress(highest, account=account):
                extending()
                short.append(account)
                last = max(i for _, i in await wallet.create_addresses(1, account=account))
                while last < highest:
                    batch = min(MAX_BATCH, highest - last)
                    created = await wallet.create_addresses(batch, account=account)
                    last = max(i for _, i in created)
        if short:
            # One line for them all (a restore can leave every store's account short).
            log.warning(
                "the subaddress tables of %d store accounts did not reach the highest index "
                "handed out (accounts %s): extended",
                len(short),
                ", ".join(map(str, short[:10])) + (" ..." if len(short) > 10 else ""),
            )
            extended = True
    return extended
