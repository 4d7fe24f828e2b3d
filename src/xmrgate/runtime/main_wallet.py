"""The main wallet's parts: its clients, its identity guard, its checks and its sync.

Shared by every store on one of its accounts (the default store's account 0 among
them): built once, before the stores, by ``runtime/container.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.identity import SqlIdentityStore
from xmrgate.adapters.store.payments import SYNC_STATE_ID
from xmrgate.adapters.store.stores_accounts import SqlStoreAccounts
from xmrgate.adapters.store.sync_health import SqlSyncHealth
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.adapters.wallet_rpc import WalletClient
from xmrgate.config import Settings
from xmrgate.core.observer import Observer
from xmrgate.core.sync import SyncEngine
from xmrgate.core.wallet_checks import WalletChecks
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import PROBE_TIMEOUT, WalletIdentity
from xmrgate.runtime.chain_signals import ChainSignals


@dataclass
class MainWallet:
    """The main wallet-rpc and what watches it."""

    wallet: WalletClient
    # /health probes on a client of its own: it can never take sync's connections.
    probe: WalletClient
    identity: WalletIdentity
    identity_store: SqlIdentityStore
    # View-only or full: detected at start and after reopens, asked again per payout.
    mode: WalletMode
    checks: WalletChecks
    sync: SyncEngine
    # With --daemon-address the tick refreshes the wallet only when something changed.
    signals: ChainSignals

    async def aclose(self) -> None:
        """Release the clients' connections."""
        await self.wallet.aclose()
        await self.probe.aclose()
        await self.signals.aclose()


def build_main_wallet(
    settings: Settings, db: Database, observer: Observer, on_events: Callable[[], None]
) -> MainWallet:
    """The main wallet's parts from the settings; ``on_events`` wakes the callbacks."""

    def client(timeout: float) -> WalletClient:
        return WalletClient(
            settings.rpc_address,
            username=settings.rpc_username,
            password=settings.rpc_password.get_secret_value() if settings.rpc_password else None,
            timeout=timeout,
            observe=observer.wallet_call,
        )

    wallet = client(settings.wallet_timeout)
    identity = WalletIdentity()
    identity_store = SqlIdentityStore(db)
    sync_store = SqlSyncStore(db)
    mode = WalletMode(wallet, identity)
    checks = WalletChecks(
        wallet,
        identity_store,
        identity,
        SqlAddressPool(db),
        sync_store.rewind_to_oldest_request,
        mode=mode,
        accounts=SqlStoreAccounts(db),
        accounts_wallet=wallet,
        full_every=settings.lookahead_check_interval,
        observer=observer,
    )
    signals = ChainSignals.build(settings, wallet)
    sync = SyncEngine(
        sync_store,
        signals.wallet,
        zero_conf=settings.zero_conf,
        reorg_margin=settings.reorg_margin,
        on_events=on_events,
        # Before every tick: the right wallet, with a subaddress table that reaches
        # every index we handed out (checked again after each reopen).
        may_tick=checks.before_tick,
        tick_failed=checks.tick_failed,
        observer=observer,
        health=SqlSyncHealth(db, SYNC_STATE_ID),
    )
    signals.listen(sync.wake)
    return MainWallet(
        wallet, client(PROBE_TIMEOUT), identity, identity_store, mode, checks, sync, signals
    )
