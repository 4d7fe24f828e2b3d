"""The serving process stays free of Alembic and of libraries' optional extras.

``Database.migrate`` knows a current schema from the revision files' names, without
Alembic; ``xmrgate serve`` migrates a schema that is behind in a child process
(``runtime/lean_process.py``). Each check that a module was NOT imported runs in a new
interpreter: this test process has imported Alembic long ago.
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path
from typing import Any

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.schema_revision import MIGRATIONS_DIR, at_newest, newest_revision


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


def _is_current(url: str) -> bool:
    async def check() -> bool:
        db = Database(url)
        try:
            async with db.engine.connect() as conn:
                return await conn.run_sync(at_newest)
        finally:
            await db.dispose()

    return asyncio.run(check())


def _tables(url: str) -> set[str]:
    async def names() -> set[str]:
        db = Database(url)
        try:
            async with db.engine.connect() as conn:
                rows = await conn.exec_driver_sql("SELECT name FROM sqlite_master")
                return {row[0] for row in rows}
        finally:
            await db.dispose()

    return asyncio.run(names())


def test_the_newest_revision_by_file_name_is_alembics_head() -> None:
    """The cheap reading agrees with Alembic's own (a branch or a misnamed file fails)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(config).get_heads() == [newest_revision()]


@pytest.fixture(scope="module")
def serving_start(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """One new interpreter does what ``xmrgate serve`` does before it serves, on a new
    SQLite file, and tells what it imported at each step (one interpreter for every
    check: each start costs a second of CPU)."""
    url = _sqlite_url(tmp_path_factory.mktemp("lean") / "gw.sqlite3")
    assert not _is_current(url)
    done = _python(
        f"""
        import asyncio, json, sys
        from xmrgate.runtime.lean_process import migrate_in_child, skip_optional_imports
        skip_optional_imports()
        import httpx
        from xmrgate.adapters.store.db import Database
        def loaded(*names):
            return [name for name in names if sys.modules.get(name)]
        migrate_in_child({url!r})
        after_child = loaded("alembic", "mako")
        async def main():
            db = Database({url!r})
            try:
                await db.migrate()  # as the server's start does: the schema is current
            finally:
                await db.dispose()
            async with httpx.AsyncClient() as client:
                return client.timeout.connect
        timeout = asyncio.run(main())
        print(json.dumps({{
            "after_child": after_child,
            "after_migrate": loaded("alembic", "mako"),
            "extras": loaded("rich", "pygments", "trio"),
            "client_timeout": timeout,
        }}))
        """
    )
    assert done.returncode == 0, done.stderr
    return url, json.loads(done.stdout)


def test_serve_migrates_in_a_child_and_never_imports_alembic(
    serving_start: tuple[str, dict[str, Any]],
) -> None:
    url, seen = serving_start
    assert _is_current(url) and "payment_requests" in _tables(url)  # the child migrated it
    assert seen["after_child"] == []


def test_a_current_schema_is_migrated_without_importing_alembic(
    serving_start: tuple[str, dict[str, Any]],
) -> None:
    _, seen = serving_start
    assert seen["after_migrate"] == []


def test_a_failed_migration_in_the_child_refuses_the_start_with_its_message(
    tmp_path: Path,
) -> None:
    """A database at a revision this version does not know (a downgraded gateway)."""
    path = tmp_path / "gw.sqlite3"
    url = _sqlite_url(path)
    asyncio.run(_record_revision(url, "9999"))
    from xmrgate.runtime.lean_process import migrate_in_child

    with pytest.raises(SystemExit) as refused:
        migrate_in_child(url)
    message = str(refused.value.code)
    assert "migrating the database failed" in message
    assert "9999" in message


async def _record_revision(url: str, revision: str) -> None:
    db = Database(url)
    try:
        async with db.engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE alembic_version (version_num VARCHAR(32))")
            await conn.exec_driver_sql(f"INSERT INTO alembic_version VALUES ('{revision}')")
    finally:
        await db.dispose()


def test_an_unreachable_database_is_left_to_the_start_to_report() -> None:
    """No child, no exit here: the lifespan reports the outage as it always has."""
    from xmrgate.runtime.lean_process import migrate_in_child

    migrate_in_child("postgresql+asyncpg://postgres@127.0.0.1:1/none")


def test_httpx_and_httpcore_work_without_their_optional_extras(
    serving_start: tuple[str, dict[str, Any]],
) -> None:
    _, seen = serving_start
    assert seen["extras"] == [] and seen["client_timeout"] == 5.0


def test_the_start_s_objects_are_frozen_and_its_garbage_collected() -> None:
    from xmrgate.runtime.lean_process import freeze_startup_objects

    class Cycle:
        other: object = None

    gc.unfreeze()
    try:
        a, b = Cycle(), Cycle()
        a.other, b.other = b, a
        garbage = weakref.ref(a)
        kept = Cycle()
        del a, b
        freeze_startup_objects()
        assert garbage() is None  # collected before the freeze, not frozen with the rest
        assert gc.get_freeze_count() > 0
        assert kept not in gc.get_objects()  # frozen: the collector no longer walks it
    finally:
        gc.unfreeze()
        gc.freeze()  # as tests/conftest.py left it


def test_a_migration_that_does_not_finish_in_time_refuses_the_start(tmp_path: Path) -> None:
    """The child is given up on with a message that says so (not a traceback)."""
    from xmrgate.runtime.lean_process import migrate_in_child

    url = _sqlite_url(tmp_path / "gw.sqlite3")
    with pytest.raises(SystemExit) as refused:
        migrate_in_child(url, timeout=0.01)  # a new interpreter alone takes longer
    assert "did not finish within 0.01 s" in str(refused.value.code)
