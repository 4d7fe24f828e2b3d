"""What keeps ``xmrgate serve``'s process small (resident memory: the goal is 80 MB).

Two things a serving process would otherwise carry for its whole life (and, in
``freeze_startup_objects``, one pause it would otherwise take again and again):

- Alembic (about 11 MB with Mako and the revision files) when the schema must be
  migrated: ``migrate_in_child`` migrates in a child process instead, and the
  server's own ``Database.migrate`` then finds the schema current without importing
  Alembic (``adapters/store/schema_revision.py``).
- Optional integrations of libraries that load merely because a package is installed:
  httpx imports its command-line tool (rich, pygments, click: about 3 MB) when those are
  present, and httpcore imports trio (about 4 MB) to support trio event loops. A
  production install has neither (they come with the test tools); a development
  environment has both. The server runs on asyncio and never uses httpx's command line,
  so ``skip_optional_imports`` makes those imports fail as if absent, which both
  libraries handle (``try: import ... except ImportError``).
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys

from xmrgate.domain.errors import XmrgateError

# Imported by libraries only if installed, never needed by the server (see above).
OPTIONAL_IMPORTS = ("httpx._main", "trio")
# How long a migration in the child may take before the start is refused.
MIGRATION_TIMEOUT = 600.0


def skip_optional_imports() -> None:
    """Make the imports of ``OPTIONAL_IMPORTS`` fail as if they were not installed.

    Call before httpx is imported. A module already imported is left as it is.
    """
    for name in OPTIONAL_IMPORTS:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


def freeze_startup_objects() -> None:
    """Collect the start's garbage, then move every object left to the collector's
    permanent generation, which it never walks again.

    A full collection walks every tracked object: after the start about 140,000
    (modules, the app, its routes and models), 250 ms of CPU on a loaded 2-core machine,
    all of it one pause for the requests waiting; after the freeze it walks only what
    was made since (the pause showed in GET's p99). The frozen objects live as long as the
    process anyway.
    """
    gc.collect()
    gc.freeze()


def migrate_in_child(url: str, *, timeout: float = MIGRATION_TIMEOUT) -> None:
    """Bring the schema at ``url`` to the newest revision in a child process.

    Nothing to do (no child) when it is current. When the database cannot be reached,
    nothing is done here either: the server's start reports that as it always has.
    Raises SystemExit with the child's message when the migration fails, and with a
    clear one when it takes longer than ``timeout`` (the child is killed; on PostgreSQL
    its transaction is rolled back with its connection).
    """
    from xmrgate.adapters.store.db import Database

    async def current() -> bool:
        db = Database(url)
        try:
            return await db.schema_current()
        finally:
            await db.dispose()

    try:
        if asyncio.run(current()):
            return
    except XmrgateError:
        return
    try:
        done = subprocess.run(
            [sys.executable, "-m", "xmrgate.runtime.lean_process"],
            input=url + "\n",  # not an argument: a password in it would show in ps
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SystemExit(
            f"xmrgate: migrating the database did not finish within {timeout:g} s; "
            "run `xmrgate migrate` on its own to see where it waits (a lock held by "
            "another session?)"
        ) from None
    if done.returncode != 0:
        raise SystemExit(done.stderr.strip() or "xmrgate: migrating the database failed")


def child_main() -> int:
    """The child of ``migrate_in_child``: migrate the database whose SQLAlchemy URL is
    the first line of stdin (not an argument: a password in it would show in ``ps``)."""
    url = sys.stdin.readline().strip()
    if not url:
        print("xmrgate: no database URL on stdin", file=sys.stderr)
        return 2
    try:
        from xmrgate.adapters.store.db import migrate_database

        asyncio.run(migrate_database(url))
    except Exception as exc:  # the parent shows this message and refuses to start
        print(f"xmrgate: migrating the database failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(child_main())
