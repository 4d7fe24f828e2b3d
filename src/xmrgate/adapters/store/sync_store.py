"""The sync tick's reads and its one write transaction (implements ``core.sync.SyncStore``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping

from sqlalchemy import func, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store import payments, tick_rows, unmatched_rows
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.outbox import insert_events, last_event_kinds
from xmrgate.adapters.store.payments import SYNC_STATE_ID
from xmrgate.adapters.store.stores_accounts import own_wallet_stores, store_accounts
from xmrgate.adapters.store.tables import payment_requests
from xmrgate.core.sync import Decision, Snapshot, WindowBounds
from xmrgate.domain import ledger
from xmrgate.domain.records import PaymentRequest


class SqlSyncStore:
    """Sync state in SQL of ONE wallet: leadership, the window's bounds, the write.

    The main wallet (``store_id`` None) serves every store on one of its accounts; a
    store on its own wallet-rpc has its own (``store_id``, its ``wallet_no`` row in
    sync_state). Each wallet's tick sees only its own stores' requests: another
    wallet's transfers, absent from this wallet's answer, must never look gone.
    """

    def __init__(
        self, db: Database, *, store_id: str | None = None, sync_id: int = SYNC_STATE_ID
    ) -> None:
        self._db = db
        self._store_id = store_id
        self._sync_id = sync_id
        # This wallet's stores as the last window_bounds() read them.
        self._stores: set[str] | None = None

    async def _scope(self, conn: AsyncConnection) -> payments.Scope:
        """This wallet's requests (None: every request, no store has its own wallet)."""
        if self._store_id is not None:
            return payment_requests.c.store_id == self._store_id
        others = await own_wallet_stores(conn)
        return payment_requests.c.store_id.not_in(others) if others else None

    async def _accounts(self, conn: AsyncConnection) -> dict[int, str]:
        if self._store_id is not None:
            return {0: self._store_id}
        return await store_accounts(conn)

    @contextlib.asynccontextmanager
    async def leadership(self) -> AsyncIterator[bool]:
        """True while this process may tick this wallet (PostgreSQL advisory lock per
        wallet; SQLite: always)."""
        async with self._db.sync_leadership(self._sync_id) as leader:
            yield leader

    async def rewind_to_oldest_request(self) -> None:
        """Make the next tick's window start at the oldest request's creation height.

        After the wallet rescanned (its subaddress table was extended), payments it
        missed may sit below the synced height: the window must reach back to them.
        """
        async with self._db.write() as conn:
            oldest = await payments.oldest_creation_height(conn, await self._scope(conn))
            synced = await payments.chain_height(conn, self._sync_id)
            if oldest is not None and synced is not None and oldest < synced:
                await payments.set_chain_height(conn, oldest, exists=True, sync_id=self._sync_id)

    async def window_bounds(self) -> WindowBounds:
        """Synced height, lowest locked height, whether any request exists, the stores."""
        async with self._db.read() as conn:
            scope = await self._scope(conn)
            accounts = await self._accounts(conn)
            # The tick's apply() reads the receipts of these stores (same tick, no re-read).
            self._stores = set(accounts.values())
            # Requests' transfers and receipts locked alike: one statement for both.
            both = union_all(
                payments.lowest_locked_query(scope),
                unmatched_rows.lowest_locked_receipt_query(self._stores),
            ).subquery()
            locked = (await conn.execute(select(func.min(both.c.height)))).scalar()
            return WindowBounds(
                synced=await payments.chain_height(conn, self._sync_id),
                lowest_locked=None if locked is None else int(locked),
                has_requests=await payments.any_request(conn, scope),
                accounts=accounts,
            )

    async def apply(
        self,
        height: int,
        start: int,
        observed: Mapping[str, set[int]],
        decide: Callable[[str, Snapshot], Decision],
        *,
        with_announced: bool,
    ) -> list[Decision]:
        """Read what can change, let ``decide`` reconcile it store by store, write it all
        (every store and the height) in ONE transaction: a crash between two stores'
        writes would otherwise leave the height past payments never recorded."""
        decisions: list[Decision] = []
        async with self._db.write() as conn:
            synced = await payments.chain_height(conn, self._sync_id)
            scope = await self._scope(conn)
            # Requests with transfers in the window, and open requests past their expiry
            # (the tick records and announces that, under the sync leadership: once).
            ids = await tick_rows.request_ids_in_window(conn, start, scope)
            ids |= await tick_rows.expired_open_ids(conn, utcnow(), scope)
            found = await tick_rows.requests_by_id(conn, ids) if ids else {}
            wanted = {(store, i) for store, indices in observed.items() for i in indices}
            missing = wanted - found.keys()
            if missing:
                found.update(await tick_rows.requests_by_store_index(conn, missing))
            by_store: dict[str, dict[int, PaymentRequest]] = {store: {} for store in observed}
            for (store, index), request in found.items():
                by_store.setdefault(store, {})[index] = request
            # Money no request owns: this wallet's stores' receipts the window can change.
            stores = self._stores
            if stores is None:
                stores = set((await self._accounts(conn)).values())
            receipts = await unmatched_rows.receipts_for_tick(conn, stores, start, observed)
            for store in receipts:
                by_store.setdefault(store, {})
            for store, requests in by_store.items():
                decision = await self._apply_store(
                    conn,
                    store,
                    requests,
                    receipts.get(store, {}),
                    decide,
                    height=height,
                    with_announced=with_announced,
                )
                decisions.append(decision)
            if synced != height:
                await payments.set_chain_height(
                    conn, height, exists=synced is not None, sync_id=self._sync_id
                )
        return decisions

    @staticmethod
    async def _apply_store(
        conn: AsyncConnection,
        store: str,
        requests: dict[int, PaymentRequest],
        receipts: Mapping[tuple[str, int], tuple[int, ledger.Transfer]],
        decide: Callable[[str, Snapshot], Decision],
        *,
        height: int,
        with_announced: bool,
    ) -> Decision:
        stored = await tick_rows.transfers_of(conn, [r.id for r in requests.values()])
        kinds: dict[tuple[int, str], str] = {}
        pool = [t for t in stored if t.state is ledger.TransferState.POOL]
        if with_announced and pool:
            kinds = await last_event_kinds(conn, {requests[t.subaddr_index].id for t in pool})
        pooled = {i: t.key for i, t in receipts.values() if t.state is ledger.TransferState.POOL}
        decision = decide(
            store,
            Snapshot(
                requests=requests,
                stored=stored,
                last_event_kinds=kinds,
                receipts=[t for _id, t in receipts.values()],
                receipts_confirmed=await unmatched_rows.confirmed_in_pool(conn, pooled),
            ),
        )
        if decision.outcome.changed:
            await tick_rows.save_transfers(
                conn,
                decision.outcome.changed,
                {t.key for t in stored},
                {i: r.id for i, r in requests.items()},
            )
        if decision.outcome.statuses:
            await tick_rows.save_statuses(
                conn, {requests[i].id: s for i, s in decision.outcome.statuses.items()}
            )
        await insert_events(conn, decision.event_rows)
        if decision.receipts.changed:
            await unmatched_rows.save_receipts(
                conn,
                store,
                decision.receipts,
                {key: receipt_id for key, (receipt_id, _t) in receipts.items()},
                decision.addresses,
                height,
            )
        return decision
