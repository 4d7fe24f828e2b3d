"""SQLAlchemy errors become ours where they enter, on the real SQLite and PostgreSQL.

Each test checks the error a caller sees and that the original stays chained as
its cause (``raise ... from``), so the logs still show what the database said.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from xmrgate.adapters.store import payments
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.payouts import PayoutStore
from xmrgate.adapters.store.tables import payouts, sync_state
from xmrgate.devnet import free_port
from xmrgate.domain.errors import (
    AlreadyExists,
    DatabaseFault,
    DatabaseUnavailable,
    InvalidInput,
    MissingReference,
    SubaddressTaken,
)

# One pooled connection and no overflow: a second user waits pool_timeout, then fails.
# The connection is held throughout, so any wait ends the same way: 0.05 s, where 0.3 s
# made the five attempts below wait 1.5 s on each backend.
ONE_CONNECTION = {"pool_size": 1, "max_overflow": 0, "pool_timeout": 0.05}
# For what only PostgreSQL does; the fixture's own parameters are replaced by this one.
postgresql_only = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)


def _request(index: int) -> dict[str, Any]:
    return {
        "address": f"8test{index:04d}",
        "subaddr_index": index,
        "amount": 1000,
        "description": "",
        "callback_url": None,
        "return_url": None,
    }


def test_exhausted_pool_is_database_unavailable(on_database: Any) -> None:
    """No connection free within the pool timeout: DatabaseUnavailable (503), not a 500."""

    async def scenario(db: Database) -> list[BaseException]:
        store = PaymentStore(db)
        seen: list[BaseException] = []
        async with db.read():  # the only connection, held
            for attempt in (
                store.status("8test0001"),  # autocommit read: the hot path
                store.get("8test0001"),
                PayoutStore(db).recent(),
                store.create(**_request(1)),  # single-statement write
                store.delete("8test0001"),  # write transaction
            ):
                with pytest.raises(DatabaseUnavailable) as caught:
                    await attempt
                seen.append(caught.value)
        assert await store.get("8test0001") is None  # free again: works
        return seen

    for error in on_database(scenario, **ONE_CONNECTION):
        assert isinstance(error.__cause__, PoolTimeout)
        assert "no connection" in str(error)


@postgresql_only
def test_sync_leadership_with_exhausted_pool_is_database_unavailable(on_database: Any) -> None:
    """The sync tick's lock connection comes from the same pool (SQLite takes none)."""

    async def scenario(db: Database) -> None:
        async with db.read():
            with pytest.raises(DatabaseUnavailable):
                async with db.sync_leadership():
                    pass
        async with db.sync_leadership() as leader:
            assert leader

    on_database(scenario, **ONE_CONNECTION)


def test_unreachable_postgresql_is_database_unavailable() -> None:
    """Nothing listens on the port: DatabaseUnavailable, on reads, writes and migrate."""

    async def main() -> None:
        db = Database(f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/none")
        try:
            with pytest.raises(DatabaseUnavailable):
                await PaymentStore(db).get("8test0001")
            with pytest.raises(DatabaseUnavailable):
                await PayoutStore(db).record_requested(
                    [{"address": "8x", "amount": 1}], requested_by=None, idempotency_key=None
                )
            with pytest.raises(DatabaseUnavailable):
                await db.migrate()
        finally:
            await db.dispose()

    asyncio.run(main())


def test_used_subaddress_is_subaddress_taken(on_database: Any) -> None:
    """A second request on the same index clashes: SubaddressTaken <- AlreadyExists <- SQL."""

    async def scenario(db: Database) -> BaseException:
        store = PaymentStore(db)
        await store.create(**_request(7))
        with pytest.raises(SubaddressTaken) as caught:
            await store.create(**{**_request(7), "address": "8other"})
        return caught.value

    error = on_database(scenario)
    assert isinstance(error.__cause__, AlreadyExists)
    assert isinstance(error.__cause__.__cause__, IntegrityError)


def test_key_clash_in_a_transaction_is_already_exists(on_database: Any) -> None:
    """A primary key clash inside ``write()`` is AlreadyExists, and the transaction is undone."""

    async def scenario(db: Database) -> tuple[BaseException, int | None]:
        await PaymentStore(db).create(**_request(1))
        with pytest.raises(AlreadyExists) as caught:
            async with db.write() as conn:
                await payments.set_chain_height(conn, 10, exists=False)
                await payments.set_chain_height(conn, 11, exists=False)  # id 1 again
        async with db.read() as conn:
            height = (await conn.execute(select(sync_state.c.wallet_height))).scalar()
        return caught.value, height

    error, height = on_database(scenario)
    assert isinstance(error.__cause__, IntegrityError)
    assert height is None  # rolled back


def test_reference_to_a_gone_row_is_missing_reference(on_database: Any) -> None:
    """An event for a payment request that does not exist (deleted meanwhile)."""

    async def scenario(db: Database) -> BaseException:
        row = {
            "id": "00000000-0000-0000-0000-000000000001",
            "request_id": 999,
            "kind": "transfer.pool",
            "tx_hash": "ab" * 32,
            "callback_url": "http://127.0.0.1/cb",
            "payload": "{}",
        }
        with pytest.raises(MissingReference) as caught:
            async with db.write() as conn:
                await insert_events(conn, [row])
        return caught.value

    assert isinstance(on_database(scenario).__cause__, IntegrityError)


def test_other_refused_row_is_database_fault(on_database: Any) -> None:
    """A NOT NULL violation is our bug: DatabaseFault (500), not a clash with the state."""

    async def scenario(db: Database) -> BaseException:
        with pytest.raises(DatabaseFault) as caught:
            async with db.write() as conn:
                await conn.execute(insert(payouts).values(state=None))
        return caught.value

    assert isinstance(on_database(scenario).__cause__, IntegrityError)


@postgresql_only
def test_unstorable_value_is_invalid_input(on_database: Any) -> None:
    """PostgreSQL text cannot hold NUL (SQLite can): the caller's input, writes and lookups."""

    async def scenario(db: Database) -> None:
        store = PaymentStore(db)
        with pytest.raises(InvalidInput):
            await store.create(**{**_request(1), "description": "a\x00b"})
        with pytest.raises(InvalidInput):
            await store.get("8test\x00")

    on_database(scenario)
