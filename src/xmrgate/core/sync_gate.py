"""Refresh the wallet only when something can have changed.

Of a 140 ms sync tick, ~134 ms are wallet-rpc waiting on monerod: ``refresh`` (~90 ms)
and ``get_transfers`` with the pool (~45 ms) (docs/benchmarks.md). What they return can
only change when the daemon's chain or pool changes, or when the wallet itself moves
(its own background refresh, a restart on an older file). ``RefreshGate`` wraps the
tick's wallet: before refreshing it asks the daemon (``--daemon-address``, calls of
under a millisecond) for its top block, pool and pool double spends, and the wallet for
its height. When all equal what the last full refresh saw, the wallet is not refreshed
and the tick gets the transfers that refresh returned; the tick still reconciles them,
so everything that depends on the clock (expiry, unlock times) is decided as before.

A full refresh still happens at least every ``full_every`` seconds, for what neither
the daemon nor the wallet's height shows (a wallet changed behind our back), and on
every tick while the daemon does not answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from xmrgate.core.sync import SyncWallet
from xmrgate.domain.errors import XmrgateError

log = logging.getLogger(__name__)

#: A full refresh at least this often (seconds), whatever the daemon says.
FULL_REFRESH_EVERY = 60.0
#: With a daemon to ask, the sync loop checks this often (seconds) at most: a check
#: that finds nothing new costs a few milliseconds, so callbacks need not wait a poll.
CHECK_EVERY = 1.0


@dataclass(frozen=True, slots=True)
class ChainState:
    """What the daemon holds that can change a wallet's incoming transfers."""

    height: int
    top_hash: str
    pool: frozenset[str]
    double_spends: int


class ChainWatch(Protocol):
    """The daemon, asked cheaply (``adapters/daemon_rpc.py``)."""

    async def chain_state(self) -> ChainState:
        """Its chain's top and its pool; raises ``XmrgateError`` when it cannot tell."""
        ...


class RefreshGate:
    """A ``SyncWallet`` that skips ``refresh`` and ``get_transfers`` when nothing changed."""

    def __init__(
        self,
        wallet: SyncWallet,
        chain: ChainWatch,
        *,
        full_every: float = FULL_REFRESH_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wallet = wallet
        self._chain = chain
        self._full_every = full_every
        self._clock = clock
        # (daemon state read before the last full refresh, wallet height after it)
        self._seen: tuple[ChainState, int] | None = None
        self._full_at = 0.0
        self._state: ChainState | None = None  # read by the current tick
        self._skipping = False
        self._cache: tuple[tuple[int, int], list[dict[str, Any]]] | None = None
        self._daemon_down = False
        #: Counters for logs, tests and benchmarks.
        self.refreshes = 0
        self.skipped = 0

    async def refresh(self) -> None:
        """Refresh the wallet unless the daemon and the wallet are as the last refresh left them."""
        self._state = await self._chain_state()
        height = await self._wallet.get_height()
        fresh = self._clock() - self._full_at < self._full_every
        self._skipping = self._state is not None and fresh and self._seen == (self._state, height)
        if self._skipping:
            self.skipped += 1
            return
        await self._wallet.refresh()
        self.refreshes += 1

    async def get_height(self) -> int:
        """The wallet's height."""
        return await self._wallet.get_height()

    async def incoming_transfers(self, min_height: int, max_height: int) -> list[dict[str, Any]]:
        """The wallet's answer, or the last one when nothing changed since it was given."""
        window = (min_height, max_height)
        if self._skipping and self._cache is not None and self._cache[0] == window:
            return list(self._cache[1])
        raw = await self._wallet.incoming_transfers(min_height, max_height)
        self._cache = (window, raw)
        if not self._skipping:
            # The daemon state read BEFORE this refresh: a block that came meanwhile
            # makes the next check differ, so it is never skipped.
            self._seen = (self._state, max_height) if self._state is not None else None
            self._full_at = self._clock()
        return list(raw)

    async def _chain_state(self) -> ChainState | None:
        try:
            state = await self._chain.chain_state()
        except XmrgateError as exc:
            if not self._daemon_down:
                log.warning("daemon not answering (%s): refreshing the wallet every tick", exc)
            self._daemon_down = True
            return None
        if self._daemon_down:
            log.info("daemon answering again: refreshing the wallet only on changes")
            self._daemon_down = False
        return state
