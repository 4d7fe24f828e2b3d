"""Payment requests, their incoming transfers and the sync height.

Functions that take a connection run inside the caller's transaction (the sync
tick reads and writes in one); ``PaymentStore`` methods open their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeAlias

from sqlalchemy import ColumnElement, bindparam, delete, exists, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.db import Database, as_utc, utcnow
from xmrgate.adapters.store.greenfield_invoices import insert_row
from xmrgate.adapters.store.links import admit_link_request
from xmrgate.adapters.store.tables import payment_requests, sync_state, transfers
from xmrgate.domain.errors import AlreadyExists, RequestHasFunds, SubaddressTaken
from xmrgate.domain.fiat import Quote
from xmrgate.domain.greenfield.invoice_row import InvoiceRow
from xmrgate.domain.ledger import Transfer, TransferState
from xmrgate.domain.records import PaymentRequest, PaymentStatus
from xmrgate.domain.stores import DEFAULT_STORE

SYNC_STATE_ID = 1


def _request(row: Mapping[Any, Any]) -> PaymentRequest:
    return PaymentRequest(
        id=row["id"],
        address=row["address"],
        subaddr_index=row["subaddr_index"],
        amount=row["amount"],
        description=row["description"],
        callback_url=row["callback_url"],
        return_url=row["return_url"],
        created_at=as_utc(row["created_at"]),
        created_height=row["created_height"],
        expires_at=None if row["expires_at"] is None else as_utc(row["expires_at"]),
        underpay_tolerance=row["underpay_tolerance"],
        status=row["status"],
        store_id=row["store_id"],
        price=row["price"],
        # Absent from rows of a query that names its columns (the listing's summaries).
        refunded=row.get("refunded", 0),
        link=row.get("link_id"),
    )


# The row-to-record mappings, for the other query modules (the list, the tick).
request_from_row = _request


def _transfer(row: Mapping[Any, Any]) -> Transfer:
    return Transfer(
        tx_hash=row["tx_hash"],
        subaddr_index=row["subaddr_index"],
        amount=row["amount"],
        fee=row["fee"],
        height=row["height"],
        timestamp=row["timestamp"],
        unlock_time=row["unlock_time"],
        double_spend_seen=bool(row["double_spend_seen"]),
        state=TransferState(row["state"]),
        first_seen=row["first_seen"],
    )


transfer_from_row = _transfer

_SYNCED_HEIGHT = (
    select(sync_state.c.wallet_height).where(sync_state.c.id == SYNC_STATE_ID).scalar_subquery()
)
# The creation height of a new request: a subquery, so an INSERT stays one statement.
SYNCED_HEIGHT = _SYNCED_HEIGHT

# The hot read, built once: request columns, transfer columns, chain height.
_REQUEST_KEYS = [c.name for c in payment_requests.c]
_TRANSFER_KEYS = [c.name for c in transfers.c]
_STATUS_QUERY = (
    select(
        payment_requests,
        *[c.label(f"t_{c.name}") for c in transfers.c],
        _SYNCED_HEIGHT.label("chain_height"),
    )
    .select_from(
        payment_requests.outerjoin(transfers, transfers.c.request_id == payment_requests.c.id)
    )
    .where(payment_requests.c.address == bindparam("address"))
)
# The same within one store: another store's address reads as unknown (404, never 403).
_STATUS_IN_STORE_QUERY = _STATUS_QUERY.where(payment_requests.c.store_id == bindparam("store"))


class PaymentStore:
    """Reads and writes of payment requests for the API, within one store.

    ``store_id`` None reads every store (the public checkout page, which finds a request
    by its address alone); it cannot create requests.
    """

    def __init__(self, db: Database, store_id: str | None = DEFAULT_STORE) -> None:
        self._db = db
        self._store_id = store_id

    @property
    def store_id(self) -> str | None:
        """The store this repository reads and writes (None: all, read-only)."""
        return self._store_id

    def _in_store(self) -> Any:
        if self._store_id is None:
            return payment_requests.c.id.is_not(None)
        return payment_requests.c.store_id == self._store_id

    async def create(
        self,
        *,
        address: str,
        subaddr_index: int,
        amount: int,
        description: str,
        callback_url: str | None,
        return_url: str | None,
        expires_at: datetime | None = None,
        underpay_tolerance: int = 0,
        status: str = "waiting",
        price: Quote | None = None,
        link_id: str | None = None,
        greenfield: InvoiceRow | None = None,
        idempotency_ref: str | None = None,
    ) -> PaymentRequest:
        """Record a new payment request; its creation height is the last synced height.

        ``link_id``: the payment link that made it (``domain/links.py``), if one did;
        LinkInactive, LinkUsedUp or MissingReference when that link may not make it now
        (``links.admit_link_request``, in the inserting transaction). ``greenfield``: a
        Greenfield invoice's row, inserted next in the same transaction (its error, a
        duplicate id too, raised as is: neither is written).
        """
        values = {
            "address": address,
            "subaddr_index": subaddr_index,
            "amount": amount,
            "description": description,
            "callback_url": callback_url,
            "return_url": return_url,
            "created_at": utcnow(),
            "expires_at": expires_at,
            "underpay_tolerance": underpay_tolerance,
            "status": status,
            "price": price,
            "link_id": link_id,
            "idempotency_ref": idempotency_ref,
        }
        if self._store_id is None:
            raise RuntimeError("a payment request is created in a store")
        # One statement: the creation height comes from sync_state in the INSERT itself.
        # A link's request: admitted by its link first, in the same transaction; an
        # invoice's row: inserted after it, in the same transaction.
        alone = link_id is None and greenfield is None
        inserted = False
        try:
            async with self._db.write(single_statement=alone) as conn:
                if link_id is not None:
                    await admit_link_request(conn, link_id, lock=not self._db.is_sqlite)
                row = (
                    await conn.execute(
                        insert(payment_requests)
                        .values(**values, store_id=self._store_id, created_height=_SYNCED_HEIGHT)
                        .returning(payment_requests.c.id, payment_requests.c.created_height)
                    )
                ).one()
                inserted = True
                if greenfield is not None:
                    await insert_row(conn, greenfield, row[0])
        except AlreadyExists as exc:
            if inserted:  # the invoice's row broke a key, not the request
                raise
            if idempotency_ref is not None and await self.by_idempotency_ref(idempotency_ref):
                # Another process made it under the same claim (it took over ours).
                raise AlreadyExists(
                    "a request was made under this Idempotency-Key already"
                ) from exc
            # The address or the index is in use.
            raise SubaddressTaken(
                f"subaddress index {subaddr_index} is already in use by another request"
            ) from exc
        fields = {
            name: value
            for name, value in values.items()
            if name not in ("link_id", "idempotency_ref")
        }
        return PaymentRequest(
            id=row[0],
            created_height=row[1],
            store_id=self._store_id,
            link=link_id,
            **fields,  # type: ignore[arg-type]
        )

    async def highest_subaddr_index(self) -> int:
        """The highest subaddress index any payment request uses (0 when none)."""
        async with self._db.read() as conn:
            value = (
                await conn.execute(
                    select(func.max(payment_requests.c.subaddr_index)).where(self._in_store())
                )
            ).scalar()
            return int(value or 0)

    async def by_idempotency_ref(self, ref: str) -> PaymentRequest | None:
        """The request made under an Idempotency-Key claim's reference (in this store)."""
        query = select(payment_requests).where(payment_requests.c.idempotency_ref == ref)
        if self._store_id is not None:
            query = query.where(payment_requests.c.store_id == self._store_id)
        async with self._db.read() as conn:
            row = (await conn.execute(query)).mappings().first()
        return _request(row) if row else None

    async def get(self, address: str) -> PaymentRequest | None:
        """The payment request of ``address``, if any."""
        async with self._db.read() as conn:
            return await request_by_address(conn, address, self._store_id)

    async def delete(self, address: str) -> bool:
        """Forget an unpaid request (its events go with it); False when there is none.

        Raises ``RequestHasFunds`` and deletes nothing when a transfer to it is recorded.
        The test and the delete are one statement (``DELETE ... WHERE NOT EXISTS``): a
        check before it would let a sync tick record a payment in between, which the
        delete would then cascade away with its events.

        PostgreSQL needs a row lock first: a tick's uncommitted transfer is invisible
        to the DELETE's snapshot and holds only a KEY SHARE lock on the request (its
        foreign key), so a bare DELETE waits for it, then cascades to the transfer just
        committed. ``FOR UPDATE`` waits for the tick instead, and the DELETE after it (a
        new READ COMMITTED snapshot) sees the transfer; a tick that comes second waits
        for us and finds the request gone. SQLite has one writer: the DELETE holds the
        write lock from its start and sees every committed transfer (no read before it,
        which would pin an older snapshot).
        """
        async with self._db.write() as conn:
            if not self._db.is_sqlite:
                locked = await conn.execute(
                    select(payment_requests.c.id)
                    .where(payment_requests.c.address == address, self._in_store())
                    .with_for_update()
                )
                if locked.first() is None:
                    return False
            unpaid = ~exists().where(transfers.c.request_id == payment_requests.c.id)
            result = await conn.execute(
                delete(payment_requests).where(
                    payment_requests.c.address == address, self._in_store(), unpaid
                )
            )
            if result.rowcount:
                return True
            # Nothing deleted: no such request, or it has a transfer. Our lock (the row
            # on PostgreSQL, the write lock on SQLite) keeps that answer still meanwhile.
            if await request_by_address(conn, address, self._store_id) is None:
                return False
        raise RequestHasFunds()

    async def status(self, address: str) -> PaymentStatus | None:
        """The request, all its transfers and the synced chain height: ONE query.

        This is the hot read path (GET /receive, the checkout page): a single
        statement on an autocommit connection, so no BEGIN/ROLLBACK round trips.
        """
        async with self._db.read(autocommit=True) as conn:
            if self._store_id is None:
                rows = (await conn.execute(_STATUS_QUERY, {"address": address})).all()
            else:
                query, values = (
                    _STATUS_IN_STORE_QUERY,
                    {"address": address, "store": self._store_id},
                )
                rows = (await conn.execute(query, values)).all()
        if not rows:
            return None
        width = len(payment_requests.c)
        found = [
            _transfer(dict(zip(_TRANSFER_KEYS, row[width:-1], strict=True)))
            for row in rows
            if row[width] is not None
        ]
        first = rows[0]
        return PaymentStatus(
            request=_request(dict(zip(_REQUEST_KEYS, first[:width], strict=True))),
            transfers=found,
            chain_height=first[-1] or 0,
        )


async def request_by_address(
    conn: AsyncConnection, address: str, store_id: str | None = None
) -> PaymentRequest | None:
    """The payment request of ``address`` (in ``store_id``, if given) in the caller's
    transaction."""
    query = select(payment_requests).where(payment_requests.c.address == address)
    if store_id is not None:
        query = query.where(payment_requests.c.store_id == store_id)
    row = (await conn.execute(query)).mappings().first()
    return _request(row) if row else None


async def chain_height(conn: AsyncConnection, sync_id: int = SYNC_STATE_ID) -> int | None:
    """The wallet height the last sync tick of wallet ``sync_id`` saw (None before it)."""
    return (
        await conn.execute(select(sync_state.c.wallet_height).where(sync_state.c.id == sync_id))
    ).scalar()


async def set_chain_height(
    conn: AsyncConnection, height: int, *, exists: bool, sync_id: int = SYNC_STATE_ID
) -> None:
    """Store the wallet height of this tick."""
    if exists:
        await conn.execute(
            update(sync_state)
            .where(sync_state.c.id == sync_id)
            .values(wallet_height=height, updated_at=utcnow())
        )
    else:
        await conn.execute(
            insert(sync_state).values(id=sync_id, wallet_height=height, updated_at=utcnow())
        )


# The requests of one wallet's tick: None (every request), or a condition on them.
Scope: TypeAlias = "ColumnElement[bool] | None"


def _scoped(query: Any, scope: Scope) -> Any:
    return query if scope is None else query.where(scope)


async def oldest_creation_height(conn: AsyncConnection, scope: Scope = None) -> int | None:
    """The lowest creation height of any request in scope (None: none has one)."""
    query = _scoped(select(func.min(payment_requests.c.created_height)), scope)
    value = (await conn.execute(query)).scalar()
    return None if value is None else int(value)


async def any_request(conn: AsyncConnection, scope: Scope = None) -> bool:
    """True when at least one payment request (in scope) exists."""
    query = _scoped(select(payment_requests.c.id), scope).limit(1)
    return (await conn.execute(query)).first() is not None


def transfers_in_scope(scope: Scope) -> Scope:
    """``scope`` as a condition on transfers: their request is in it (one key lookup per
    transfer row, so a window's cost stays the window's)."""
    if scope is None:
        return None
    return exists().where(payment_requests.c.id == transfers.c.request_id, scope)


def lowest_locked_query(scope: Scope = None) -> Any:
    """The height of the oldest mined transfer (in scope) that has not unlocked yet."""
    query = select(func.min(transfers.c.height).label("height")).where(
        transfers.c.state == TransferState.CONFIRMED.value
    )
    return _scoped(query, transfers_in_scope(scope))


async def lowest_locked_height(conn: AsyncConnection, scope: Scope = None) -> int | None:
    """Height of the oldest mined transfer (in scope) that has not unlocked yet."""
    height = (await conn.execute(lowest_locked_query(scope))).scalar()
    return None if height is None else int(height)
