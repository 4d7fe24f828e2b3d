"""The concrete objects of one gateway process, built once from Settings.

Only the entry points (``create_app``, the CLI) build a ``Services``; everything
else receives the parts it needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

import httpx

from xmrgate.auth import ApiKey, parse_api_keys
from xmrgate.callbacks import CallbackWorker, RetryPolicy
from xmrgate.config import Settings
from xmrgate.errors import XmrgateError
from xmrgate.store.db import Database
from xmrgate.store.idempotency import IdempotencyStore
from xmrgate.store.outbox import OutboxStore
from xmrgate.store.payments import PaymentStore
from xmrgate.store.payouts import PayoutStore
from xmrgate.sync import SyncEngine
from xmrgate.wallet import WalletClient

log = logging.getLogger(__name__)


@dataclass
class WalletState:
    """What we learned from the wallet at start-up."""

    primary_address: str | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Services:
    """Everything a running gateway is made of."""

    settings: Settings
    db: Database
    wallet: WalletClient
    payments: PaymentStore
    outbox: OutboxStore
    payouts: PayoutStore
    idempotency: IdempotencyStore
    sync: SyncEngine
    callbacks: CallbackWorker
    callback_http: httpx.AsyncClient
    wallet_state: WalletState
    api_keys: list[ApiKey] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @classmethod
    def build(cls, settings: Settings) -> Services:
        """Create (but do not start) every part from the settings."""
        db = Database(settings.database_url())
        wallet = WalletClient(
            settings.rpc_address,
            username=settings.rpc_username,
            password=settings.rpc_password.get_secret_value() if settings.rpc_password else None,
            timeout=settings.wallet_timeout,
        )
        outbox = OutboxStore(db)
        callback_http = httpx.AsyncClient(
            follow_redirects=False,
            timeout=settings.callback_timeout,
            limits=httpx.Limits(max_connections=settings.callback_concurrency * 2),
        )
        worker = CallbackWorker(
            outbox,
            callback_http,
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
        )
        sync = SyncEngine(
            db,
            wallet,
            zero_conf=settings.zero_conf,
            reorg_margin=settings.reorg_margin,
            on_events=worker.wake,
        )
        return cls(
            settings=settings,
            db=db,
            wallet=wallet,
            payments=PaymentStore(db),
            outbox=outbox,
            payouts=PayoutStore(db),
            idempotency=IdempotencyStore(db, settings.idempotency_ttl),
            sync=sync,
            callbacks=worker,
            callback_http=callback_http,
            wallet_state=WalletState(),
            api_keys=(
                parse_api_keys(settings.api_keys.get_secret_value()) if settings.api_keys else []
            ),
        )

    async def start(self) -> None:
        """Migrate the schema and start the background loops."""
        await self.db.migrate()
        self.tasks = [
            asyncio.create_task(self._bootstrap_wallet(), name="wallet-bootstrap"),
            asyncio.create_task(self.callbacks.run(self.stop), name="callbacks"),
            asyncio.create_task(self._housekeeping(), name="housekeeping"),
        ]

    async def close(self) -> None:
        """Stop the loops, wait for them, and release connections."""
        self.stop.set()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, timeout=self.settings.callback_timeout + 5)
        await self.callback_http.aclose()
        await self.wallet.aclose()
        await self.db.dispose()

    async def _housekeeping(self, every: float = 3600.0) -> None:
        """Delete expired idempotency keys now and then (claims also ignore expired ones)."""
        while not self.stop.is_set():
            try:
                purged = await self.idempotency.purge_expired()
                if purged:
                    log.info("purged %d expired idempotency keys", purged)
            except XmrgateError as exc:
                log.warning("housekeeping failed: %s", exc.message)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), timeout=every)

    async def _bootstrap_wallet(self) -> None:
        """Open (or create) the wallet, then run the sync loop; retry while wallet-rpc is down."""
        delay = 1.0
        while not self.stop.is_set():
            try:
                await self.wallet.ensure_wallet_open()
                self.wallet_state.primary_address = await self.wallet.primary_address()
                break
            except XmrgateError as exc:
                log.warning(
                    "wallet-rpc at %s not usable yet (%s); retrying in %.0fs",
                    self.settings.rpc_address,
                    exc.message,
                    delay,
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), timeout=delay)
            delay = min(delay * 2, 30.0)
        if self.stop.is_set():
            return
        self.wallet_state.ready.set()
        log.info("wallet ready: primary address %s", self.wallet_state.primary_address)
        await self.sync.run(self.stop, self.settings.poll_frequency)
