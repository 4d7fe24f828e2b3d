"""One schema: the migrations create exactly the tables of ``tables.py``, on both backends.

Adding a column, index or constraint to ``tables.py`` without a migration (or the
other way round) makes ``compare_metadata`` report it and this test fail.
"""

from __future__ import annotations

from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.schema_revision import MIGRATIONS_DIR
from xmrgate.adapters.store.schema_upgrade import alembic_config
from xmrgate.adapters.store.tables import metadata


def _schema_differences(conn: Connection) -> list[Any]:
    context = MigrationContext.configure(
        conn, opts={"compare_type": True, "compare_server_default": True}
    )
    return list(compare_metadata(context, metadata))


def _current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def test_migrations_create_exactly_the_tables(on_database: Any) -> None:
    """After ``Database.migrate()`` the database matches ``tables.metadata``: no difference."""

    async def scenario(db: Database) -> tuple[list[Any], str | None]:
        await db.migrate()  # again, as every start does: nothing to do
        async with db.engine.connect() as conn:
            return await conn.run_sync(_schema_differences), await conn.run_sync(_current_revision)

    differences, revision = on_database(scenario)
    assert differences == [], f"tables.py and the migrations differ: {differences}"
    assert revision == ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def test_alembic_environment_compares_with_the_tables(on_database: Any) -> None:
    """``env.py``'s target_metadata is the tables, so ``alembic check`` sees no change."""

    async def scenario(db: Database) -> None:
        async with db.engine.connect() as conn:
            await conn.run_sync(lambda c: command.check(alembic_config(c)))

    on_database(scenario)
