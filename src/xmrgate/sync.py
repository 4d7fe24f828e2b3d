"""The sync engine: the only writer of incoming-payment state.

One tick: refresh the wallet, read its height, fetch incoming transfers of the
heights that can still change (plus the pool), let ``ledger.reconcile`` decide what
changed, and write the changed transfers, their outbox events and the new height
in ONE transaction. A tick that sees nothing new writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate import ledger
from xmrgate.errors import XmrgateError
from xmrgate.store import payments
from xmrgate.store.db import Database
from xmrgate.store.outbox import insert_events, last_event_kinds
from xmrgate.views import callback_json
from xmrgate.wallet import WalletClient

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


def observation(entry: dict[str, Any]) -> ledger.Observation | None:
    """Turn one ``get_transfers`` entry into an Observation (None for other accounts)."""
    index = entry.get("subaddr_index") or {}
    if int(index.get("major", 0)) != 0:
        return None
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
    """Runs sync ticks against one wallet and one database."""

    def __init__(
        self,
        db: Database,
        wallet: WalletClient,
        *,
        zero_conf: bool,
        reorg_margin: int,
        on_events: Callable[[], None] = lambda: None,
    ) -> None:
        self._db = db
        self._wallet = wallet
        self._zero_conf = zero_conf
        self._margin = reorg_margin
        self._on_events = on_events

    async def tick(self) -> TickResult:
        """One sync pass; raises on wallet or database failure (the loop logs it)."""
        started = time.perf_counter()
        async with self._db.sync_leadership() as leader:
            if not leader:
                return TickResult(ran=False)
            await self._wallet.refresh()
            height = await self._wallet.get_height()
            async with self._db.read() as conn:
                synced = await payments.chain_height(conn)
                lowest = await payments.lowest_locked_height(conn)
                # Before the first tick: scan all history if requests already exist
                # (made while the wallet could not be synced), else start at the top.
                if synced is None and await payments.any_request(conn):
                    synced = 0
            if synced is not None and height < synced - self._margin:
                # A wallet far behind what we synced (restored, rescanning) would make
                # every newer transfer look gone: wait until it has caught up.
                log.warning(
                    "wallet height %d is far below the synced height %d; waiting", height, synced
                )
                return TickResult(ran=False, height=height)
            start = ledger.window_start(
                synced if synced is not None else height, lowest, self._margin
            )
            raw = await self._wallet.incoming_transfers(start, height)
            observed = [o for o in map(observation, raw) if o is not None]
            result = await self._write(height, start, observed)
        if result.events:
            self._on_events()
        return TickResult(
            ran=True,
            height=height,
            window_start=start,
            observed=len(observed),
            changed=result.changed,
            events=result.events,
            seconds=time.perf_counter() - started,
        )

    async def _write(
        self, height: int, start: int, observed: list[ledger.Observation]
    ) -> TickResult:
        async with self._db.write() as conn:
            synced = await payments.chain_height(conn)
            indices = {o.subaddr_index for o in observed}
            indices |= await payments.subaddr_indices_in_window(conn, start)
            requests = await payments.requests_by_index(conn, indices) if indices else {}
            stored = await payments.transfers_of(conn, [r.id for r in requests.values()])
            announced = await self._confirmed_in_pool(conn, stored, requests)
            outcome = ledger.reconcile(
                expected_by_index={i: r.amount for i, r in requests.items()},
                stored=stored,
                observed=observed,
                window_start=start,
                chain_height=height,
                now=int(time.time()),
                zero_conf=self._zero_conf,
                announced=announced,
            )
            if outcome.changed:
                await payments.save_transfers(
                    conn,
                    outcome.changed,
                    {t.key for t in stored},
                    {i: r.id for i, r in requests.items()},
                )
            rows = []
            for event in outcome.events:
                request = requests[event.subaddr_index]
                if not request.callback_url:
                    continue
                body = callback_json(request, request.address, event, height)
                rows.append(
                    {
                        "id": str(uuid.uuid4()),
                        "request_id": request.id,
                        "kind": event.kind.value,
                        "tx_hash": event.transfer.tx_hash,
                        "callback_url": request.callback_url,
                        "payload": json.dumps(body, separators=(",", ":")),
                    }
                )
            await insert_events(conn, rows)
            if synced != height:
                await payments.set_chain_height(conn, height, exists=synced is not None)
        for event in outcome.events:
            log.info(
                "%s %s on subaddress %d (%d piconero)",
                event.kind.value,
                event.transfer.tx_hash[:16],
                event.subaddr_index,
                event.transfer.amount,
            )
        return TickResult(ran=True, changed=len(outcome.changed), events=len(rows))

    async def _confirmed_in_pool(
        self,
        conn: AsyncConnection,
        stored: list[ledger.Transfer],
        requests: dict[int, payments.PaymentRequest],
    ) -> set[tuple[str, int]]:
        """Pool transfers whose last callback said "confirmed" or "unlocked".

        A reorg can put a mined transfer back into the pool silently; if it is then
        dropped, the merchant who was told it confirmed must be told it is gone,
        zero-conf or not. (In zero-conf mode every loss is announced anyway.)
        """
        pool = [t for t in stored if t.state is ledger.TransferState.POOL]
        if self._zero_conf or not pool:
            return set()
        kinds = await last_event_kinds(conn, {requests[t.subaddr_index].id for t in pool})
        mined = {ledger.EventKind.CONFIRMED.value, ledger.EventKind.UNLOCKED.value}
        return {
            t.key for t in pool if kinds.get((requests[t.subaddr_index].id, t.tx_hash)) in mined
        }

    async def run(self, stop: asyncio.Event, interval: float) -> None:
        """Tick every ``interval`` seconds until ``stop``; a failed tick is logged, not fatal."""
        failures = 0
        while not stop.is_set():
            try:
                result = await self.tick()
                if result.seconds > max(5.0, 2 * interval):
                    log.warning("slow sync tick: %.1fs (%s)", result.seconds, result)
                if failures:
                    log.info("sync resumed after %d failed ticks", failures)
                failures = 0
                if result.changed:
                    log.debug("tick: %s", result)
            except XmrgateError as exc:
                failures += 1
                log.warning("sync tick failed: %s", exc.message)
            except Exception:
                failures += 1
                log.exception("sync tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval)
