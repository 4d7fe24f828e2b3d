"""A tablespace on tmpfs for the store tests' copies of the migrated template.

Each store test on PostgreSQL gets a copy of its process's migrated template
(``testsupport/migrated.py``): CREATE DATABASE writes the copy's ~300 files, DROP
DATABASE removes them. In the server's data folder on ext4 that cost 40-60 ms of CPU a
copy and 17-20 ms a drop, nearly all of it in the kernel (making and journaling files),
and a ``make unit`` run makes about 150; in a tablespace on tmpfs, 17 ms and 6-8 ms.

It is used only where it can be made safely, and the copies go to the server's default
tablespace otherwise (or with ``XMRGATE_TEST_PG_TABLESPACE=0``): the server's data folder
is on this machine (this process can read its owner), this process may give that owner a
folder in ``/dev/shm`` (it runs as root or as the server's user), and the server lists
the probe this process put in ``/dev/shm`` (``pg_ls_dir``: it sees the same files).

The tablespace is ``xmrgate_tests_<random>`` in ``/dev/shm/xmrgate-tests-<random>``
and holds only the throwaway copies, each dropped after its test; the empty tablespace
stays for the next run. One whose folder is gone (a reboot empties ``/dev/shm``) is
dropped, and a new one made. The test processes set it up one at a time (an advisory
lock).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import warnings
from pathlib import Path

import asyncpg

from testsupport.postgres import AdminSession

#: "0" keeps the copies in the server's default tablespace.
SWITCH = "XMRGATE_TEST_PG_TABLESPACE"
TMPFS = Path("/dev/shm")
#: The tests' tablespaces are named this and a random suffix.
PREFIX = "xmrgate_tests_"
#: pg_advisory_lock's key while one process sets the tablespace up ("xmrg").
LOCK_KEY = 0x786D7267


def tmpfs_tablespace(session: AdminSession, prefix: str = PREFIX) -> str | None:
    """The name of a usable tablespace on tmpfs for throwaway databases (found or made),
    or ``None`` where none can be made safely (see the module)."""
    if os.environ.get(SWITCH) == "0" or not TMPFS.is_dir():
        return None
    try:
        return session.call(lambda conn: _set_up(conn, prefix))
    except asyncpg.InsufficientPrivilegeError:  # not a superuser: no such setup
        return None
    except (OSError, asyncpg.PostgresError) as exc:  # the copies work without it
        warnings.warn(f"no tablespace on tmpfs for the test copies: {exc!r}", stacklevel=2)
        return None


# The file checks below block the event loop on purpose: it is the session's own
# (``AdminSession.call``), and nothing else runs on it meanwhile.
async def _set_up(conn: asyncpg.Connection, prefix: str) -> str | None:
    await conn.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
    try:
        data = Path(await conn.fetchval("SELECT current_setting('data_directory')"))
        try:
            owner = data.stat()  # noqa: ASYNC240 (see above)
        except OSError:  # the server's files are not on this machine (or not readable)
            return None
        if os.geteuid() not in (0, owner.st_uid) or not await _sees_tmpfs(conn):
            return None
        rows = await conn.fetch(
            "SELECT spcname, pg_tablespace_location(oid) AS location FROM pg_tablespace"
            " WHERE starts_with(spcname, $1) ORDER BY spcname",
            prefix,
        )
        for row in rows:
            if any(Path(row["location"]).glob("PG_*")):  # noqa: ASYNC240
                return str(row["spcname"])
            # Its folder is gone or empty: a reboot. Dropped unless a database is in it.
            with contextlib.suppress(asyncpg.PostgresError):
                await conn.execute(f'DROP TABLESPACE "{row["spcname"]}"')
        return await _make(conn, prefix, owner.st_uid, owner.st_gid)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)


async def _sees_tmpfs(conn: asyncpg.Connection) -> bool:
    """Whether the server lists a folder this process just made in ``TMPFS``."""
    probe = TMPFS / f"xmrgate-pg-probe-{secrets.token_hex(6)}"
    probe.mkdir()
    try:
        listed = await conn.fetch("SELECT pg_ls_dir($1) AS name", str(TMPFS))
    except asyncpg.PostgresError:
        return False
    finally:
        probe.rmdir()
    return probe.name in {row["name"] for row in listed}


async def _make(conn: asyncpg.Connection, prefix: str, uid: int, gid: int) -> str:
    """A new tablespace in a new folder owned by ``uid``; the folder goes again if the
    tablespace cannot be made (and :func:`tmpfs_tablespace` warns why)."""
    suffix = secrets.token_hex(4)
    folder = TMPFS / f"{prefix.replace('_', '-')}{suffix}"
    folder.mkdir(mode=0o700)
    try:
        if os.geteuid() != uid:
            os.chown(folder, uid, gid)
        name = f"{prefix}{suffix}"
        await conn.execute(f"CREATE TABLESPACE \"{name}\" LOCATION '{folder}'")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return name
