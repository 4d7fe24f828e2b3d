"""The optional links to monerod that make sync cheaper and sooner.

``--daemon-address``: the sync tick's wallet is wrapped in a ``RefreshGate`` that asks
the daemon whether anything changed before refreshing, and the loop ticks every
second instead of every poll. ``--daemon-zmq``: monerod's announcements wake the loop
at once. Without either, the loop refreshes the wallet every ``--poll-frequency``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xmrgate.adapters.daemon_rpc import DaemonClient
from xmrgate.config import Settings
from xmrgate.core.sync import SyncWallet
from xmrgate.core.sync_gate import CHECK_EVERY, RefreshGate

if TYPE_CHECKING:
    from xmrgate.adapters.daemon_zmq import DaemonAnnouncements


@dataclass
class ChainSignals:
    """What the sync loop learns from monerod directly, if the operator allows it."""

    wallet: SyncWallet
    interval: float
    gate: RefreshGate | None = None
    daemon: DaemonClient | None = None
    announcements: DaemonAnnouncements | None = None
    zmq_url: str | None = None

    @classmethod
    def build(cls, settings: Settings, wallet: SyncWallet) -> ChainSignals:
        """The sync loop's wallet (gated with a daemon address) and its interval."""
        if not settings.daemon_address:
            return cls(wallet, settings.poll_frequency, zmq_url=settings.daemon_zmq)
        daemon = DaemonClient(settings.daemon_address)
        gate = RefreshGate(wallet, daemon)
        interval = min(settings.poll_frequency, CHECK_EVERY)
        return cls(gate, interval, gate=gate, daemon=daemon, zmq_url=settings.daemon_zmq)

    def listen(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` on every announcement of ``--daemon-zmq`` (nothing without it)."""
        if self.zmq_url:
            # pyzmq (about 3 MB resident: libzmq, libsodium, libstdc++) is imported only
            # by a gateway given --daemon-zmq.
            from xmrgate.adapters.daemon_zmq import DaemonAnnouncements

            self.announcements = DaemonAnnouncements(self.zmq_url, wake)

    async def run(self, stop: asyncio.Event) -> None:
        """Listen to the announcements until ``stop`` (returns at once without them)."""
        if self.announcements is not None:
            await self.announcements.run(stop)

    async def aclose(self) -> None:
        """Close the daemon's HTTP connections."""
        if self.daemon is not None:
            await self.daemon.aclose()
