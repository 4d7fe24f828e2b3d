"""What must hold of the open wallet before anything is synced, created or sent.

At start and before every sync tick: the open wallet is the one this database
belongs to (``verify_identity``). At start and after every reopen (wallet-rpc was
restarted, maybe on a wallet restored from keys): its subaddress table reaches every
index we handed out (``ensure_lookahead``), and whether it is view-only (``WalletMode``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from xmrgate.core.address_pool import AddressPoolRepository, PoolWallet, ensure_lookahead
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import AddressSource, IdentityStore, WalletIdentity, verify_identity


class CheckedWallet(PoolWallet, AddressSource, Protocol):
    """A wallet that names itself, creates subaddresses, and counts its reopens."""

    @property
    def reopens(self) -> int:
        """How often it was opened again after a wallet-rpc restart."""
        ...


class WalletChecks:
    """Identity before every tick; lookahead at start and after each reopen."""

    def __init__(
        self,
        wallet: CheckedWallet,
        identity_store: IdentityStore,
        identity: WalletIdentity,
        pool: AddressPoolRepository,
        rewind_sync: Callable[[], Awaitable[None]],
        mode: WalletMode | None = None,
    ) -> None:
        self._mode = mode
        self._wallet = wallet
        self._identity_store = identity_store
        self._identity = identity
        self._pool = pool
        self._rewind_sync = rewind_sync
        self._reopens_seen: int | None = None

    async def before_tick(self) -> bool:
        """True when the tick may run: the right wallet, with its lookahead in place."""
        if not await verify_identity(self._wallet, self._identity_store, self._identity):
            return False
        if self._wallet.reopens != self._reopens_seen:
            await ensure_lookahead(self._wallet, self._pool, self._rewind_sync)
            if self._mode is not None:
                # A reopened wallet may be another file of the same address (view-only now).
                await self._mode.detect()
            self._reopens_seen = self._wallet.reopens
        return True
