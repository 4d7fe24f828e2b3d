"""The sync engine: the only writer of incoming-payment state.

One tick: refresh the wallet, read its height, fetch incoming transfers of the
heights that can still change (plus the pool), let ``ledger.reconcile`` decide what
changed, and write the changed transfers, their outbox events and the new height
in ONE transaction. A tick that sees nothing new writes nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from xmrgate.core.observer import MAIN_WALLET, NO_OBSERVER, Observer
from xmrgate.core.sync_health import SyncHealthStore, SyncHealthTracker
from xmrgate.domain import invoice, ledger, unmatched
from xmrgate.domain.errors import XmrgateError
from xmrgate.domain.payloads import callback_json, invoice_of
from xmrgate.domain.records import PaymentRequest
from xmrgate.domain.stores import DEFAULT_STORE

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TickResult:
    """What one tick did (for logs, tests and benchmarks)."""

    ran: bool
    height: int = 0
    window_start: int = 0
    observed: int = 0
    changed: int = 0
    events: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class WindowBounds:
    """What decides where a tick's window starts."""

    synced: int | None
    lowest_locked: int | None
    has_requests: bool
    # Account index of the main wallet -> the store receiving on it.
    accounts: Mapping[int, str] = field(default_factory=lambda: {0: DEFAULT_STORE})


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the store holds for the subaddresses a tick looks at, read in its transaction."""

    # By subaddress index: requests with transfers in the window, and open requests
    # whose expiry has passed (the tick records and announces that).
    requests: dict[int, PaymentRequest]
    stored: list[ledger.Transfer]
    # (request id, tx hash) -> kind of the newest event, for pool transfers only.
    last_event_kinds: dict[tuple[int, str], str] = field(default_factory=dict)
    # The store's unmatched receipts the window can change, and those of observed keys.
    receipts: list[ledger.Transfer] = field(default_factory=list)
    # Keys of pool receipts whose last event said "confirmed" (a reorg put them back).
    receipts_confirmed: frozenset[tuple[str, int]] = frozenset()


@dataclass(frozen=True, slots=True)
class Decision:
    """What a tick changes: the ledger's outcome (with statuses) and the event rows to add."""

    outcome: invoice.InvoiceReconciliation
    event_rows: list[dict[str, Any]]
    # What changes of the store's unmatched receipts, and the addresses of their
    # subaddresses (the wallet's answer carries them; a new receipt stores its own).
    receipts: unmatched.ReceiptOutcome = field(
        default_factory=lambda: unmatched.ReceiptOutcome(changed=[], announced=[])
    )
    addresses: Mapping[int, str] = field(default_factory=dict)


class SyncWallet(Protocol):
    """The wallet calls of a tick."""

    async def refresh(self) -> None:
        """Let the wallet scan new blocks now."""
        ...

    async def get_height(self) -> int:
        """The wallet's height."""
        ...

    async def incoming_transfers(self, min_height: int, max_height: int) -> list[dict[str, Any]]:
        """Incoming transfers of every account in the window, plus the pool."""
        ...


class SyncStore(Protocol):
    """The tick's reads and its one write transaction (``adapters/store/sync_store.py``)."""

    def leadership(self) -> AbstractAsyncContextManager[bool]:
        """True while this process may tick."""
        ...

    async def window_bounds(self) -> WindowBounds:
        """Synced height, lowest locked height, whether any request exists."""
        ...

    async def apply(
        self,
        height: int,
        start: int,
        observed: Mapping[str, set[int]],
        decide: Callable[[str, Snapshot], Decision],
        *,
        with_announced: bool,
    ) -> list[Decision]:
        """For each store with something to reconcile (observed indices by store, or
        transfers in the window, or a due expiry): read its Snapshot, call ``decide``;
        write every change and the height in one transaction."""
        ...


def account_of(entry: dict[str, Any]) -> int:
    """The account (major index) a ``get_transfers`` entry arrived on."""
    return int((entry.get("subaddr_index") or {}).get("major", 0))


def observation(entry: dict[str, Any]) -> ledger.Observation:
    """Turn one ``get_transfers`` entry into an Observation (within its account)."""
    index = entry.get("subaddr_index") or {}
    in_pool = entry.get("type") == "pool"
    return ledger.Observation(
        tx_hash=str(entry["txid"]),
        subaddr_index=int(index.get("minor", 0)),
        amount=int(entry.get("amount", 0)),
        fee=int(entry.get("fee", 0)),
        height=0 if in_pool else int(entry.get("height", 0)),
        timestamp=int(entry.get("timestamp", 0)),
        unlock_time=int(entry.get("unlock_time", 0)),
        double_spend_seen=bool(entry.get("double_spend_seen", False)),
        in_pool=in_pool,
    )


class SyncEngine:
    """Runs sync ticks against one wallet and one store."""

    def __init__(
        self,
        store: SyncStore,
        wallet: SyncWallet,
        *,
        zero_conf: bool,
        reorg_margin: int,
        on_events: Callable[[], None] = lambda: None,
        may_tick: Callable[[], Awaitable[bool]] | None = None,
        observer: Observer = NO_OBSERVER,
        tick_failed: Callable[[XmrgateError], None] = lambda _exc: None,
        wallet_name: str = MAIN_WALLET,
        health: SyncHealthStore | None = None,
    ) -> None:
        self._wallet_name = wallet_name
        self._health = SyncHealthTracker(health)
        self._may_tick = may_tick
        self._tick_failed = tick_failed
        self._observer = observer
        self._store = store
        self._wallet = wallet
        self._zero_conf = zero_conf
        self._margin = reorg_margin
        self._on_events = on_events
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Tick now instead of at the next poll (monerod announced a block or a pool tx)."""
        self._wake.set()

    async def tick(self) -> TickResult:
        """One sync pass; raises on wallet or database failure (the loop logs it)."""
        started = time.perf_counter()
        async with self._store.leadership() as leader:
            if not leader:
                return TickResult(ran=False)
            # The wallet's identity is checked first: a different wallet's subaddress N
            # must never be credited to our request N.
            if self._may_tick is not None and not await self._may_tick():
                return TickResult(ran=False)
            await self._wallet.refresh()
            height = await self._wallet.get_height()
            bounds = await self._store.window_bounds()
            synced = bounds.synced
            # Before the first tick: scan all history if requests already exist
            # (made while the wallet could not be synced), else start at the top.
            if synced is None and bounds.has_requests:
                synced = 0
            if synced is not None and height < synced - self._margin:
                # A wallet far behind what we synced (restored, rescanning) would make
                # every newer transfer look gone: wait until it has caught up.
                log.warning(
                    "wallet height %d is far below the synced height %d; waiting", height, synced
                )
                return TickResult(ran=False, height=height)
            start = ledger.window_start(
                synced if synced is not None else height, bounds.lowest_locked, self._margin
            )
            raw = await self._wallet.incoming_transfers(start, height)
            # Each account is a store; accounts no store uses are not ours to credit.
            by_store: dict[str, list[ledger.Observation]] = {}
            addresses: dict[str, dict[int, str]] = {}
            for entry in raw:
                store = bounds.accounts.get(account_of(entry))
                # A block reward ("block") is the miner's, never a customer's payment.
                if store is None or entry.get("type") == "block":
                    continue
                found = observation(entry)
                by_store.setdefault(store, []).append(found)
                addresses.setdefault(store, {})[found.subaddr_index] = str(entry.get("address", ""))
            decisions = await self._store.apply(
                height,
                start,
                {store: {o.subaddr_index for o in found} for store, found in by_store.items()},
                lambda store, snapshot: self._decide(
                    store,
                    snapshot,
                    height,
                    start,
                    by_store.get(store, []),
                    addresses.get(store, {}),
                ),
                with_announced=not self._zero_conf,
            )
        rows = [row for d in decisions for row in d.event_rows]
        for decision in decisions:
            self._log_events(decision.outcome.events)
        # Woken also when only transfers changed: a request without a callback_url has no
        # event rows, yet a Greenfield invoice on it moved (its webhooks' announcer).
        if rows or any(d.outcome.changed or d.receipts.changed for d in decisions):
            self._on_events()
        return TickResult(
            ran=True,
            height=height,
            window_start=start,
            observed=sum(len(found) for found in by_store.values()),
            changed=sum(len(d.outcome.changed) + len(d.receipts.changed) for d in decisions),
            events=len(rows),
            seconds=time.perf_counter() - started,
        )

    def _decide(
        self,
        store: str,
        snapshot: Snapshot,
        height: int,
        start: int,
        observed: list[ledger.Observation],
        addresses: Mapping[int, str],
    ) -> Decision:
        """Reconcile inside the store's transaction; build the outbox rows of the events.

        Observations no request owns (or already recorded as receipts) are the store's
        unmatched receipts; the store writes them and their events (``receipts``)."""
        requests = snapshot.requests
        for_requests, for_receipts = unmatched.split_observations(
            observed, requests.keys(), {t.key for t in snapshot.receipts}
        )
        receipts = unmatched.ReceiptOutcome(changed=[], announced=[])
        if for_receipts or snapshot.receipts:
            receipts = unmatched.reconcile_receipts(
                stored=snapshot.receipts,
                observed=for_receipts,
                window_start=start,
                chain_height=height,
                now=int(time.time()),
                announced=snapshot.receipts_confirmed,
            )
            for receipt in receipts.announced:
                log.warning(
                    "%s %s on subaddress %d of store %s (%d piconero): no request owns it",
                    unmatched.UNMATCHED_EVENT,
                    receipt.tx_hash[:16],
                    receipt.subaddr_index,
                    store,
                    receipt.amount,
                )
        outcome = invoice.reconcile_invoices(
            invoices={i: invoice_of(r) for i, r in requests.items()},
            stored=snapshot.stored,
            observed=for_requests,
            window_start=start,
            chain_height=height,
            now=time.time(),
            zero_conf=self._zero_conf,
            announced=self._confirmed_in_pool(snapshot),
        )
        rows = []
        # Every event is stored (the feed, GET /events); those of requests without a
        # callback_url are never delivered (``callback_url`` None).
        for event in outcome.events:
            request = requests[event.subaddr_index]
            body = callback_json(request, request.address, event, height)
            rows.append(
                {
                    "id": str(uuid.uuid4()),
                    "request_id": request.id,
                    "store_id": store,
                    "kind": event.kind,
                    "tx_hash": event.transfer.tx_hash if event.transfer else "",
                    "callback_url": request.callback_url or None,
                    "payload": json.dumps(body, separators=(",", ":")),
                }
            )
        return Decision(outcome, rows, receipts, addresses)

    @staticmethod
    def _log_events(events: list[invoice.InvoiceEvent]) -> None:
        for event in events:
            if event.transfer is None:
                log.info("%s on subaddress %d", event.kind, event.subaddr_index)
                continue
            log.info(
                "%s %s on subaddress %d (%d piconero)",
                event.kind,
                event.transfer.tx_hash[:16],
                event.subaddr_index,
                event.transfer.amount,
            )

    def _confirmed_in_pool(self, snapshot: Snapshot) -> set[tuple[str, int]]:
        """Pool transfers whose last callback said "confirmed" or "unlocked".

        A reorg can put a mined transfer back into the pool silently; if it is then
        dropped, the merchant who was told it confirmed must be told it is gone,
        zero-conf or not. (In zero-conf mode every loss is announced anyway.)
        """
        pool = [t for t in snapshot.stored if t.state is ledger.TransferState.POOL]
        if self._zero_conf or not pool:
            return set()
        ids = {i: r.id for i, r in snapshot.requests.items()}
        mined = {ledger.EventKind.CONFIRMED.value, ledger.EventKind.UNLOCKED.value}
        return {
            t.key
            for t in pool
            if snapshot.last_event_kinds.get((ids[t.subaddr_index], t.tx_hash)) in mined
        }

    async def run(self, stop: asyncio.Event, interval: float) -> None:
        """Tick every ``interval`` seconds until ``stop``; a failed tick is logged, not fatal."""
        failures = 0
        while not stop.is_set():
            started = time.perf_counter()
            # Cleared before the tick: an announcement during it brings the next one forward.
            self._wake.clear()
            name = self._wallet_name
            error: str | None = None
            try:
                result = await self.tick()
                self._observer.sync_tick(
                    ran=result.ran,
                    seconds=time.perf_counter() - started,
                    wallet_height=result.height or None,
                    wallet=name,
                )
                if result.seconds > max(5.0, 2 * interval):
                    log.warning("slow sync tick: %.1fs (%s)", result.seconds, result)
                if failures:
                    log.info("sync resumed after %d failed ticks (wallet %s)", failures, name)
                failures = 0
                if result.ran:
                    await self._health.ran()
                if result.changed:
                    log.debug("tick: %s", result)
            except XmrgateError as exc:
                error = exc.message
                log.warning("sync tick failed (wallet %s): %s", name, exc.message)
                self._tick_failed(exc)
            except Exception as exc:
                # /health (public) shows this: a bug's text may hold anything, so its type only.
                error = f"{type(exc).__name__} (details in the gateway's log)"
                log.exception("sync tick failed (wallet %s)", name)
            if error is not None:
                failures += 1
                self._observer.sync_tick_failed(time.perf_counter() - started, name)
                await self._health.failed(error)
            await _until_either(stop, self._wake, interval)


async def _until_either(first: asyncio.Event, second: asyncio.Event, timeout: float) -> None:
    """Wait until either event is set, at most ``timeout`` seconds."""
    waits = [asyncio.ensure_future(first.wait()), asyncio.ensure_future(second.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
