"""``testsupport/pg_tablespace.py``: the store tests' copies in a tablespace on tmpfs, on
the real test server. These tests use their own name prefix: the tablespace the other
test processes are copying into is never touched."""

from __future__ import annotations

import os
import secrets
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from testsupport import pg_tablespace
from testsupport.pg_tablespace import SWITCH, TMPFS, tmpfs_tablespace
from testsupport.postgres import AdminSession, create_pg_database, drop_pg_database


@pytest.fixture
def session() -> Iterator[AdminSession]:
    admin = AdminSession()
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture
def prefix(session: AdminSession) -> Iterator[str]:
    """A prefix of this test's own; its tablespaces and their folders go afterwards."""
    mine = f"xmrgate_tsprobe_{uuid.uuid4().hex[:6]}_"
    yield mine
    for name, location in _tablespaces(session, mine):
        session.execute(f'DROP TABLESPACE "{name}"')
        shutil.rmtree(location, ignore_errors=True)


def _tablespaces(session: AdminSession, prefix: str) -> list[tuple[str, Path]]:
    async def fetch(conn: asyncpg.Connection) -> list[tuple[str, Path]]:
        rows = await conn.fetch(
            "SELECT spcname, pg_tablespace_location(oid) AS location FROM pg_tablespace"
            " WHERE starts_with(spcname, $1) ORDER BY spcname",
            prefix,
        )
        return [(str(row["spcname"]), Path(row["location"])) for row in rows]

    return session.call(fetch)


def _may_give_the_server_a_folder(session: AdminSession) -> bool:
    """What the module asks of this machine: the server's data folder is here, and this
    process runs as root or as its owner."""
    data = Path(session.call(lambda conn: conn.fetchval("SHOW data_directory")))
    try:
        owner = data.stat().st_uid
    except OSError:
        return False
    return TMPFS.is_dir() and os.geteuid() in (0, owner)


def test_a_copy_goes_to_a_tablespace_on_tmpfs_where_one_can_be_made(
    session: AdminSession, prefix: str
) -> None:
    name = tmpfs_tablespace(session, prefix)
    if not _may_give_the_server_a_folder(session):
        assert name is None  # the copies stay in the default tablespace
        return
    assert name is not None and name.startswith(prefix)
    [(listed, location)] = _tablespaces(session, prefix)
    assert listed == name and location.parent == TMPFS
    url = create_pg_database(session=session, tablespace=name)
    try:
        database = url.rsplit("/", 1)[1]
        placed = session.call(
            lambda conn: conn.fetchval(
                "SELECT t.spcname FROM pg_database d JOIN pg_tablespace t"
                " ON t.oid = d.dattablespace WHERE d.datname = $1",
                database,
            )
        )
        assert placed == name
        assert any(location.glob("PG_*/*"))  # its files are in the folder on tmpfs
    finally:
        drop_pg_database(url)
    # The next process finds it rather than making another.
    assert tmpfs_tablespace(session, prefix) == name
    assert [n for n, _ in _tablespaces(session, prefix)] == [name]


def test_one_whose_folder_is_gone_is_dropped_and_a_new_one_made(
    session: AdminSession, prefix: str
) -> None:
    first = tmpfs_tablespace(session, prefix)
    if first is None:
        assert not _may_give_the_server_a_folder(session)
        return
    [(_, location)] = _tablespaces(session, prefix)
    shutil.rmtree(location)  # as a reboot empties /dev/shm
    second = tmpfs_tablespace(session, prefix)
    assert second is not None and second != first
    assert [n for n, _ in _tablespaces(session, prefix)] == [second]


def test_switched_off_nothing_is_made(
    session: AdminSession, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SWITCH, "0")
    assert tmpfs_tablespace(session, prefix) is None
    assert _tablespaces(session, prefix) == []


def test_a_failed_setup_leaves_the_copies_in_the_default_tablespace_with_a_warning(
    session: AdminSession, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Here the probe folder cannot be made (a file of its name is in the way)."""
    monkeypatch.setattr(pg_tablespace, "TMPFS", tmp_path)
    monkeypatch.setattr(secrets, "token_hex", lambda _n: "fixed")
    (tmp_path / "xmrgate-pg-probe-fixed").write_text("in the way", encoding="utf-8")
    with pytest.warns(UserWarning, match="no tablespace on tmpfs"):
        assert tmpfs_tablespace(session, prefix) is None
    assert _tablespaces(session, prefix) == []


def test_a_tablespace_that_cannot_be_made_leaves_no_folder_and_a_warning(
    session: AdminSession,
) -> None:
    """PostgreSQL refuses names that start with ``pg_``: the folder made for it goes."""
    prefix = f"pg_xmrgate_probe_{uuid.uuid4().hex[:6]}_"
    if not _may_give_the_server_a_folder(session):
        assert tmpfs_tablespace(session, prefix) is None
        return
    with pytest.warns(UserWarning, match="no tablespace on tmpfs"):
        assert tmpfs_tablespace(session, prefix) is None
    assert not list(TMPFS.glob(prefix.replace("_", "-") + "*"))
    assert _tablespaces(session, prefix) == []
