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

The identity and the mode stop the tick when they fail: a tick on the wrong wallet
would credit another wallet's subaddress N to our request N. The lookahead checks do
not: a failure is logged, counted (``Observer.sync_step_failed``) and the tick goes on,
since transfers to the subaddresses the table already holds are still right to credit.
What the skipped check would have found is found late, not lost: a check that failed
after it began to extend the table and before it rewound the sync owes the wallet a
save, a rewind and a rescan, paid before the next check (an extended table is never
seen short again, so nothing else would rewind). Once the sync is rewound nothing is
owed: a rescan that then times out goes on inside wallet-rpc, and asking for another
would only start it again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from xmrgate.core.account_lookahead import (
    AccountsWallet,
    StoreAccountsSource,
    ensure_accounts_lookahead,
)
from xmrgate.core.address_pool import AddressPoolRepository, PoolWallet, ensure_lookahead
from xmrgate.core.observer import MAIN_WALLET, NO_OBSERVER, Observer
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import AddressSource, IdentityStore, WalletIdentity, verify_identity
from xmrgate.domain.errors import WalletRestricted, XmrgateError

log = logging.getLogger(__name__)

# The ``step`` label of a skipped lookahead check.
LOOKAHEAD_STEP = "lookahead"

# Seconds between two checks of every store account's subaddress table (the default of
# ``--lookahead-check-interval``).
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
        full_every: float = FULL_EVERY,
        observer: Observer = NO_OBSERVER,
        wallet_name: str = MAIN_WALLET,
    ) -> None:
        self._full_every = full_every
        self._observer = observer
        self._wallet_name = wallet_name
        # A lookahead check failed after it began to extend the table: save, rewind, rescan.
        self._rescan_owed = False
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
        try:
            await self._lookahead(stale)
        except Exception as exc:
            # Skipped, not fatal: see the module docstring.
            self._observer.sync_step_failed(LOOKAHEAD_STEP, self._wallet_name)
            log.warning(
                "the lookahead check of wallet %s failed (%s); syncing without it",
                self._wallet_name,
                exc.message if isinstance(exc, XmrgateError) else repr(exc),
                exc_info=not isinstance(exc, XmrgateError),
            )
            return True
        self._reopens_seen = self._wallet.reopens
        return True

    async def _lookahead(self, stale: bool) -> None:
        """Account 0's table, then (the main wallet) every store account's; a failure
        after an extension began and before the rewind leaves the rescan owed."""
        extending, rewind = self._note_extending, self._rewind_and_settle
        if self._rescan_owed:
            await self._wallet.save()
            await rewind()
            await self._wallet.rescan()
        if self._accounts is None or self._accounts_wallet is None:
            await ensure_lookahead(self._wallet, self._pool, rewind, extending=extending)
            return
        # Account 0 extended and saved, then the stores' accounts: ONE rescan for all
        # (a restore with stores would otherwise rescan the chain twice).
        account_zero = await ensure_lookahead(
            self._wallet, self._pool, rewind, rescan=False, extending=extending
        )
        # Every account's table at start, after a reopen, after account 0 was short,
        # and every ``full_every`` seconds; the number of accounts (one call) every tick.
        now = self._clock()
        full = (
            stale
            or account_zero
            or self._full_check_at is None
            or now - self._full_check_at >= self._full_every
        )
        await ensure_accounts_lookahead(
            self._accounts_wallet,
            self._accounts,
            rewind,
            full=full,
            extended_before=account_zero,
            extending=extending,
        )
        if full:
            self._full_check_at = now

    def _note_extending(self) -> None:
        self._rescan_owed = True

    async def _rewind_and_settle(self) -> None:
        """Rewind the sync; from then on an extension owes nothing (see the module doc)."""
        await self._rewind_sync()
        self._rescan_owed = False

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
