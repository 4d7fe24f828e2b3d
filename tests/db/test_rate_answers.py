"""The cluster's exchange-rate answers in the database: stored and read back
exactly on both backends; on PostgreSQL one leader at a time among several processes
(each a ``Database`` of its own), replaced once its connection is gone."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from xmrgate.adapters.store.db import RATES_LOCK_KEY, Database
from xmrgate.adapters.store.rate_answers import SqlRateAnswers
from xmrgate.core.rate_sharing import SharedAnswer
from xmrgate.domain.errors import DatabaseUnavailable

postgresql_only = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)

T0 = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)

#: The backend holding the rates' lock, seen from another connection.
# In this test's database only: other databases of the server (other tests' processes, a
# gateway of someone else's) hold the same key, and the test kills the holder it finds.
LOCK_HOLDER = (
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
    f"AND classid = {RATES_LOCK_KEY >> 32} AND objid = {RATES_LOCK_KEY & 0xFFFFFFFF} "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def answer(
    source: str,
    currency: str = "EUR",
    value: str | None = "150.25",
    *,
    error: str | None = None,
    misses: int = 0,
    later: float = 0.0,
) -> SharedAnswer:
    checked = T0 + timedelta(seconds=later)
    return SharedAnswer(
        source=source,
        currency=currency,
        value=None if value is None else Decimal(value),
        at=None if value is None else checked,
        error=error,
        checked_at=checked,
        misses=misses,
    )


def by_key(answers: list[SharedAnswer]) -> dict[tuple[str, str], SharedAnswer]:
    return {(a.source, a.currency): a for a in answers}


def test_answers_are_stored_and_read_back_exactly(on_database: Any) -> None:
    """Rates keep every digit (text, not float), times their microseconds and zone, a
    miss its reason and count; a later store replaces its pairs and keeps the others."""
    first = [
        answer("coingecko", value="150.123456789012345678901234567890"),
        answer("kraken", value=None, error="cannot connect: refused", misses=3),
        answer("cryptocompare", "USD", "0.000001"),
    ]
    second = [
        answer("coingecko", value="151", later=60, misses=0),
        answer("kraken", value="150.5", later=60, misses=3),
    ]

    async def scenario(db: Database) -> tuple[list[SharedAnswer], list[SharedAnswer]]:
        answers = SqlRateAnswers(db)
        assert await answers.load() == []
        assert await answers.lead()
        await answers.store(first)
        stored_first = await answers.load()
        await answers.store(second)
        stored_second = await answers.load()
        await answers.release()
        return stored_first, stored_second

    stored_first, stored_second = on_database(scenario)
    assert by_key(stored_first) == by_key(first)
    kraken = by_key(stored_first)[("kraken", "EUR")]
    assert kraken.at is None and kraken.value is None and kraken.misses == 3
    assert by_key(stored_first)[("coingecko", "EUR")].at == T0  # aware UTC, microseconds
    assert by_key(stored_second) == {
        ("coingecko", "EUR"): second[0],
        ("kraken", "EUR"): second[1],
        ("cryptocompare", "USD"): first[2],  # not in the second store: kept
    }


def test_a_reason_with_nul_is_stored_readable(on_database: Any) -> None:
    """PostgreSQL text cannot hold NUL: the reason (which may quote a hostile source) is
    stored with a replacement character and cut at 1000 characters."""

    async def scenario(db: Database) -> list[SharedAnswer]:
        answers = SqlRateAnswers(db)
        assert await answers.lead()
        await answers.store([answer("kraken", value=None, error="bad\x00" + "x" * 2000)])
        await answers.release()
        return await answers.load()

    [stored] = on_database(scenario)
    assert stored.error is not None and stored.error.startswith("bad\ufffdxxx")
    assert len(stored.error) == 1000


def on_two_databases(url: str, scenario: Callable[[Database, Database], Awaitable[Any]]) -> Any:
    """``scenario`` with two ``Database`` objects on one database: two processes."""

    async def main() -> Any:
        first, second = Database(url), Database(url)
        try:
            return await scenario(first, second)
        finally:
            await first.dispose()
            await second.dispose()

    return asyncio.run(main())


async def lock_holder(db: Database) -> int | None:
    async with db.engine.connect() as conn:
        pid = (await conn.exec_driver_sql(LOCK_HOLDER)).scalar()
    return None if pid is None else int(pid)


@postgresql_only
def test_one_leader_at_a_time_and_the_next_once_its_connection_is_gone(
    migrated_database_url: str,
) -> None:
    """The first to ask leads and keeps the lead across refreshes; the other follows and
    may not store. When the leader's connection dies (its process killed), the other
    takes the lead at its next try, and the old leader finds out and follows."""

    async def scenario(one: Database, two: Database) -> None:
        a, b = SqlRateAnswers(one), SqlRateAnswers(two)
        assert await a.lead() is True
        assert await b.lead() is False
        for _ in range(3):  # held from one refresh to the next, by the same session
            assert await a.lead() is True
            assert await b.lead() is False
        leader_pid = await lock_holder(two)
        assert leader_pid is not None
        with pytest.raises(DatabaseUnavailable):  # a follower cannot write as the leader
            await b.store([answer("kraken")])
        await a.store([answer("kraken", value="150")])
        assert [x.value for x in await b.load()] == [Decimal("150")]

        # The leader's process dies: its connection ends, PostgreSQL frees the lock.
        async with two.engine.connect() as conn:
            await conn.exec_driver_sql(f"SELECT pg_terminate_backend({leader_pid})")
        for _ in range(100):
            if await lock_holder(two) is None:
                break
            await asyncio.sleep(0.02)
        assert await b.lead() is True
        assert await lock_holder(one) not in (None, leader_pid)
        assert await a.lead() is False  # its connection is gone: it follows now
        with pytest.raises(DatabaseUnavailable):
            await a.store([answer("kraken", value="1")])
        await b.store([answer("kraken", value="151", later=1)])
        assert [x.value for x in await a.load()] == [Decimal("151")]

        # A leader that shuts down lets go at once.
        await b.release()
        assert await lock_holder(one) is None
        assert await a.lead() is True
        await a.release()

    on_two_databases(migrated_database_url, scenario)


@postgresql_only
def test_the_rates_lock_is_not_the_sync_lock(migrated_database_url: str) -> None:
    """Leading the rates does not stop another process from ticking, nor the reverse."""

    async def scenario(one: Database, two: Database) -> None:
        rates = SqlRateAnswers(one)
        assert await rates.lead()
        async with two.sync_leadership() as ticking:
            assert ticking
            assert await SqlRateAnswers(two).lead() is False
        await rates.release()

    on_two_databases(migrated_database_url, scenario)


def test_sqlite_always_leads(on_database: Any, backend: str) -> None:
    """One process owns a SQLite file: every ``SqlRateAnswers`` of it leads; on
    PostgreSQL only the first of the same process's two does."""

    async def scenario(db: Database) -> list[bool]:
        first, second = SqlRateAnswers(db), SqlRateAnswers(db)
        try:
            return [await first.lead(), await second.lead(), await first.lead()]
        finally:
            await first.release()
            await second.release()

    expected = [True, True, True] if backend == "sqlite" else [True, False, True]
    assert on_database(scenario) == expected
