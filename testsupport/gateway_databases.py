"""Migrated databases for the test gateways: one template per backend and test process.

A gateway started on an empty database migrates it first, in a child process
(``runtime/lean_process.py``: a new interpreter that imports Alembic, 0.4-0.7 CPU-s), and
the integration tests start about a hundred gateways a run on two cores, bound by CPU.
So :func:`~testsupport.gateway.start_gateway` gives each a copy of a database this test
process migrated once (``testsupport/migrated.py``, as the unit tier does); the gateway
finds its schema current and serves. The migration at the start is still run where it is
the subject: ``tests/db/test_lean_start.py``, the playground's tests (``xmrgate dev`` on a
new SQLite file), and every test that starts a ``GatewayProcess`` on a database of its own.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Alembic and the stores load when a first gateway wants a database
    from testsupport.migrated import MigratedTemplates

_TEMPLATES: MigratedTemplates | None = None
_FOLDER: Path | None = None
_LOCK = threading.Lock()  # some modules start their gateways in threads


def _templates() -> MigratedTemplates:
    global _TEMPLATES, _FOLDER
    with _LOCK:
        if _TEMPLATES is None:
            from testsupport.migrated import MigratedTemplates

            _FOLDER = Path(tempfile.mkdtemp(prefix="xmrgate-gateway-templates-"))
            _TEMPLATES = MigratedTemplates(_FOLDER)
        return _TEMPLATES


def migrated_sqlite(path: Path) -> None:
    """Put a migrated SQLite database at ``path``."""
    templates = _templates()
    with _LOCK:  # the first call migrates the template
        templates.sqlite_copy(path)


def migrated_postgresql() -> str:
    """A new migrated PostgreSQL database (libpq URL); drop it when done."""
    templates = _templates()
    with _LOCK:
        return templates.postgresql_copy()


def close() -> None:
    """Drop this process's templates (at the end of the session)."""
    global _TEMPLATES, _FOLDER
    with _LOCK:
        templates, folder, _TEMPLATES, _FOLDER = _TEMPLATES, _FOLDER, None, None
    if templates is not None:
        templates.close()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
