"""The parts of one store, built once when the store is first read: ONE factory for
every store, the default one included.

The default store is account 0 of the main wallet; it speaks to the main wallet's
client itself (as MoneroPay does: ``GET /transfer`` sees the whole wallet) and its
overview is the gateway's (every store's figures, ``/metrics``). A store on an account
of the main wallet shares the main wallet's client, identity guard, mode and sync; it
gets its own address pool and labeler of its account, its overview its own figures. A
store on its own wallet-rpc gets the whole per-wallet unit: its client (and a probe
client for ``/health``), its identity guard (the primary address recorded when the
store was created), its mode (view-only or full), its lookahead check, its pool, its
sync engine with its own sync_state row and advisory lock. Its trouble stays its own: a
wallet that is down, hung or another wallet stops that store's payouts, subaddresses
and sync only (``runtime/supervisor.py`` runs each unit's loops apart).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from xmrgate.adapters.account_wallet import AccountWallet
from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.greenfield_invoices import SqlGreenfieldInvoices
from xmrgate.adapters.store.greenfield_webhooks import SqlGreenfieldWebhooks
from xmrgate.adapters.store.links import SqlLinkStore
from xmrgate.adapters.store.listing import SqlListing
from xmrgate.adapters.store.payments import SYNC_STATE_ID, PaymentStore
from xmrgate.adapters.store.payouts import PayoutStore
from xmrgate.adapters.store.received import ReceivedStore
from xmrgate.adapters.store.refunds import SqlRefundStore
from xmrgate.adapters.store.sync_health import SqlSyncHealth, SqlSyncTroubles
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.adapters.store.unmatched import SqlUnmatched
from xmrgate.adapters.wallet_rpc import WalletClient
from xmrgate.config import Settings
from xmrgate.core.address_pool import AddressPool, Labeler
from xmrgate.core.callbacks import CallbackWorker
from xmrgate.core.gateway import Gateway
from xmrgate.core.greenfield_invoices import GreenfieldInvoices
from xmrgate.core.greenfield_webhooks import GreenfieldWebhooks
from xmrgate.core.idempotency import Idempotency
from xmrgate.core.invoices import Invoices
from xmrgate.core.links import Links
from xmrgate.core.observer import Observer
from xmrgate.core.overview import FactsOfStore, FactsStore, MetricsExporter, Overview
from xmrgate.core.payment_requests import PaymentRequests, StoreDefaults
from xmrgate.core.payouts import Payouts
from xmrgate.core.ports import UrlGuard, Wallet
from xmrgate.core.rates import RateBook
from xmrgate.core.received import ReceivedPerDay
from xmrgate.core.refunds import Refunds
from xmrgate.core.sync import SyncEngine
from xmrgate.core.unmatched import UnmatchedReceipts
from xmrgate.core.wallet_checks import WalletChecks
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import PROBE_TIMEOUT, WalletIdentity, WalletStatus
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.stores import DEFAULT_STORE, OwnWallet, Store
from xmrgate.runtime.main_wallet import MainWallet
from xmrgate.runtime.read_cache import ReadCache


@dataclass
class OwnWalletParts:
    """The per-wallet unit of a store on its own wallet-rpc."""

    wallet: WalletClient
    probe: WalletClient
    identity: WalletIdentity
    mode: WalletMode
    checks: WalletChecks
    sync: SyncEngine


@dataclass
class StoreUnit:
    """What runs for one store besides its Gateway: its pool, labeler, own wallet."""

    store_id: str
    pool: AddressPool
    labeler: Labeler
    own: OwnWalletParts | None = None


class FixedIdentity:
    """The identity of a store's wallet: recorded when the store was created."""

    def __init__(self, primary_address: str) -> None:
        self._primary = primary_address

    async def remembered(self) -> str | None:
        """The store's wallet's primary address."""
        return self._primary

    async def remember(self, address: str) -> str:
        """Nothing to record: the store was created with its wallet's address."""
        return self._primary


@dataclass
class OverviewParts:
    """What every store's overview reads: the database's facts (one statement for the
    gateway, narrowed to a store) and, for the default store, the metrics."""

    facts: FactsStore
    metrics: MetricsExporter | None


@dataclass
class StoreUnitFactory:
    """Builds each store's Gateway and unit; shared parts are given once."""

    settings: Settings
    db: Database
    reads: ReadCache
    outbox_store: object
    url_guard: UrlGuard
    worker: CallbackWorker
    idempotency: Idempotency
    observer: Observer
    operator_keys: list[ApiKey]
    main: MainWallet
    overview: OverviewParts
    defaults: Callable[[str], StoreDefaults]
    # The confirmations of a store's default speed policy, as the stores were last read
    # (a PATCH takes effect without a restart, as ``defaults`` does).
    confirmations: Callable[[str], int]
    # A sync tick of a store on its own wallet changed transfers or wrote events: the
    # callbacks and the Greenfield announcer are woken (as the main wallet's ticks do).
    on_events: Callable[[], None]
    # One rate book for every store (a rate does not depend on the shop).
    rates: RateBook | None = None
    units: dict[str, StoreUnit] = field(default_factory=dict)

    def build(self, store: Store) -> Gateway:
        """The store's Gateway; its unit is kept in ``units`` for the supervisor."""
        if store.own_wallet is not None:
            own = self._own_wallet(store.id, store.own_wallet)
            wallet: Wallet = own.wallet
            probe, identity, mode = own.probe, own.identity, own.mode
            wallet_ok: Callable[[], Awaitable[bool]] = own.checks.wallet_is_ours
            pool_wallet: WalletClient | AccountWallet = own.wallet
        else:
            own = None
            if store.id == DEFAULT_STORE:
                # The whole wallet, as MoneroPay sees it (its account 0 receives).
                wallet, pool_wallet = self.main.wallet, self.main.wallet
            else:
                account = AccountWallet(self.main.wallet, store.account_index)
                wallet, pool_wallet = account, account
            probe, identity, mode = self.main.probe, self.main.identity, self.main.mode
            wallet_ok = self.main.checks.wallet_is_ours
        s = self.settings
        own_pool = SqlAddressPool(self.db, store.id)
        pool = AddressPool(
            pool_wallet,
            own_pool,
            size=s.address_pool_size,
            low_water=min(s.address_pool_low_water, s.address_pool_size),
            wallet_ok=wallet_ok,
            wallet_down=identity.fresh_failure,
        )
        labeler = Labeler(pool_wallet)
        self.units[store.id] = StoreUnit(store.id, pool, labeler, own)
        store_id = store.id
        payouts = Payouts(
            wallet,
            PayoutStore(self.db, store_id),
            priority=s.transfer_priority,
            timeout=s.transfer_timeout,
            require_wallet=identity.require_usable,
            mode=mode,
        )
        requests = PaymentRequests(
            wallet,
            self.reads.for_store(PaymentStore(self.db, store_id), store_id),
            self.outbox_store,  # type: ignore[arg-type]
            self.url_guard,
            wake_callbacks=self.worker.wake,
            require_wallet=identity.require_usable,
            refuse_wallet_problem=identity.refuse_known_problem,
            pool=own_pool if s.address_pool_size else None,
            pool_used=pool.wake,
            pool_refilled=pool.next_round,
            label_later=labeler.label_later,
            defaults=lambda: self.defaults(store_id),
            pricing=self.rates,
            rate_lock=int(s.rate_lock),
            starting=lambda: not identity.ready.is_set(),
        )
        wallet_status = WalletStatus(
            wallet,
            probe,
            self.db.ping,
            s.database_kind,
            identity,
            # /health is public: the store, not its wallet-rpc's URL, is named.
            down_message=None
            if own is None
            else f"the own wallet-rpc of store '{store_id}' does not answer",
            # The gateway's /health (the default store's) names every failing wallet.
            sync_troubles=SqlSyncTroubles(self.db, self._sync_id_of(store)).troubles,
        )
        return Gateway(
            payment_requests=requests,
            payouts=payouts,
            idempotency=self.idempotency,
            wallet_status=wallet_status,
            overview=self._overview(store, wallet_status, probe),
            identity=identity,
            invoices=Invoices(SqlListing(self.db, store_id), SqlListing(self.db, store_id)),
            unmatched=UnmatchedReceipts(SqlUnmatched(self.db, store_id)),
            api_keys=self.operator_keys,
            observer=self.observer,
            received=ReceivedPerDay(ReceivedStore(self.db, store_id)),
            store_id=store_id,
            rates=self.rates,
            refunds=Refunds(
                SqlRefundStore(self.db, store_id),
                payouts,
                wallet,
                pricing=self.rates,
                auto_send=s.refund_auto_send,
                wake_callbacks=self.worker.wake,
            ),
            greenfield=GreenfieldInvoices(
                SqlGreenfieldInvoices(self.db, store_id),
                requests,
                self.url_guard,
                store_id=store_id,
                currencies=() if self.rates is None else self.rates.currencies,
                rate_lock=int(s.rate_lock),
                confirmations=lambda: self.confirmations(store_id),
            ),
            webhooks=GreenfieldWebhooks(
                SqlGreenfieldWebhooks(self.db, store_id), self.url_guard, store_id=store_id
            ),
            links=Links(
                SqlLinkStore(self.db, store_id),
                requests,
                self.url_guard,
                store_id=store_id,
                pricing=self.rates,
                currencies=() if self.rates is None else self.rates.currencies,
                rate_lock=int(s.rate_lock),
            ),
        )

    @staticmethod
    def _sync_id_of(store: Store) -> int | None:
        """Whose sync troubles a store's /health names: every wallet's for the default
        store, else the wallet it receives on."""
        if store.id == DEFAULT_STORE:
            return None
        return SYNC_STATE_ID if store.own_wallet is None else store.own_wallet.wallet_no

    def _overview(self, store: Store, status: WalletStatus, probe: WalletClient) -> Overview:
        """The default store's is the gateway's (every store's figures, /metrics); any
        other store's shows its own figures only, its wallet's synced height."""
        if store.id == DEFAULT_STORE:
            return Overview(
                self.overview.facts,
                status,
                probe,
                self.overview.metrics,
                daemon=self.main.signals.daemon,
            )
        sync_id = SYNC_STATE_ID if store.own_wallet is None else store.own_wallet.wallet_no
        return Overview(
            FactsOfStore(self.overview.facts, store.id, sync_id),
            status,
            probe,
            daemon=self.main.signals.daemon if store.own_wallet is None else None,
        )

    def _own_wallet(self, store_id: str, own: OwnWallet) -> OwnWalletParts:
        s = self.settings

        def client(timeout: float) -> WalletClient:
            return WalletClient(
                own.rpc_address,
                username=own.rpc_username,
                password=own.rpc_password,
                timeout=timeout,
                observe=self.observer.wallet_call,
            )

        wallet = client(s.wallet_timeout)
        identity = WalletIdentity()
        mode = WalletMode(wallet, identity)
        sync_store = SqlSyncStore(self.db, store_id=store_id, sync_id=own.wallet_no)
        checks = WalletChecks(
            wallet,
            FixedIdentity(own.primary_address),
            identity,
            SqlAddressPool(self.db, store_id),
            sync_store.rewind_to_oldest_request,
            mode=mode,
            observer=self.observer,
            wallet_name=store_id,
        )
        sync = SyncEngine(
            sync_store,
            wallet,
            zero_conf=s.zero_conf,
            reorg_margin=s.reorg_margin,
            on_events=self.on_events,
            may_tick=checks.before_tick,
            tick_failed=checks.tick_failed,
            observer=self.observer,
            wallet_name=store_id,
            health=SqlSyncHealth(self.db, own.wallet_no),
        )
        return OwnWalletParts(wallet, client(PROBE_TIMEOUT), identity, mode, checks, sync)
