"""The sync tick's unmatched receipts: what the window can change, and the writes.

Every function runs inside the tick's one transaction (``sync_store.py``), so a receipt,
its event and the removal of its index from the address pool are written together with
the requests' transfers and the height: a crash after the tick's commit loses nothing,
and one before it leaves nothing half-written (the next tick sees the same transfer).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import bindparam, delete, false, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import as_utc, utcnow
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.payments import transfer_from_row
from xmrgate.adapters.store.tables import address_pool, events, unmatched_receipts
from xmrgate.adapters.store.tick_rows import MINED_STATES
from xmrgate.domain import unmatched
from xmrgate.domain.ledger import Transfer, TransferState

_R = unmatched_receipts.c
_CHANGING = ("amount", "fee", "height", "timestamp", "unlock_time", "double_spend_seen")


async def receipts_for_tick(
    conn: AsyncConnection,
    stores: Collection[str],
    start: int,
    observed: Mapping[str, Collection[int]],
) -> dict[str, dict[tuple[str, int], tuple[int, Transfer]]]:
    """By store: the receipts the window can change (pool, or mined at ``start`` or above)
    and every receipt of an observed subaddress, as key -> (id, transfer)."""
    found: dict[str, dict[tuple[str, int], tuple[int, Transfer]]] = {}
    if not stores and not observed:
        return found
    # One statement (a tick's cost is counted in statements, bench/stores.py): the window,
    # or a subaddress observed now. Observed indices are a tick's window of transfers;
    # past 500 of a store they are read in chunks (SQLite limits bound parameters).
    in_window = (_R.state == TransferState.POOL.value) | (
        _R.state.in_(MINED_STATES) & (_R.height >= start)
    )
    chunks: list[Any] = []
    for store, indices in observed.items():
        wanted = sorted(indices)
        chunks.extend(
            (_R.store_id == store) & _R.subaddr_index.in_(wanted[i : i + 500])
            for i in range(0, len(wanted), 500)
        )
    first, rest = chunks[:1], chunks[1:]
    statements = [
        select(unmatched_receipts).where(
            (_R.store_id.in_(sorted(stores)) & in_window) | or_(false(), *first)
        )
    ]
    statements += [select(unmatched_receipts).where(chunk) for chunk in rest]
    for statement in statements:
        for row in (await conn.execute(statement)).mappings():
            found.setdefault(row["store_id"], {})[(row["tx_hash"], row["subaddr_index"])] = (
                row["id"],
                transfer_from_row(row),
            )
    return found


async def save_receipts(
    conn: AsyncConnection,
    store: str,
    outcome: unmatched.ReceiptOutcome,
    existing: Mapping[tuple[str, int], int],
    addresses: Mapping[int, str],
    height: int,
) -> int:
    """Write one store's receipt changes and the events of their announced steps.

    A new receipt's subaddress leaves the address pool in the same transaction: an
    address that already received money must never be handed to a customer.
    Returns the number of events written.
    """
    now = utcnow()
    ids = dict(existing)
    updated = []
    for t in outcome.changed:
        values = {c: getattr(t, c) for c in _CHANGING}
        values |= {"state": t.state.value, "first_seen": t.first_seen, "updated_at": now}
        if t.key in ids:
            updated.append({**values, "k_id": ids[t.key]})
            continue
        inserted = await conn.execute(
            insert(unmatched_receipts)
            .values(
                **values,
                store_id=store,
                subaddr_index=t.subaddr_index,
                tx_hash=t.tx_hash,
                address=addresses.get(t.subaddr_index, ""),
                status=unmatched.ReceiptStatus.OPEN.value,
                created_at=now,
            )
            .returning(_R.id)
        )
        ids[t.key] = int(inserted.scalar_one())
        await conn.execute(
            delete(address_pool).where(
                address_pool.c.store_id == store,
                address_pool.c.subaddr_index == t.subaddr_index,
            )
        )
    if updated:
        await conn.execute(
            update(unmatched_receipts)
            .where(_R.id == bindparam("k_id"))
            .values({c: bindparam(c) for c in (*_CHANGING, "state", "first_seen", "updated_at")}),
            updated,
        )
    rows = await _event_rows(conn, store, outcome.announced, ids, height)
    await insert_events(conn, rows)
    return len(rows)


async def _event_rows(
    conn: AsyncConnection,
    store: str,
    announced: list[Transfer],
    ids: Mapping[tuple[str, int], int],
    height: int,
) -> list[dict[str, Any]]:
    """One feed row per announced step, with the receipt as it stands after the tick."""
    if not announced:
        return []
    wanted = sorted({ids[t.key] for t in announced})
    stored = {
        row["id"]: row
        for row in (
            await conn.execute(select(unmatched_receipts).where(_R.id.in_(wanted)))
        ).mappings()
    }
    rows = []
    for step in announced:
        receipt_id = ids[step.key]
        receipt = receipt_from_row(stored[receipt_id])
        # The step's own state (a receipt confirmed and unlocked in one tick is
        # announced as confirmed).
        shown = unmatched.UnmatchedReceipt(
            id=receipt.id,
            store_id=receipt.store_id,
            address=receipt.address,
            transfer=step,
            status=receipt.status,
            note=receipt.note,
            created_at=receipt.created_at,
            dismissed_at=receipt.dismissed_at,
            refunded=receipt.refunded,
        )
        rows.append(
            {
                "id": str(uuid.uuid4()),
                "request_id": None,
                "receipt_id": receipt_id,
                "store_id": store,
                "kind": unmatched.UNMATCHED_EVENT,
                "tx_hash": step.tx_hash,
                # No callback: a receipt has no request to name one (GET /events
                # lists it).
                "callback_url": None,
                "payload": json.dumps(unmatched.event_json(shown, height), separators=(",", ":")),
            }
        )
    return rows


async def confirmed_in_pool(
    conn: AsyncConnection, pooled: Mapping[int, tuple[str, int]]
) -> frozenset[tuple[str, int]]:
    """Of these pool receipts (id -> key), those whose last event said "confirmed": a
    reorg put them back in the pool, and their loss must be announced too."""
    if not pooled:
        return frozenset()
    rows = await conn.execute(
        select(events.c.receipt_id, events.c.payload)
        .where(events.c.receipt_id.in_(sorted(pooled)))
        .order_by(events.c.seq)
    )
    last: dict[int, str] = {}
    for receipt_id, payload in rows:
        last[int(receipt_id)] = str(json.loads(payload).get("unmatched", {}).get("state"))
    return frozenset(
        pooled[i] for i, state in last.items() if state == TransferState.CONFIRMED.value
    )


def receipt_from_row(row: Mapping[Any, Any]) -> unmatched.UnmatchedReceipt:
    """A stored receipt (a row of ``unmatched_receipts``)."""
    return unmatched.UnmatchedReceipt(
        id=int(row["id"]),
        store_id=row["store_id"],
        address=row["address"],
        transfer=transfer_from_row(row),
        status=unmatched.ReceiptStatus(row["status"]),
        note=row["note"],
        created_at=as_utc(row["created_at"]),
        dismissed_at=None if row["dismissed_at"] is None else as_utc(row["dismissed_at"]),
        refunded=int(row["refunded"]),
    )


def lowest_locked_receipt_query(stores: Collection[str]) -> Any:
    """The height of the oldest mined receipt (of these stores) not unlocked yet: the
    window must reach back to it, or it would never be seen unlocked."""
    return select(func.min(_R.height).label("height")).where(
        _R.state == TransferState.CONFIRMED.value, _R.store_id.in_(sorted(stores))
    )
