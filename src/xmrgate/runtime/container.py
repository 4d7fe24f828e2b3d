"""The composition root: the parts of one gateway process, built once from Settings.

This is the only place that knows which adapter implements which port. It reads as
the list of parts, each built once from those above it, no part waiting for a later
one: the database and metrics; the callbacks' sender; the stores as last read (the
callback worker signs with a store's secret); the worker; the fiat rates; the main
wallet; the read cache; then ONE factory builds every store's Gateway, the default
store's included (``runtime/store_units.py``), and the administration of stores
tells the stores' registry when it changed something. ``runtime/supervisor.py`` runs
the loops; ``runtime/app.py`` builds what the CLI serves.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass

from xmrgate.adapters.callback_http import CallbackUrlGuard, Destinations, HttpCallbackSender
from xmrgate.adapters.metrics import PrometheusMetrics
from xmrgate.adapters.rate_metrics import RateCollector
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.greenfield_announcements import SqlAnnouncements, SqlWebhookSecrets
from xmrgate.adapters.store.greenfield_invoices import SqlGreenfieldInvoices
from xmrgate.adapters.store.idempotency import IdempotencyStore
from xmrgate.adapters.store.links import SqlLinkStore
from xmrgate.adapters.store.outbox import OutboxStore
from xmrgate.adapters.store.overview import OverviewStore
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.retention import RetentionStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store_wallet_probe import WalletRpcProbe
from xmrgate.config import Settings
from xmrgate.core.callbacks import CallbackWorker, RetryPolicy
from xmrgate.core.gateway import Gateway
from xmrgate.core.greenfield_announcer import GreenfieldAnnouncer, StoresInvoiceReader
from xmrgate.core.greenfield_invoices import GreenfieldInvoices
from xmrgate.core.idempotency import Idempotency
from xmrgate.core.observer import NO_OBSERVER, Observer
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.store_directory import StoreDirectory
from xmrgate.core.store_gateways import StoreGateways
from xmrgate.core.stores import StoreAdmin
from xmrgate.domain.api_keys import parse_api_keys
from xmrgate.domain.stores import DEFAULT_STORE
from xmrgate.runtime.main_wallet import MainWallet, build_main_wallet
from xmrgate.runtime.rates import Rates, build_rates
from xmrgate.runtime.read_cache import ReadCache
from xmrgate.runtime.store_cli import MainWalletAccounts
from xmrgate.runtime.store_units import OverviewParts, StoreUnit, StoreUnitFactory


@dataclass
class Services:
    """Everything a running gateway is made of."""

    settings: Settings
    db: Database
    main: MainWallet
    callbacks: CallbackWorker
    callback_sender: HttpCallbackSender
    reads: ReadCache
    # Every store's Gateway (the default store's first) and the stores as last read.
    stores: StoreGateways
    store_admin: StoreAdmin
    # Each store's pool, labeler and own wallet, by store id (started by the
    # supervisor, also for stores created later).
    store_units: dict[str, StoreUnit]
    # The checkout and the other customers' pages find a request in any store.
    public_gateway: Gateway
    retention: RetentionStore
    # The requests payment links made and nobody paid, pruned by the housekeeping.
    link_requests: SqlLinkStore
    # Fiat prices' exchange rates (None: --rate-currencies is empty).
    rates: Rates | None = None
    # Tells the stores' Greenfield webhooks of their invoices' changes.
    announcer: GreenfieldAnnouncer | None = None

    @property
    def gateway(self) -> Gateway:
        """The default store's Gateway."""
        return self.stores.default

    @classmethod
    def build(cls, settings: Settings) -> Services:
        """Create (but do not start) every part from the settings."""
        db = Database(settings.database_url())
        metrics = PrometheusMetrics() if settings.metrics else None
        observer: Observer = metrics or NO_OBSERVER
        # One resolve-and-check for both: what POST /receive accepts is what is delivered.
        destinations = Destinations(settings.callback_allow_entries)
        url_guard = CallbackUrlGuard(destinations)
        callback_sender = HttpCallbackSender(
            destinations,
            timeout=settings.callback_timeout,
            max_connections=settings.callback_concurrency * 2,
        )
        default_secret = (
            settings.callback_secret.get_secret_value().encode()
            if settings.callback_secret
            else None
        )
        operator_keys = (
            parse_api_keys(settings.api_keys.get_secret_value()) if settings.api_keys else []
        )
        directory = StoreDirectory(
            SqlStores(db), operator_keys=operator_keys, default_secret=default_secret
        )
        outbox = OutboxStore(db)
        worker = CallbackWorker(
            outbox,
            callback_sender,
            policy=RetryPolicy(
                base=settings.callback_retry_base,
                max_interval=settings.callback_retry_max_interval,
                give_up_after=settings.callback_retry_for,
            ),
            secret=default_secret,
            timeout=settings.callback_timeout,
            concurrency=settings.callback_concurrency,
            observer=observer,
            secret_of=directory.secret_of,
            # A Greenfield webhook's delivery: signed with that webhook's secret.
            webhooks=SqlWebhookSecrets(db),
        )
        # Set by a sync tick that wrote events or changed transfers (a payment seen in the
        # pool writes no event without a callback_url): the Greenfield invoices are
        # read again at once, so each step of a payment is announced in its order.
        invoices_moved = asyncio.Event()
        payments = PaymentStore(db)
        # PostgreSQL: GET /receive from memory until a trigger's NOTIFY says it changed.
        reads = ReadCache.build(settings, payments)

        def events_written() -> None:
            # This process's tick just committed: its cache forgets now, not when the
            # NOTIFY comes back a few ms later, or the announcer woken here would read
            # the state before the tick and wait its next round (5 s) to see it.
            reads.forget()
            worker.wake()
            invoices_moved.set()

        rates = build_rates(settings, db)
        if rates is not None and metrics is not None:
            metrics.add_collector(RateCollector(rates.book))
        main = build_main_wallet(settings, db, observer, events_written)
        factory = StoreUnitFactory(
            settings=settings,
            db=db,
            reads=reads,
            outbox_store=outbox,
            url_guard=url_guard,
            worker=worker,
            idempotency=Idempotency(
                IdempotencyStore(db, settings.idempotency_ttl, settings.idempotency_lease)
            ),
            observer=observer,
            operator_keys=operator_keys,
            main=main,
            overview=OverviewParts(
                OverviewStore(db, with_pool=settings.address_pool_size > 0), metrics
            ),
            defaults=directory.defaults,
            confirmations=directory.confirmations,
            on_events=events_written,
            rates=None if rates is None else rates.book,
        )
        # The probe's client: short timeouts, never sync's connections.
        stores = StoreGateways(directory, factory.build, account_address=main.probe.account_address)
        # A new account only while wallet-rpc has this database's wallet open.
        store_admin = StoreAdmin(
            SqlStores(db),
            MainWalletAccounts(main.wallet, main.identity_store),
            stores.changed,
            # A store's own wallet: asked which wallet it holds, never the main one.
            wallets=WalletRpcProbe(),
            main_wallet=main.identity_store.remembered,
        )
        # The customers' pages: a request by its address, an invoice by its id (/i/...).
        any_store = PaymentRequests(
            main.wallet, reads.for_store(PaymentStore(db, None), None), outbox, url_guard
        )
        public_gateway = dataclasses.replace(
            stores.default,
            payment_requests=any_store,
            greenfield=GreenfieldInvoices(
                SqlGreenfieldInvoices(db, None), any_store, url_guard, store_id=DEFAULT_STORE
            ),
        )
        announcer = GreenfieldAnnouncer(
            SqlAnnouncements(db),
            StoresInvoiceReader(stores),
            delivered=worker.wake,
            wake=invoices_moved,
        )
        return cls(
            settings=settings,
            db=db,
            main=main,
            callbacks=worker,
            callback_sender=callback_sender,
            reads=reads,
            stores=stores,
            store_admin=store_admin,
            store_units=factory.units,
            public_gateway=public_gateway,
            retention=RetentionStore(db, settings.retention),
            link_requests=SqlLinkStore(db, DEFAULT_STORE),
            rates=rates,
            announcer=announcer,
        )
