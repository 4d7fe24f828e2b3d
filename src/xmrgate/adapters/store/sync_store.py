"""The sync tick's reads and its one write transaction (implements ``core.sync.SyncStore``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from xmrgate.adapters.store import payments
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.outbox import insert_events, last_event_kinds
from xmrgate.core.sync import Decision, Snapshot, WindowBounds
from xmrgate.domain import ledger


class SqlSyncStore:
    """Sync state in SQL: leadership, the window's bounds, and the reconciling write."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @contextlib.asynccontextmanager
    async def leadership(self) -> AsyncIterator[bool]:
        """True while this process may tick (PostgreSQL advisory lock; SQLite: always)."""
        async with self._db.sync_leadership() as leader:
            yield leader

    async def rewind_to_oldest_request(self) -> None:
        """Make the next tick's window start at the oldest request's creation height.

        After the wallet rescanned (its subaddress table was extended), payments it
        missed may sit below the synced height: the window must reach back to them.
        """
        async with self._db.write() as conn:
            oldest = await payments.oldest_creation_height(conn)
            synced = await payments.chain_height(conn)
            if oldest is not None and synced is not None and oldest < synced:
                await payments.set_chain_height(conn, oldest, exists=True)

    async def window_bounds(self) -> WindowBounds:
        """Synced height, lowest locked height, and whether any request exists."""
        async with self._db.read() as conn:
            return WindowBounds(
                synced=await payments.chain_height(conn),
                lowest_locked=await payments.lowest_locked_height(conn),
                has_requests=await payments.any_request(conn),
            )

    async def apply(
        self,
        height: int,
        start: int,
        observed_indices: set[int],
        decide: Callable[[Snapshot], Decision],
        *,
        with_announced: bool,
    ) -> Decision:
        """Read what can change, let ``decide`` reconcile it, write it all in one transaction."""
        async with self._db.write() as conn:
            synced = await payments.chain_height(conn)
            indices = observed_indices | await payments.subaddr_indices_in_window(conn, start)
            # Open requests past their expiry: the tick records it (and announces it) in
            # this transaction, under the sync leadership, so exactly once.
            indices |= await payments.expired_open_indices(conn, utcnow())
            requests = await payments.requests_by_index(conn, indices) if indices else {}
            stored = await payments.transfers_of(conn, [r.id for r in requests.values()])
            kinds: dict[tuple[int, str], str] = {}
            pool = [t for t in stored if t.state is ledger.TransferState.POOL]
            if with_announced and pool:
                kinds = await last_event_kinds(conn, {requests[t.subaddr_index].id for t in pool})
            decision = decide(Snapshot(requests=requests, stored=stored, last_event_kinds=kinds))
            if decision.outcome.changed:
                await payments.save_transfers(
                    conn,
                    decision.outcome.changed,
                    {t.key for t in stored},
                    {i: r.id for i, r in requests.items()},
                )
            if decision.outcome.statuses:
                await payments.save_statuses(
                    conn, {requests[i].id: s for i, s in decision.outcome.statuses.items()}
                )
            await insert_events(conn, decision.event_rows)
            if synced != height:
                await payments.set_chain_height(conn, height, exists=synced is not None)
        return decision
