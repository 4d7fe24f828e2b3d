"""The concrete objects of one gateway process, built once from Settings.

This is the only place that knows which adapter implements which port: it builds
the wallet client, the stores and the callback sender, hands them to the use cases
of ``core/``, and gathers those in the ``Gateway`` that the web layer calls.
``runtime/supervisor.py`` runs the loops; ``runtime/app.py`` builds what the CLI serves.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from xmrgate.adapters.callback_http import CallbackUrlGuard, Destinations, HttpCallbackSender
from xmrgate.adapters.metrics import PrometheusMetrics
from xmrgate.adapters.rate_metrics import RateCollector
from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.idempotency import IdempotencyStore
from xmrgate.adapters.store.identity import SqlIdentityStore
from xmrgate.adapters.store.links import SqlLinkStore
from xmrgate.adapters.store.listing import SqlListing
from xmrgate.adapters.store.outbox import OutboxStore
from xmrgate.adapters.store.overview import OverviewStore
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.payouts import PayoutStore
from xmrgate.adapters.store.received import ReceivedStore
from xmrgate.adapters.store.refunds import SqlRefundStore
from xmrgate.adapters.store.retention import RetentionStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.stores_accounts import SqlStoreAccounts
from xmrgate.adapters.store.sync_store import SqlSyncStore
from xmrgate.adapters.store.unmatched import SqlUnmatched
from xmrgate.adapters.store_wallet_probe import WalletRpcProbe
from xmrgate.adapters.wallet_rpc import WalletClient
from xmrgate.config import Settings
from xmrgate.core.address_pool import AddressPool, Labeler
from xmrgate.core.callbacks import CallbackWorker, RetryPolicy
from xmrgate.core.gateway import Gateway
from xmrgate.core.idempotency import Idempotency
from xmrgate.core.invoices import Invoices
from xmrgate.core.links import Links
from xmrgate.core.observer import NO_OBSERVER, Observer
from xmrgate.core.overview import Overview
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.payouts import Payouts
from xmrgate.core.ports import UrlGuard
from xmrgate.core.received import ReceivedPerDay
from xmrgate.core.refunds import Refunds
from xmrgate.core.store_gateways import StoreGateways
from xmrgate.core.stores import StoreAdmin
from xmrgate.core.sync import SyncEngine
from xmrgate.core.unmatched import UnmatchedReceipts
from xmrgate.core.wallet_checks import WalletChecks
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import (
    PROBE_TIMEOUT,
    WalletIdentity,
    WalletStatus,
)
from xmrgate.domain.api_keys import parse_api_keys
from xmrgate.domain.stores import DEFAULT_STORE
from xmrgate.runtime.chain_signals import ChainSignals
from xmrgate.runtime.rates import Rates, build_rates
from xmrgate.runtime.read_cache import ReadCache
from xmrgate.runtime.store_cli import MainWalletAccounts
from xmrgate.runtime.store_units import MainWalletParts, StoreUnit, StoreUnitFactory

log = logging.getLogger(__name__)


@dataclass
class Services:
    """Everything a running gateway is made of."""

    settings: Settings
    db: Database
    wallet: WalletClient
    payments: PaymentStore
    outbox: OutboxStore
    payouts: PayoutStore
    sync: SyncEngine
    callbacks: CallbackWorker
    callback_sender: HttpCallbackSender
    probe_wallet: WalletClient
    url_guard: UrlGuard
    gateway: Gateway
    retention: RetentionStore
    # The requests payment links made and nobody paid, pruned by the housekeeping.
    link_requests: SqlLinkStore
    sync_store: SqlSyncStore
    pool_store: SqlAddressPool
    address_pool: AddressPool
    labeler: Labeler
    wallet_checks: WalletChecks
    identity_store: SqlIdentityStore
    signals: ChainSignals
    reads: ReadCache
    stores: StoreGateways
    public_gateway: Gateway
    # Each non-default store's pool, labeler and own wallet, by store id (started by
    # the supervisor, also for stores created later: ``runtime/store_units.py``).
    store_units: dict[str, StoreUnit]
    # Fiat prices' exchange rates (None: --rate-currencies is empty).
    rates: Rates | None = None

    @classmethod
    def build(cls, settings: Settings) -> Services:
        """Create (but do not start) every part from the settings."""
        db = Database(settings.database_url())
        metrics = PrometheusMetrics() if settings.metrics else None
        observer: Observer = metrics or NO_OBSERVER
        wallet = WalletClient(
            settings.rpc_address,
            username=settings.rpc_username,
            password=settings.rpc_password.get_secret_value() if settings.rpc_password else None,
            timeout=settings.wallet_timeout,
            observe=observer.wallet_call,
        )
        outbox = OutboxStore(db)
        # One resolve-and-check for both: what POST /receive accepts is what is delivered.
        destinations = Destinations(settings.callback_allow_entries)
        url_guard = CallbackUrlGuard(destinations)
        callback_sender = HttpCallbackSender(
            destinations,
            timeout=settings.callback_timeout,
            max_connections=settings.callback_concurrency * 2,
        )
        # Filled in below: the callback worker signs with the secret of each event's store.
        registry: list[StoreGateways] = []
        worker = CallbackWorker(
            outbox,
            callback_sender,
            policy=RetryPolicy(
                base=settings.callback_retry_base,
                max_interval=settings.callback_retry_max_interval,
                give_up_after=settings.callback_retry_for,
            ),
            secret=(
                settings.callback_secret.get_secret_value().encode()
                if settings.callback_secret
                else None
            ),
            timeout=settings.callback_timeout,
            concurrency=settings.callback_concurrency,
            observer=observer,
            secret_of=lambda store_id: registry[0].secret_of(store_id),
        )
        rates = build_rates(settings, db)
        if rates is not None and metrics is not None:
            metrics.add_collector(RateCollector(rates.book))
        identity = WalletIdentity()
        identity_store = SqlIdentityStore(db)
        sync_store = SqlSyncStore(db)
        pool_store = SqlAddressPool(db)
        labeler = Labeler(wallet)
        # View-only or full: detected at start and after reopens, asked again per payout.
        wallet_mode = WalletMode(wallet, identity)
        wallet_checks = WalletChecks(
            wallet,
            identity_store,
            identity,
            pool_store,
            sync_store.rewind_to_oldest_request,
            mode=wallet_mode,
            accounts=SqlStoreAccounts(db),
            accounts_wallet=wallet,
        )
        address_pool = AddressPool(
            wallet,
            pool_store,
            size=settings.address_pool_size,
            low_water=min(settings.address_pool_low_water, settings.address_pool_size),
            wallet_ok=wallet_checks.wallet_is_ours,
            wallet_down=identity.fresh_failure,
        )
        # With --daemon-address the tick refreshes the wallet only when something changed.
        signals = ChainSignals.build(settings, wallet)
        sync = SyncEngine(
            sync_store,
            signals.wallet,
            zero_conf=settings.zero_conf,
            reorg_margin=settings.reorg_margin,
            on_events=worker.wake,
            # Before every tick: the right wallet, with a subaddress table that reaches
            # every index we handed out (checked again after each reopen).
            may_tick=wallet_checks.before_tick,
            tick_failed=wallet_checks.tick_failed,
            observer=observer,
        )
        signals.listen(sync.wake)
        payments = PaymentStore(db)
        # PostgreSQL: GET /receive from memory until a trigger's NOTIFY says it changed.
        reads = ReadCache.build(settings, payments)
        operator_keys = (
            parse_api_keys(settings.api_keys.get_secret_value()) if settings.api_keys else []
        )

        async def stores_changed() -> None:
            await registry[0].changed()

        # A new account only while wallet-rpc has this database's wallet open.
        store_admin = StoreAdmin(
            SqlStores(db),
            MainWalletAccounts(wallet, identity_store),
            stores_changed,
            # A store's own wallet: asked which wallet it holds, never the main one.
            wallets=WalletRpcProbe(),
            main_wallet=identity_store.remembered,
        )
        idempotency = Idempotency(IdempotencyStore(db, settings.idempotency_ttl))
        payouts = PayoutStore(db)
        # /health probes on a client of its own: it can never take sync's connections.
        probe_wallet = WalletClient(
            settings.rpc_address,
            username=settings.rpc_username,
            password=settings.rpc_password.get_secret_value() if settings.rpc_password else None,
            timeout=PROBE_TIMEOUT,
            observe=observer.wallet_call,
        )
        wallet_status = WalletStatus(
            wallet, probe_wallet, db.ping, settings.database_kind, identity
        )
        default_payouts = Payouts(
            wallet,
            payouts,
            priority=settings.transfer_priority,
            timeout=settings.transfer_timeout,
            require_wallet=identity.require_usable,
            mode=wallet_mode,
        )
        default_requests = PaymentRequests(
            wallet,
            reads.for_store(payments, DEFAULT_STORE),
            outbox,
            url_guard,
            wake_callbacks=worker.wake,
            require_wallet=identity.require_usable,
            refuse_wallet_problem=identity.refuse_known_problem,
            pool=pool_store if settings.address_pool_size else None,
            pool_used=address_pool.wake,
            pool_refilled=address_pool.next_round,
            label_later=labeler.label_later,
            defaults=lambda: registry[0].defaults(DEFAULT_STORE),
            pricing=None if rates is None else rates.book,
            rate_lock=int(settings.rate_lock),
            starting=lambda: not identity.ready.is_set(),
        )
        gateway = Gateway(
            payment_requests=default_requests,
            payouts=default_payouts,
            idempotency=idempotency,
            wallet_status=wallet_status,
            identity=identity,
            invoices=Invoices(SqlListing(db, DEFAULT_STORE), SqlListing(db, DEFAULT_STORE)),
            unmatched=UnmatchedReceipts(SqlUnmatched(db, DEFAULT_STORE)),
            api_keys=operator_keys,
            overview=Overview(
                OverviewStore(db, with_pool=settings.address_pool_size > 0),
                wallet_status,
                probe_wallet,
                metrics,
                # The daemon's height as the sync tick last read it (--daemon-address).
                daemon=signals.daemon,
            ),
            observer=observer,
            received=ReceivedPerDay(ReceivedStore(db, DEFAULT_STORE)),
            stores=store_admin,
            rates=None if rates is None else rates.book,
            refunds=Refunds(
                SqlRefundStore(db, DEFAULT_STORE),
                default_payouts,
                wallet,
                pricing=None if rates is None else rates.book,
                auto_send=settings.refund_auto_send,
                wake_callbacks=worker.wake,
            ),
            links=Links(
                SqlLinkStore(db, DEFAULT_STORE),
                default_requests,
                url_guard,
                store_id=DEFAULT_STORE,
                pricing=None if rates is None else rates.book,
                currencies=() if rates is None else rates.book.currencies,
                rate_lock=int(settings.rate_lock),
            ),
        )

        factory = StoreUnitFactory(
            settings=settings,
            db=db,
            reads=reads,
            outbox_store=outbox,
            url_guard=url_guard,
            worker=worker,
            idempotency=idempotency,
            observer=observer,
            operator_keys=operator_keys,
            admin=store_admin,
            main=MainWalletParts(wallet, probe_wallet, identity, wallet_mode, wallet_checks),
            defaults=lambda store_id: registry[0].defaults(store_id),
            rates=None if rates is None else rates.book,
        )
        registry.append(
            StoreGateways(
                SqlStores(db),
                gateway,
                factory.build,
                operator_keys=operator_keys,
                default_secret=(
                    settings.callback_secret.get_secret_value().encode()
                    if settings.callback_secret
                    else None
                ),
                # The probe's client: short timeouts, never sync's connections.
                account_address=probe_wallet.account_address,
            )
        )
        # The checkout page finds a request by its address, whatever its store.
        public_gateway = dataclasses.replace(
            gateway,
            payment_requests=PaymentRequests(
                wallet, reads.for_store(PaymentStore(db, None), None), outbox, url_guard
            ),
        )
        return cls(
            settings=settings,
            db=db,
            wallet=wallet,
            payments=payments,
            outbox=outbox,
            payouts=payouts,
            sync=sync,
            callbacks=worker,
            callback_sender=callback_sender,
            probe_wallet=probe_wallet,
            url_guard=url_guard,
            gateway=gateway,
            retention=RetentionStore(db, settings.retention),
            link_requests=SqlLinkStore(db, DEFAULT_STORE),
            sync_store=sync_store,
            pool_store=pool_store,
            address_pool=address_pool,
            labeler=labeler,
            wallet_checks=wallet_checks,
            identity_store=identity_store,
            signals=signals,
            reads=reads,
            stores=registry[0],
            public_gateway=public_gateway,
            store_units=factory.units,
            rates=rates,
        )
