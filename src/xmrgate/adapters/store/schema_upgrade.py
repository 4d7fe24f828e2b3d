"""Alembic's part of ``Database.migrate``: imported only when the schema is behind.

Alembic and what it loads (Mako, its DDL modules, every revision file) cost the
process about 11 MB of resident memory. ``Database.migrate`` first compares the
database's revision with the newest file name (``schema_revision``, no Alembic), and
imports this module only when they differ; ``xmrgate serve`` even runs that upgrade
in a child process (``runtime/lean_process.py``), so the serving process never holds
Alembic at all.
"""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from xmrgate.adapters.store.schema_revision import MIGRATIONS_DIR


def alembic_config(connection: Connection) -> Config:
    """An Alembic configuration whose ``env.py`` runs on ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade_to_head(connection: Connection) -> None:
    """Apply every revision the database lacks, on ``connection``."""
    command.upgrade(alembic_config(connection), "head")


def alembic_heads(connection: Connection) -> set[str]:
    """The newest revisions as Alembic reads them from the revision files."""
    return set(ScriptDirectory.from_config(alembic_config(connection)).get_heads())


def database_heads(connection: Connection) -> set[str]:
    """The revisions the database says it is at (Alembic's own reading)."""
    return set(MigrationContext.configure(connection).get_current_heads())
