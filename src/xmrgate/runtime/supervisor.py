"""The loops of one gateway process: wallet bootstrap then sync, callbacks, housekeeping.

``Supervisor.start`` migrates the schema and starts each loop as a task;
``close`` stops them, waits for them, and releases every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from xmrgate.core.address_pool import first_of
from xmrgate.domain.errors import XmrgateError
from xmrgate.runtime.container import Services

log = logging.getLogger(__name__)

# Seconds between the starts of two start-up attempts to reach the wallet, at least
# (requests ask for attempts: a flood of them while wallet-rpc is down makes 4 a second).
RETRY_GAP = 0.25
# How soon the pool of a store created at run time starts (its first requests wait
# for the pool's first batch meanwhile).
STORE_POOLS_EVERY = 0.5


class Supervisor:
    """Starts, watches and stops the background loops of one ``Services``."""

    def __init__(self, services: Services, *, housekeeping_every: float = 3600.0) -> None:
        self._services = services
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._housekeeping_every = housekeeping_every

    async def start(self) -> None:
        """Migrate the schema and start the background loops."""
        s = self._services
        await s.db.migrate()
        await s.stores.load()
        self._tasks = [
            asyncio.create_task(s.stores.run(self._stop), name="stores"),
            asyncio.create_task(self._bootstrap_wallet(), name="wallet-bootstrap"),
            asyncio.create_task(s.callbacks.run(self._stop), name="callbacks"),
            asyncio.create_task(self._housekeeping(), name="housekeeping"),
            asyncio.create_task(s.signals.run(self._stop), name="daemon-announcements"),
            asyncio.create_task(s.reads.run(self._stop), name="read-cache"),
        ]

    async def close(self) -> None:
        """Stop the loops, wait for them, and release connections."""
        s = self._services
        self._stop.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, timeout=s.settings.callback_timeout + 5)
        await s.callback_sender.aclose()
        await s.wallet.aclose()
        await s.probe_wallet.aclose()
        await s.signals.aclose()
        await s.db.dispose()

    async def _housekeeping(self) -> None:
        """Prune finished events and expired keys now and then (``--retention``)."""
        while not self._stop.is_set():
            try:
                pruned = await self._services.retention.prune()
                if any((pruned.events, pruned.idempotency_keys, pruned.orphan_transfers)):
                    log.info("retention: deleted %s", pruned)
            except XmrgateError as exc:
                log.warning("housekeeping failed: %s", exc.message)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self._housekeeping_every)

    async def _store_pools(self) -> None:
        """Run each store's address pool and labeler, also of stores created later."""
        s = self._services
        started: set[str] = set()
        while not self._stop.is_set():
            for store_id, (pool, labeler) in list(s.store_pools.items()):
                if store_id in started:
                    continue
                started.add(store_id)
                if s.settings.address_pool_size:
                    self._tasks.append(
                        asyncio.create_task(pool.run(self._stop), name=f"pool-{store_id}")
                    )
                self._tasks.append(
                    asyncio.create_task(labeler.run(self._stop), name=f"labels-{store_id}")
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=STORE_POOLS_EVERY)

    async def _bootstrap_wallet(self) -> None:
        """Open (or create) the wallet, then run the sync loop; retry while wallet-rpc is down."""
        s = self._services
        identity = s.gateway.identity
        delay = 1.0
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                await s.wallet.ensure_wallet_open()
                usable = await s.wallet_checks.before_tick()
                # Checked: requests waiting at start go on (taking from the pool's batches).
                identity.attempt_ended(None)
                if usable and s.settings.address_pool_size:
                    await s.address_pool.refill()
                break
            except XmrgateError as exc:
                # Requests waiting for the first check fail fast with this, not after 5 s.
                identity.attempt_ended(exc.message)
                log.warning(
                    "wallet-rpc at %s not usable yet (%s); retrying in %.0fs",
                    s.settings.rpc_address,
                    exc.message,
                    delay,
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
        if s.settings.address_pool_size:
            self._tasks.append(
                asyncio.create_task(s.address_pool.run(self._stop), name="address-pool")
            )
        self._tasks.append(asyncio.create_task(s.labeler.run(self._stop), name="labels"))
        self._tasks.append(asyncio.create_task(self._store_pools(), name="store-pools"))
        await s.sync.run(self._stop, s.signals.interval)
