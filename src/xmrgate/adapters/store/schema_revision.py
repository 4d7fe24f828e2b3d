"""The newest schema revision, read from the revision files' names (no Alembic).

Revisions are numbered in one line, ``NNNN_what.py`` whose ``revision`` is ``"NNNN"``
and whose ``down_revision`` is the one before (the project's rule since 0001). So the
newest is the highest number, and a database at it needs no migration: knowing that
without importing Alembic keeps it out of the serving process
(``adapters/store/schema_upgrade.py``). ``tests/unit/test_schema_revision.py`` checks
this reading against Alembic's own, so a revision that breaks the rule fails a test,
not a start.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from sqlalchemy import Connection, inspect

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


@cache
def newest_revision() -> str:
    """The highest revision number among the revision files."""
    numbers = [
        m.group(1)
        for path in (MIGRATIONS_DIR / "versions").iterdir()
        if (m := _REVISION_FILE.match(path.name))
    ]
    if not numbers:
        raise RuntimeError(f"no revision files in {MIGRATIONS_DIR / 'versions'}")
    return max(numbers)


def at_newest(connection: Connection) -> bool:
    """True when the database's one recorded revision is the newest file's."""
    if not inspect(connection).has_table("alembic_version"):
        return False
    rows = connection.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    return [row[0] for row in rows] == [newest_revision()]
