"""The sync tick's rows: what the window can change, and the writes of its decision.

Every function runs inside the tick's one transaction (``sync_store.py``). Requests are
keyed by (store, subaddress index): each store is an account of the main wallet, and
accounts reuse minor indices.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime

from sqlalchemy import Select, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import utcnow
from xmrgate.adapters.store.payments import (
    Scope,
    request_from_row,
    transfer_from_row,
    transfers_in_scope,
)
from xmrgate.adapters.store.tables import payment_requests, transfers
from xmrgate.domain.invoice import OPEN
from xmrgate.domain.ledger import Transfer, TransferState
from xmrgate.domain.records import PaymentRequest

# The states a mined transfer the window can still change is in (not pool, not gone).
MINED_STATES = [s.value for s in TransferState if s not in (TransferState.POOL, TransferState.GONE)]


def window_statement(start: int, scope: Scope = None) -> Select[int]:
    """Requests with a transfer in the pool or mined (not gone) at ``start`` or above.

    The states are listed, not ``state != 'gone'``: only ``state IN (...) AND height >=
    start`` is a range of ``ix_transfers_state_height`` (one per state). With ``!=``
    PostgreSQL read the whole index and SQLite the whole table on every tick, a cost
    growing with every transfer ever stored (``bench/scale.py``).
    """
    statement = (
        select(transfers.c.request_id).where(
            (transfers.c.state == TransferState.POOL.value)
            | (transfers.c.state.in_(MINED_STATES) & (transfers.c.height >= start))
        )
        # No DISTINCT (the caller makes a set): with it SQLite walked the request_id
        # index, all of it, to get the distinct values in order.
    )
    in_scope = transfers_in_scope(scope)
    return statement if in_scope is None else statement.where(in_scope)


async def request_ids_in_window(conn: AsyncConnection, start: int, scope: Scope = None) -> set[int]:
    """Requests (in scope) with a transfer in the pool or mined at ``start`` or above."""
    return {r[0] for r in await conn.execute(window_statement(start, scope))}


StoreIndex = tuple[str, int]


async def requests_by_store_index(
    conn: AsyncConnection, keys: Collection[StoreIndex]
) -> dict[StoreIndex, PaymentRequest]:
    """Payment requests of the given (store, subaddress index) pairs (unknown ones absent)."""
    found: dict[StoreIndex, PaymentRequest] = {}
    by_store: dict[str, list[int]] = {}
    for store_id, index in keys:
        by_store.setdefault(store_id, []).append(index)
    for store_id, indices in by_store.items():
        wanted = sorted(indices)
        # Chunked: SQLite limits bound parameters per statement.
        for i in range(0, len(wanted), 500):
            rows = await conn.execute(
                select(payment_requests).where(
                    payment_requests.c.store_id == store_id,
                    payment_requests.c.subaddr_index.in_(wanted[i : i + 500]),
                )
            )
            for row in rows.mappings():
                found[(store_id, row["subaddr_index"])] = request_from_row(row)
    return found


async def requests_by_id(
    conn: AsyncConnection, ids: Collection[int]
) -> dict[StoreIndex, PaymentRequest]:
    """Payment requests of the given ids, by (store, subaddress index)."""
    found: dict[StoreIndex, PaymentRequest] = {}
    wanted = sorted(ids)
    for i in range(0, len(wanted), 500):
        rows = await conn.execute(
            select(payment_requests).where(payment_requests.c.id.in_(wanted[i : i + 500]))
        )
        for row in rows.mappings():
            found[(row["store_id"], row["subaddr_index"])] = request_from_row(row)
    return found


async def transfers_of(conn: AsyncConnection, request_ids: Collection[int]) -> list[Transfer]:
    """Every stored transfer of the given payment requests."""
    ids = sorted(request_ids)
    found: list[Transfer] = []
    for i in range(0, len(ids), 500):
        rows = await conn.execute(
            select(transfers).where(transfers.c.request_id.in_(ids[i : i + 500]))
        )
        found.extend(transfer_from_row(r) for r in rows.mappings())
    return found


async def save_transfers(
    conn: AsyncConnection,
    changed: Iterable[Transfer],
    existing: Collection[tuple[str, int]],
    request_id_by_index: Mapping[int, int],
) -> None:
    """Insert new transfers and update changed ones, of ONE store's requests."""
    now = utcnow()
    new_rows = []
    updated_rows = []
    for t in changed:
        row = {
            "amount": t.amount,
            "fee": t.fee,
            "height": t.height,
            "timestamp": t.timestamp,
            "unlock_time": t.unlock_time,
            "double_spend_seen": t.double_spend_seen,
            "state": t.state.value,
            "updated_at": now,
            "first_seen": t.first_seen,
        }
        if t.key in existing:
            updated_rows.append(
                {**row, "k_tx": t.tx_hash, "k_request": request_id_by_index[t.subaddr_index]}
            )
        else:
            new_rows.append(
                {
                    **row,
                    "tx_hash": t.tx_hash,
                    "subaddr_index": t.subaddr_index,
                    "request_id": request_id_by_index[t.subaddr_index],
                }
            )
    if new_rows:
        await conn.execute(insert(transfers), new_rows)
    if updated_rows:
        await conn.execute(
            update(transfers)
            .where(transfers.c.tx_hash == bindparam("k_tx"))
            .where(transfers.c.request_id == bindparam("k_request"))
            .values(
                {
                    c: bindparam(c)
                    for c in (
                        "amount",
                        "fee",
                        "height",
                        "timestamp",
                        "unlock_time",
                        "double_spend_seen",
                        "state",
                        "updated_at",
                        "first_seen",
                    )
                }
            ),
            updated_rows,
        )


async def expired_open_ids(conn: AsyncConnection, now: datetime, scope: Scope = None) -> set[int]:
    """Requests (in scope) recorded waiting/partial whose expiry has passed."""
    query = select(payment_requests.c.id).where(
        payment_requests.c.status.in_([s.value for s in OPEN]),
        payment_requests.c.expires_at <= now,
    )
    rows = await conn.execute(query if scope is None else query.where(scope))
    return {r[0] for r in rows}


async def save_statuses(conn: AsyncConnection, statuses: Mapping[int, str]) -> None:
    """Record the status of requests (by id) that the tick changed."""
    await conn.execute(
        update(payment_requests)
        .where(payment_requests.c.id == bindparam("k_id"))
        .values(status=bindparam("new_status")),
        [{"k_id": i, "new_status": str(s)} for i, s in statuses.items()],
    )
