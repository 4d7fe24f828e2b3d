"""``SqlFloodWindows``, the public pages' limits counted in the database, on
SQLite and PostgreSQL: a window opened by the first attempt, refusals that never extend
the wait, a closed window reopened, limiters and keys apart, the sweep. On PostgreSQL the
count holds across two engines (two processes of a cluster), one after another and all
at once, and a database that cannot be reached is DatabaseUnavailable (never a count)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.flood_windows import SqlFloodWindows
from xmrgate.adapters.store.tables import flood_windows
from xmrgate.domain.errors import DatabaseUnavailable

START = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
LIMIT = 10
WINDOW = 60.0


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


async def _rows(db: Database) -> int:
    async with db.read() as conn:
        return int(
            (await conn.execute(select(func.count()).select_from(flood_windows))).scalar_one()
        )


def test_a_window_counts_refuses_and_reopens(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        clock = Clock()
        counter = SqlFloodWindows(db, clock=clock)
        answers = [await counter.hit("link_client", "192.0.2.7", 3, WINDOW) for _ in range(3)]
        assert answers == [0, 0, 0]
        assert await counter.hit("link_client", "192.0.2.7", 3, WINDOW) == 60
        clock.advance(20)
        # Refused attempts are not counted on: the wait still ends where the window does.
        for _ in range(5):
            assert await counter.hit("link_client", "192.0.2.7", 3, WINDOW) == 40
        clock.advance(39.5)
        assert await counter.hit("link_client", "192.0.2.7", 3, WINDOW) == 1  # rounded up
        # Other keys, and the same key under another limiter, count on their own.
        assert await counter.hit("link_client", "192.0.2.8", 3, WINDOW) == 0
        assert await counter.hit("refund_client", "192.0.2.7", 3, WINDOW) == 0
        clock.advance(0.5)
        # The window closed: the next attempt opens a new one.
        assert [await counter.hit("link_client", "192.0.2.7", 3, WINDOW) for _ in range(4)] == [
            0,
            0,
            0,
            60,
        ]

    on_database(scenario)


def test_the_sweep_deletes_closed_windows_only(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        clock = Clock()
        counter = SqlFloodWindows(db, clock=clock)
        await counter.hit("link", "ln_a", LIMIT, 10.0)
        await counter.hit("link", "ln_b", LIMIT, WINDOW)
        clock.advance(10)
        assert await counter.sweep() == 1
        assert await _rows(db) == 1
        # Sweeping now and then as attempts come (every time, here): the open one stays.
        sweeping = SqlFloodWindows(db, clock=clock, sweep_every=0.0)
        await sweeping.hit("link", "ln_c", LIMIT, WINDOW)
        clock.advance(WINDOW)
        await sweeping.hit("link", "ln_d", LIMIT, WINDOW)
        assert await _rows(db) == 1

    on_database(scenario)


# One process owns a SQLite file: several processes share a PostgreSQL database only.
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_two_processes_count_in_one_window(migrated_database_url: str) -> None:
    """PostgreSQL: attempts through two engines share one count, in turn and at once."""

    async def main() -> None:
        dbs = [Database(migrated_database_url), Database(migrated_database_url)]
        try:
            counters = [SqlFloodWindows(db) for db in dbs]
            # In turn: ten attempts alternating between the processes, then each refuses.
            turns = [
                await counters[n % 2].hit("link_client", "a", LIMIT, WINDOW) for n in range(10)
            ]
            assert turns == [0] * LIMIT
            for counter in counters:
                assert 1 <= await counter.hit("link_client", "a", LIMIT, WINDOW) <= 60
            # At once: 40 attempts from both: exactly LIMIT pass.
            burst = await asyncio.gather(
                *(counters[n % 2].hit("link", "b", LIMIT, WINDOW) for n in range(40))
            )
            assert burst.count(0) == LIMIT
            assert all(1 <= wait <= 60 for wait in burst if wait)
        finally:
            for db in dbs:
                await db.dispose()

    asyncio.run(main())


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_a_database_that_cannot_be_reached_is_unavailable(migrated_database_url: str) -> None:
    """Nothing listens on port 1: the attempt is neither allowed nor refused by count."""

    async def main() -> None:
        down = Database(migrated_database_url.replace(":5432/", ":1/"))
        try:
            with pytest.raises(DatabaseUnavailable):
                await SqlFloodWindows(down).hit("link_client", "a", LIMIT, WINDOW)
        finally:
            await down.dispose()

    assert ":5432/" in migrated_database_url
    asyncio.run(main())
