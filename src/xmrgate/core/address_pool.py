"""Subaddresses created ahead, labels applied later, and the wallet's lookahead kept safe.

``POST /receive`` takes a subaddress from a pool in the database instead of asking
the single-threaded wallet-rpc, so it neither waits behind sync ticks and payouts
nor fails while the wallet restarts. ``AddressPool.refill`` keeps the pool between
its low-water mark and its size: it creates up to 64 subaddresses per wallet call,
has the wallet SAVE them (a wallet-rpc killed later cannot forget them), and only
then offers them.

Lookahead: wallet-rpc only sees payments to subaddresses within its table plus a
lookahead (200); a wallet restored from keys starts its table at 0 and misses
payments to higher indices (monero-project/monero#9213). ``ensure_lookahead`` makes
the table reach the highest index we ever handed out (or hold in the pool), and,
when it had to extend it, rescans and rewinds our sync so that payments the wallet
missed are found.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from xmrgate.domain.errors import AddressPoolEmpty
from xmrgate.domain.greenfield.invoice_row import InvoiceRow
from xmrgate.domain.records import PaymentRequest

log = logging.getLogger(__name__)

# wallet-rpc's create_address takes 1..64 per call.
MAX_BATCH = 64
# While requests wait on an empty pool: smaller batches, offered sooner. A batch of 64
# takes wallet-rpc ~0.5 s (up to 1 s on a loaded host); 16 take ~0.13 s.
URGENT_BATCH = 16
# Seconds between two looks at the pool's size when takes keep waking the refiller.
WAKE_GAP = 0.5
# Seconds between two labels (at most 50 a second).
LABEL_GAP = 0.02
# A refill step (one wallet or database call) unanswered this long means the wallet is
# stopped or hung: requests waiting on an empty pool get 503 instead of waiting on. A
# busy wallet is not a dead one: wallet-rpc is single-threaded, so a sync tick's refresh
# or the ``store`` of a large wallet file holds every other call for up to a second or
# two (a rule that read a call older than 0.75 s as a hung wallet refused 30 requests of
# a 260-request burst at once).
SILENCE = 3.0
# How often a waiting request looks whether the refill step it waits on went silent.
STALL_CHECK = 0.05


class PoolWallet(Protocol):
    """The wallet calls of the pool and the lookahead check."""

    async def create_addresses(self, count: int) -> list[tuple[str, int]]:
        """Create ``count`` (1..64) subaddresses; their (address, index)."""
        ...

    async def save(self) -> None:
        """Write the wallet file."""
        ...

    async def label_address(self, index: int, label: str) -> None:
        """Label one subaddress."""
        ...

    async def has_subaddress(self, index: int) -> bool:
        """Whether the subaddress table reaches ``index``."""
        ...

    async def rescan(self) -> None:
        """Scan the chain again from the wallet's restore height."""
        ...


class AddressPoolRepository(Protocol):
    """The pool table (``adapters/store/address_pool.py``)."""

    async def size(self) -> int:
        """Unused subaddresses in the pool."""
        ...

    async def highest_index(self) -> int:
        """The highest index in use or in the pool."""
        ...

    async def add(self, entries: Sequence[tuple[str, int]]) -> None:
        """Offer saved subaddresses."""
        ...

    async def take(
        self, values: Mapping[str, Any], greenfield: InvoiceRow | None = None
    ) -> PaymentRequest | None:
        """A new request on the lowest pooled subaddress; None when empty. A payment
        link's request (``link_id``) is admitted in the same transaction: LinkInactive,
        LinkUsedUp (its ``max_uses`` requests exist) or MissingReference, and nothing is taken.
        ``greenfield``: a Greenfield invoice's row, inserted with the new request's id in
        the same transaction (if it cannot be, nothing is taken)."""
        ...


async def _always_ok() -> bool:
    return True


async def _never_down(_deadline: float) -> str | None:
    return None


RETRY = "retry in a few seconds"


class AddressPool:
    """Keeps the pool filled from the wallet."""

    def __init__(
        self,
        wallet: PoolWallet,
        store: AddressPoolRepository,
        *,
        size: int,
        low_water: int,
        wallet_ok: Callable[[], Awaitable[bool]] = _always_ok,
        wallet_down: Callable[[float], Awaitable[str | None]] = _never_down,
        silence: float = SILENCE,
    ) -> None:
        self._wallet = wallet
        self._silence = silence  # a gateway's is SILENCE; tests wait out a shorter one
        self._wallet_ok = wallet_ok
        # Before the loop runs (start-up: the wallet's first check and fill), why a fresh
        # attempt to reach the wallet failed, or None: waiters fail fast only then.
        self._wallet_down = wallet_down
        self._store = store
        self._size = size
        self._low_water = low_water
        self._wake = asyncio.Event()
        self._hurry = asyncio.Event()  # a request waits on an empty pool: skip WAKE_GAP
        self._running = False
        self._stopped = False
        self._last_failure = ""
        self._rounds = 0  # refill rounds that ended, and how many of them failed
        self._failures = 0
        self._round_ended = asyncio.Event()
        self._step_since: float | None = None  # monotonic start of the current call

    def wake(self) -> None:
        """Ask the refill loop to look at the pool now (a request just took one)."""
        self._wake.set()

    async def next_round(self, deadline: float) -> None:
        """Wake the refill loop at once and wait for its next round to end.

        Returns when a round ended well (the pool may hold new subaddresses: take again)
        or at ``deadline`` (a ``time.monotonic()`` value: the caller's budget is spent).
        Raises AddressPoolEmpty, saying which, only when the wallet is known to be down:
        the round failed (connection refused, wallet or database error), a call of the
        round went unanswered for ``silence`` seconds (wallet stopped or hung), or, at
        start-up before the loop runs, a fresh attempt to reach the wallet failed.
        Waiting here instead of asking the wallet directly keeps a burst of requests
        from queueing hundreds of single calls ahead of the refill's batch.
        """
        if not self._running:
            if self._stopped:
                raise AddressPoolEmpty(f"the gateway is stopping; {RETRY}")
            down = await self._wallet_down(deadline)
            if down is not None:
                raise AddressPoolEmpty(f"no subaddress is ready and {down}; {RETRY}")
            # Start-up: the wallet's first check and fill, whose batches are offered as
            # each is saved; the caller takes again after this short wait.
            await asyncio.sleep(min(STALL_CHECK, max(0.0, deadline - time.monotonic())))
            return
        rounds, failures = self._rounds, self._failures
        self._wake.set()
        self._hurry.set()
        while self._rounds == rounds:
            since = self._step_since
            if since is not None and time.monotonic() - since > self._silence:
                raise AddressPoolEmpty(
                    f"no subaddress is ready and wallet-rpc has not answered for "
                    f"{self._silence:g} s (stopped or hung?); {RETRY}"
                )
            if time.monotonic() >= deadline:
                return
            ended = self._round_ended
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ended.wait(), timeout=STALL_CHECK)
        if self._failures != failures:
            raise AddressPoolEmpty(
                f"no subaddress is ready and the refill failed ({self._last_failure}); {RETRY}"
            )

    async def refill(self) -> int:
        """Top the pool up to its size when it is at or below the low-water mark.

        Returns how many subaddresses were added. If the wallet hands out indices we
        already use (it lost unsaved state in a crash), they are dropped and its
        counter is moved past the highest index in use.
        """
        self._step()
        current = await self._store.size()
        if current > self._low_water:
            return 0
        added = 0
        while current + added < self._size:
            # Before each batch: the wallet is the database's (never pool another wallet's
            # subaddress) and not behind --restricted-rpc (it refuses ``store``). When it
            # is not, nothing is created; ``wallet_ok`` has recorded and logged why.
            self._step()
            if not await self._wallet_ok():
                break
            batch = URGENT_BATCH if self._hurry.is_set() else MAX_BATCH
            want = min(batch, self._size - current - added)
            self._step()
            created = await self._wallet.create_addresses(want)
            self._step()
            await self._wallet.save()
            self._step()
            highest = await self._store.highest_index()
            fresh = [(a, i) for a, i in created if i > highest]
            if len(fresh) < len(created):
                last = max(i for _, i in created)
                log.warning(
                    "wallet handed out used subaddresses up to %d (it lost state); "
                    "moving it past %d",
                    last,
                    highest,
                )
                await self._skip_to(last, highest)
            self._step()
            if not await self._wallet_ok():
                break  # the wallet was swapped during the batch: drop what it made
            self._step()
            await self._store.add(fresh)
            added += len(fresh)
        if added:
            log.info("address pool refilled: %d added, %d available", added, current + added)
        return added

    def _step(self) -> None:
        """Mark the start of one call: ``next_round`` tells a silent one by its age."""
        self._step_since = time.monotonic()

    async def _skip_to(self, last: int, highest: int) -> None:
        while last < highest:
            self._step()
            created = await self._wallet.create_addresses(min(MAX_BATCH, highest - last))
            last = max(i for _, i in created)
        self._step()
        await self._wallet.save()

    async def run(self, stop: asyncio.Event, *, every: float = 5.0) -> None:
        """Refill when woken or every ``every`` seconds, until ``stop``; failures are logged."""
        self._running = True
        try:
            while not stop.is_set():
                # Cleared before the round: a wake that comes during it starts the next one.
                self._wake.clear()
                failed = False
                try:
                    await self.refill()
                except Exception as exc:  # the wallet or database is down: try again later
                    failed = True
                    self._last_failure = str(getattr(exc, "message", exc))
                    log.warning("address pool refill failed: %s", self._last_failure)
                finally:
                    self._end_round(failed)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(first_of(self._wake, stop), timeout=every)
                # A burst of takes needs one look at the pool's size, not one per request;
                # a request waiting on an empty pool does not wait for the gap.
                if not self._hurry.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(first_of(self._hurry, stop), timeout=WAKE_GAP)
        finally:
            self._running = False
            self._stopped = True
            self._last_failure = "the gateway is stopping"
            self._end_round(failed=True)

    def _end_round(self, failed: bool) -> None:
        # Hurry lasts the round: waiters that still find the pool empty set it again.
        self._hurry.clear()
        self._step_since = None
        self._rounds += 1
        self._failures += failed
        ended, self._round_ended = self._round_ended, asyncio.Event()
        ended.set()


class Labeler:
    """Applies wallet labels after the request was answered (never blocks it)."""

    def __init__(self, wallet: PoolWallet, *, capacity: int = 10_000) -> None:
        self._wallet = wallet
        self._queue: asyncio.Queue[tuple[int, str]] = asyncio.Queue(maxsize=capacity)

    def label_later(self, index: int, label: str) -> None:
        """Queue a label; when the queue is full the label is dropped (it is cosmetic)."""
        if not label:
            return
        try:
            self._queue.put_nowait((index, label))
        except asyncio.QueueFull:
            log.warning("label queue full: subaddress %d stays unlabelled", index)

    async def run(self, stop: asyncio.Event) -> None:
        """Apply queued labels until ``stop``.

        It waits for a label or ``stop``, whichever comes first, so that a stopping
        gateway does not wait for it (a timed wait for the queue held each shutdown up to
        a second)."""
        stopping = asyncio.create_task(stop.wait())
        getting: asyncio.Task[tuple[int, str]] | None = None
        try:
            while not stop.is_set():
                if self._queue.empty():
                    getting = asyncio.create_task(self._queue.get())
                    await asyncio.wait((getting, stopping), return_when=asyncio.FIRST_COMPLETED)
                    if not getting.done():
                        return  # stopping: ``finally`` cancels the get, nothing was taken
                    index, label = getting.result()
                else:  # a burst: no task to wait with
                    index, label = self._queue.get_nowait()
                try:
                    await self._wallet.label_address(index, label)
                except Exception as exc:
                    log.warning("labelling subaddress %d failed: %s", index, exc)
                # Labels are cosmetic: during a burst of POST /receive they wait, rather
                # than take the event loop's time (~1 ms of CPU each) from the requests.
                await asyncio.sleep(LABEL_GAP)
        finally:
            stopping.cancel()
            if getting is not None:
                getting.cancel()


async def ensure_lookahead(
    wallet: PoolWallet,
    store: AddressPoolRepository,
    rewind_sync: Callable[[], Awaitable[None]],
    *,
    rescan: bool = True,
    extending: Callable[[], None] = lambda: None,
) -> bool:
    """Make the wallet's subaddress table reach our highest index; rescan if it had to.

    Returns True when the table was extended (and the wallet rescanned, and our sync
    rewound to the oldest request so that missed payments are found). ``rescan`` False:
    extend and save only; the caller rewinds and rescans once for several checks.
    ``extending`` is called before the first subaddress is created: from then on a
    failure leaves a rescan owed (``core/wallet_checks.py``).
    """
    highest = await store.highest_index()
    if highest == 0 or await wallet.has_subaddress(highest):
        return False
    extending()
    log.warning(
        "the wallet's subaddress table does not reach index %d (restored wallet?): "
        "extending it and rescanning",
        highest,
    )
    last = max(i for _, i in await wallet.create_addresses(1))
    while last < highest:
        last = max(i for _, i in await wallet.create_addresses(min(MAX_BATCH, highest - last)))
    await wallet.save()
    if not rescan:
        return True
    # Rewind before the rescan: once the table is extended this function is never asked
    # again, so a rescan that times out (it can take long on mainnet) after the rewind
    # loses nothing, while a rewind left for after it would be lost with it.
    await rewind_sync()
    await wallet.rescan()
    return True


async def first_of(*signals: asyncio.Event) -> None:
    """Return once one of ``signals`` is set."""
    waiters = [asyncio.create_task(s.wait()) for s in signals]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
