"""``testsupport.postgres.AdminSession``: the store tests' CREATE and DROP DATABASE over
connections kept open, on the real test server (``pg_stat_activity`` shows them)."""

from __future__ import annotations

import asyncio
import time
import uuid

import asyncpg
import pytest

from testsupport.postgres import TEST_ADMIN_URL, AdminSession, create_pg_database, drop_pg_database


def _column(query: str, value: str) -> list[object]:
    """The first column of ``query``'s rows (one parameter, ``value``), on a connection of
    its own."""

    async def fetch() -> list[object]:
        conn = await asyncpg.connect(TEST_ADMIN_URL)
        try:
            return [row[0] for row in await conn.fetch(query, value)]
        finally:
            await conn.close()

    return asyncio.run(fetch())


def _backends(name: str) -> list[object]:
    """The server's backend PIDs of the connections named ``name``."""
    return _column("SELECT pid FROM pg_stat_activity WHERE application_name = $1", name)


def test_calls_one_after_another_share_one_connection_until_close() -> None:
    session = AdminSession(name=f"admin-session-{uuid.uuid4().hex[:8]}")
    try:
        assert _backends(session.name) == []  # nothing before the first call
        session.execute("SELECT 1")
        first = _backends(session.name)
        session.execute("SELECT 2")
        url = create_pg_database(session=session)
        assert len(first) == 1 and _backends(session.name) == first
        assert url.rsplit("/", 1)[0] == TEST_ADMIN_URL.rsplit("/", 1)[0]
        drop_pg_database(url)
    finally:
        session.close()
    assert _backends(session.name) == []


def test_statements_given_together_run_at_once_on_connections_of_their_own() -> None:
    session = AdminSession(size=3, name=f"admin-session-{uuid.uuid4().hex[:8]}")
    try:
        started = time.monotonic()
        session.execute(*["SELECT pg_sleep(0.5)"] * 3)
        assert time.monotonic() - started < 1.4  # one after another: 1.5 s at least
        assert len(_backends(session.name)) == 3
        session.execute("SELECT 1")  # kept: no fourth
        assert len(_backends(session.name)) == 3
    finally:
        session.close()
    assert _backends(session.name) == []


def test_every_statement_runs_to_its_end_and_the_first_failure_is_raised() -> None:
    session = AdminSession(size=2, name=f"admin-session-{uuid.uuid4().hex[:8]}")
    url = TEST_ADMIN_URL.rsplit("/", 1)[0] + f"/xmrgate_test_{uuid.uuid4().hex[:10]}"
    try:
        with pytest.raises(asyncpg.DivisionByZeroError):
            session.execute("SELECT 1/0", f'CREATE DATABASE "{url.rsplit("/", 1)[1]}"')
        session.execute("SELECT 1")  # the session still works after a failure
    finally:
        session.close()
    name = url.rsplit("/", 1)[1]
    made = _column("SELECT datname FROM pg_database WHERE datname = $1", name)
    drop_pg_database(url)
    assert made == [name]  # made despite the failure beside it
