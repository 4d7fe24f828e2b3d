"""The loops of one gateway process: wallet bootstrap then sync, callbacks, housekeeping.

``Supervisor.start`` migrates the schema and starts each loop as a task;
``close`` stops them, waits for them, and releases every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

from xmrgate.core.address_pool import first_of
from xmrgate.domain.errors import XmrgateError
from xmrgate.domain.stores import DEFAULT_STORE
from xmrgate.runtime.container import Services
from xmrgate.runtime.store_units import StoreUnit

log = logging.getLogger(__name__)

# How often sent refunds are checked for their block (at most; sooner with a short poll).
REFUNDS_EVERY = 10.0
# Unpaid link requests deleted per statement by the housekeeping.
LINK_PRUNE_BATCH = 500

# Seconds between the starts of two start-up attempts to reach the wallet, at least
# (requests ask for attempts: a flood of them while wallet-rpc is down makes 4 a second).
RETRY_GAP = 0.25
# How soon the pool of a store created at run time starts (its first requests wait
# for the pool's first batch meanwhile).
STORE_UNITS_EVERY = 0.5


class Supervisor:
    """Starts, watches and stops the background loops of one ``Services``."""

    def __init__(self, services: Services, *, housekeeping_every: float = 3600.0) -> None:
        self._services = services
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._housekeeping_every = housekeeping_every
        # The stores whose pool and labeler (and own wallet) run already.
        self._started_units: set[str] = set()

    async def start(self) -> None:
        """Migrate the schema and start the background loops."""
        s = self._services
        await s.db.migrate()
        await s.stores.load()
        self._tasks = [
            asyncio.create_task(s.stores.run(self._stop), name="stores"),
            # Stores on their own wallet start at once, whatever the main wallet does.
            asyncio.create_task(self._store_units(), name="store-units"),
            asyncio.create_task(self._bootstrap_wallet(), name="wallet-bootstrap"),
            asyncio.create_task(s.callbacks.run(self._stop), name="callbacks"),
            asyncio.create_task(self._housekeeping(), name="housekeeping"),
            asyncio.create_task(s.main.signals.run(self._stop), name="daemon-announcements"),
            asyncio.create_task(s.reads.run(self._stop), name="read-cache"),
            asyncio.create_task(self._refunds(), name="refunds"),
        ]
        if s.announcer is not None:
            # Greenfield webhooks: each invoice's changes, once, in order.
            self._spawn(s.announcer.run(self._stop), "greenfield-announcer")
        if s.rates is not None:
            # Fetched from the start, never on a request's path.
            self._spawn(s.rates.book.run(self._stop), "exchange-rates")

    async def close(self) -> None:
        """Stop the loops, wait for them, and release connections."""
        s = self._services
        self._stop.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, timeout=s.settings.callback_timeout + 5)
        # A refund sent at claim time is let finish: cut off, it would stay "sending".
        for gateway in s.stores.built():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    gateway.refunds.settled(), timeout=s.settings.transfer_timeout
                )
        await s.callback_sender.aclose()
        if s.rates is not None:
            await s.rates.client.aclose()
        await s.main.aclose()
        for unit in s.store_units.values():
            if unit.own is not None:
                await unit.own.wallet.aclose()
                await unit.own.probe.aclose()
        await s.db.dispose()

    async def _housekeeping(self) -> None:
        """Prune finished events and expired keys now and then (``--retention``)."""
        while not self._stop.is_set():
            try:
                pruned = await self._services.retention.prune()
                if any((pruned.events, pruned.idempotency_keys, pruned.orphan_transfers)):
                    log.info("retention: deleted %s", pruned)
                links = await self._prune_link_requests()
                if links:
                    log.info("retention: deleted %d unpaid requests of payment links", links)
            except XmrgateError as exc:
                log.warning("housekeeping failed: %s", exc.message)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self._housekeeping_every)

    async def _prune_link_requests(self) -> int:
        """Unpaid requests of payment links, ``--link-prune-after`` past their expiry, in
        batches (each its own short transaction: SQLite's write lock is never held long)."""
        s = self._services
        before = datetime.now(UTC) - timedelta(seconds=s.settings.link_prune_after)
        total = 0
        while True:
            deleted = await s.link_requests.prune_unpaid(before, LINK_PRUNE_BATCH)
            total += deleted
            if deleted < LINK_PRUNE_BATCH:
                return total

    async def _refunds(self) -> None:
        """Expire unclaimed refund links and confirm mined refunds, store by store (a
        store whose wallet does not answer is skipped until the next round)."""
        s = self._services
        every = min(REFUNDS_EVERY, s.settings.poll_frequency)
        while not self._stop.is_set():
            for gateway in s.stores.built():
                try:
                    await gateway.refunds.watch()
                except XmrgateError as exc:
                    log.warning("refunds of store %s: %s", gateway.store_id, exc.message)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=every)

    async def _store_units(self) -> None:
        """Run each store's pool and labeler, and a store's own wallet (its bootstrap,
        then its sync), also of stores created later."""
        s = self._services
        while not self._stop.is_set():
            main_ready = s.main.identity.ready.is_set()
            for unit in list(s.store_units.values()):
                # An account's pool waits for the main wallet's first check and fill.
                if unit.own is None and main_ready:
                    self._start_unit(unit)
                elif unit.own is not None and unit.store_id not in self._started_units:
                    self._started_units.add(unit.store_id)
                    self._spawn(self._own_wallet(unit), f"wallet-{unit.store_id}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=STORE_UNITS_EVERY)

    def _spawn(self, job: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks.append(asyncio.create_task(job, name=name))

    def _start_unit(self, unit: StoreUnit) -> None:
        """Run the pool and labeler of a store on an account of the main wallet, once."""
        if unit.store_id not in self._started_units:
            self._started_units.add(unit.store_id)
            self._start_pool(unit)

    def _start_pool(self, unit: StoreUnit) -> None:
        if self._services.settings.address_pool_size:
            self._spawn(unit.pool.run(self._stop), f"pool-{unit.store_id}")
        self._spawn(unit.labeler.run(self._stop), f"labels-{unit.store_id}")

    async def _own_wallet(self, unit: StoreUnit) -> None:
        """A store's own wallet: check it until usable (retrying while it is down,
        touching no other store), then run its pool, labeler and sync."""
        own = unit.own
        assert own is not None
        delay = 1.0
        while not self._stop.is_set():
            started = time.monotonic()
            own.identity.attempt_started()
            try:
                usable = await own.checks.before_tick()
                own.identity.attempt_ended(None)
                if usable and self._services.settings.address_pool_size:
                    await unit.pool.refill()
                break
            except Exception as exc:
                # A bug must not end the loop silently (the store would never sync): it
                # is retried like a wallet that does not answer, with its traceback.
                own.identity.attempt_ended(_failure(exc))
                log.warning(
                    "store %s: its wallet-rpc is not usable yet (%s); retrying in %.0fs",
                    unit.store_id,
                    _failure(exc),
                    delay,
                    exc_info=not isinstance(exc, XmrgateError),
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(first_of(self._stop, own.identity.retry), timeout=delay)
            await asyncio.sleep(max(0.0, RETRY_GAP - (time.monotonic() - started)))
            delay = min(delay * 2, 30.0)
        if self._stop.is_set():
            return
        own.identity.ready.set()
        self._start_pool(unit)
        await own.sync.run(self._stop, self._services.main.signals.interval)

    async def _bootstrap_wallet(self) -> None:
        """Open (or create) the wallet, then run the sync loop; retry while wallet-rpc is down."""
        s = self._services
        main = s.main
        identity = main.identity
        # The default store's pool: filled before the first request is let through.
        default = s.store_units[DEFAULT_STORE]
        delay = 1.0
        while not self._stop.is_set():
            started = time.monotonic()
            identity.attempt_started()
            try:
                # A database that remembers its wallet: a restart, the file is there.
                known = await main.identity_store.remembered() is not None
                await main.wallet.ensure_wallet_open(created_before=known)
                usable = await main.checks.before_tick()
                # Checked: requests waiting at start go on (taking from the pool's batches).
                identity.attempt_ended(None)
                if usable and s.settings.address_pool_size:
                    await default.pool.refill()
                break
            except Exception as exc:
                # Requests waiting for the first check fail fast with this, not after 5 s.
                # A bug is retried too (with its traceback): an ended task would leave the
                # gateway without a wallet, /health 503 and nothing in the log.
                identity.attempt_ended(_failure(exc))
                log.warning(
                    "wallet-rpc at %s not usable yet (%s); retrying in %.0fs",
                    s.settings.rpc_address,
                    _failure(exc),
                    delay,
                    exc_info=not isinstance(exc, XmrgateError),
                )
            # The back-off, cut short when a request asks for a fresh attempt (wallet-rpc
            # may be back): at most one attempt per RETRY_GAP however many requests ask.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(first_of(self._stop, identity.retry), timeout=delay)
            await asyncio.sleep(max(0.0, RETRY_GAP - (time.monotonic() - started)))
            delay = min(delay * 2, 30.0)
        if self._stop.is_set():
            return
        identity.ready.set()
        if identity.problem is None:
            log.info("wallet ready: primary address %s", identity.primary_address)
        else:
            # The sync loop keeps checking before every tick and resumes once it is right.
            log.error("wallet-rpc answers but its wallet cannot be used: %s", identity.problem)
        self._start_unit(default)
        await main.sync.run(self._stop, main.signals.interval)


def _failure(exc: Exception) -> str:
    """What a failed start-up attempt says: our errors' message, else the exception."""
    return exc.message if isinstance(exc, XmrgateError) else f"{type(exc).__name__}: {exc}"
