"""What must hold of the open wallet before anything is synced, created or sent.

At start and before every sync tick: the open wallet is the one this database
belongs to (``verify_identity``), and its subaddress table reaches every index we
handed out (``ensure_lookahead``: one ``get_address`` call when it does). Every tick,
not only after this process's own reopens: with ``--workers`` another process may
have reopened a restarted wallet-rpc, and a wallet-rpc started with ``--wallet-file``
opens a restored wallet by itself, so no reopen is seen here at all. At start and
after every reopen: whether it is view-only (``WalletMode``).
A wallet-rpc behind ``--restricted-rpc`` refuses what a tick needs: no tick runs, and
its mode is asked again every tick until the flag is gone.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from xmrgate.core.account_lookahead import (
    AccountsWallet,
    StoreAccountsSource,
    ensure_accounts_lookahead,
)
from xmrgate.core.address_pool import AddressPoolRepository, PoolWallet, ensure_lookahead
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import AddressSource, IdentityStore, WalletIdentity, verify_identity
from xmrgate.domain.errors import WalletRestricted, XmrgateError

# Seconds between two checks of every store account's subaddress table.
FULL_EVERY = 60.0


class CheckedWallet(PoolWallet, AddressSource, Protocol):
    """A wallet that names itself, creates subaddresses, and counts its reopens."""

    @property
    def reopens(self) -> int:
        """How often it was opened again after a wallet-rpc restart."""
        ...


class WalletChecks:
    """Identity and lookahead before every tick; the mode at start and after each reopen."""

    def __init__(
        self,
        wallet: CheckedWallet,
        identity_store: IdentityStore,
        identity: WalletIdentity,
        pool: AddressPoolRepository,
        rewind_sync: Callable[[], Awaitable[None]],
        mode: WalletMode | None = None,
        accounts: StoreAccountsSource | None = None,
        accounts_wallet: AccountsWallet | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._mode = mode
        # Stores on accounts of this wallet: their lookahead too (``account_lookahead``).
        self._accounts = accounts
        self._accounts_wallet = accounts_wallet
        self._clock = clock
        self._full_check_at: float | None = None
        self._wallet = wallet
        self._identity_store = identity_store
        self._identity = identity
        self._pool = pool
        self._rewind_sync = rewind_sync
        self._reopens_seen: int | None = None
        self._recheck = False

    async def before_tick(self) -> bool:
        """True when the tick may run: the right wallet, syncable, with its lookahead in place."""
        if not await verify_identity(self._wallet, self._identity_store, self._identity):
            return False
        stale = self._wallet.reopens != self._reopens_seen
        if stale or self._recheck:
            if self._mode is not None:
                # A reopened wallet may be another file of the same address (view-only now),
                # or behind --restricted-rpc, which refuses the lookahead's store: ask first.
                try:
                    await self._mode.detect()
                except WalletRestricted:
                    return False
            self._recheck = False
        if self._accounts is None or self._accounts_wallet is None:
            await ensure_lookahead(self._wallet, self._pool, self._rewind_sync)
        else:
            # Account 0 extended and saved, then the stores' accounts: ONE rescan for all
            # (a restore with stores would otherwise rescan the chain twice).
            account_zero = await ensure_lookahead(
                self._wallet, self._pool, self._rewind_sync, rescan=False
            )
            # Every account's table at start, after a reopen, after account 0 was short,
            # and once a minute; the number of accounts (one call) before every tick.
            now = self._clock()
            full = (
                stale
                or account_zero
                or self._full_check_at is None
                or now - self._full_check_at >= FULL_EVERY
            )
            await ensure_accounts_lookahead(
                self._accounts_wallet,
                self._accounts,
                self._rewind_sync,
                full=full,
                extended_before=account_zero,
            )
            if full:
                self._full_check_at = now
        self._reopens_seen = self._wallet.reopens
        return True

    async def wallet_is_ours(self) -> bool:
        """For the address pool, around each batch: the database's wallet is open and not
        behind --restricted-rpc (a subaddress of another wallet is never handed out)."""
        if not await verify_identity(self._wallet, self._identity_store, self._identity):
            return False
        return self._identity.restricted is None

    def tick_failed(self, exc: XmrgateError) -> None:
        """A tick refused as restricted: wallet-rpc was restarted with --restricted-rpc
        and our wallet still open (no reopen seen), so ask for the mode at the next tick."""
        if isinstance(exc, WalletRestricted):
            self._recheck = True
