"""Migrated databases for the tests, copied from one migrated template per test process.

``Database.migrate()`` costs a third of a second per database (Alembic loads every
revision; SQLite rebuilds tables), and most tests want a fresh migrated database, not
the migration itself. So each test process migrates one template per backend, the
product's way, the first time one is asked for, and every test gets a copy: the same
file (SQLite) or a ``CREATE DATABASE ... TEMPLATE`` (PostgreSQL), which holds exactly
what migrating an empty database leaves (schema, rows, sequences, no statistics; the
default store's ``created_at`` is the template's migration time). Tests of the
migrations themselves start from an empty database instead.

A PostgreSQL copy costs the server 0.2-0.5 s, so the next few are made in a background
thread while tests run (those of a store module follow each other closely), and the
copies are dropped in another: a test still gets a database that nothing used before it,
and nothing uses after it. That thread drops every copy given back meanwhile at once
(:func:`~testsupport.postgres.drop_pg_databases`): each drop ends with a checkpoint of
the whole server, which drops made together share. (Drops made one by one in the
copies' thread took 0.2-3 s each, and each copy waited for the drop before it.)
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from testsupport.pg_tablespace import tmpfs_tablespace
from testsupport.postgres import (
    AdminSession,
    create_pg_database,
    drop_pg_database,
    drop_pg_databases,
)
from xmrgate.adapters.store.db import migrate_database
from xmrgate.config import postgres_async_url


class Dropper:
    """Drops PostgreSQL databases in a thread of its own: those given meanwhile together
    (up to BATCH, a connection each), while the previous ones are dropped; :meth:`close`
    waits for the last."""

    #: At most this many at once: one connection each, on a server other processes use.
    BATCH = 8

    def __init__(self) -> None:
        self._given: list[str] = []
        self._closing = False
        self._failures: list[BaseException] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="pg-drops", daemon=True)
        self._thread.start()

    def drop(self, url: str) -> None:
        """Drop the database of ``url`` soon."""
        with self._changed:
            self._given.append(url)
            self._changed.notify()

    def _run(self) -> None:
        session = AdminSession(size=self.BATCH)  # its connections serve every batch
        try:
            while True:
                with self._changed:
                    self._changed.wait_for(lambda: bool(self._given) or self._closing)
                    batch, self._given = self._given[: self.BATCH], self._given[self.BATCH :]
                if not batch:
                    return  # closing, and nothing left
                try:
                    drop_pg_databases(batch, session)
                except BaseException as exc:  # raised by close(), in the test process
                    self._failures.append(exc)
        finally:
            try:
                session.close()
            except BaseException as exc:
                self._failures.append(exc)

    def close(self) -> None:
        """Wait until every database given is dropped; raise the first failure."""
        with self._changed:
            self._closing = True
            self._changed.notify()
        self._thread.join()
        if self._failures:
            raise self._failures[0]


class MigratedTemplates:
    """The templates of one test process, made in ``folder`` (SQLite) and on the test
    PostgreSQL server; :meth:`close` drops every PostgreSQL database made here."""

    #: PostgreSQL copies made ahead of the tests that will want them.
    AHEAD = 4

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._sqlite: Path | None = None
        self._postgresql: str | None = None
        # One thread for the copies, one at a time in the order asked, and one for the
        # drops, so that no copy waits for a drop.
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-copies")
        self._dropper = Dropper()
        self._ahead: deque[Future[str]] = deque()
        self._copies_session: AdminSession | None = None  # the copies' thread's
        self._tablespace: str | None = None

    def sqlite_copy(self, path: Path) -> str:
        """Copy the migrated SQLite template to ``path``; its SQLAlchemy URL."""
        if self._sqlite is None:
            template = self._folder / "template.sqlite3"
            asyncio.run(migrate_database(f"sqlite+aiosqlite:///{template}"))
            # The last connection's close checkpointed the WAL into the file and removed
            # it: the database is that one file (a -wal left over would hold part of it).
            leftovers = [p.name for p in self._folder.iterdir() if p != template]
            assert not leftovers, f"the SQLite template is not one file: {leftovers}"
            self._sqlite = template
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self._sqlite, path)
        return f"sqlite+aiosqlite:///{path}"

    def postgresql_copy(self) -> str:
        """A new PostgreSQL database copied from the migrated template (libpq URL); give
        it back to :meth:`drop_postgresql` when done."""
        if self._postgresql is None:
            template = create_pg_database()
            try:
                asyncio.run(migrate_database(postgres_async_url(template)))
            except BaseException:
                drop_pg_database(template)
                raise
            self._postgresql = template
        if not self._ahead:
            self._ahead.append(self._background.submit(self._copy, self._postgresql))
        url = self._ahead.popleft().result()  # a failed copy raises in the test that wanted it
        while len(self._ahead) < self.AHEAD:
            self._ahead.append(self._background.submit(self._copy, self._postgresql))
        return url

    def _copy(self, template: str) -> str:
        """One copy, in the copies' thread, on its one kept connection, in a tablespace
        on tmpfs where one can be had (``testsupport/pg_tablespace.py``)."""
        if self._copies_session is None:
            self._copies_session = AdminSession()
            self._tablespace = tmpfs_tablespace(self._copies_session)
        return create_pg_database(
            template=template, session=self._copies_session, tablespace=self._tablespace
        )

    def _close_copies_session(self) -> None:
        if self._copies_session is not None:
            self._copies_session.close()
            self._copies_session = None

    def drop_postgresql(self, url: str) -> None:
        """Drop a database made for a test, a copy or an empty one (in the background;
        :meth:`close` waits for it)."""
        self._dropper.drop(url)

    def close(self) -> None:
        """Drop the unused copies, every copy given back, and the template.

        The copies not yet begun are never made (the last store test queued up to AHEAD,
        0.1-0.5 s each to make and one more to drop), and the template goes with the last
        copies, in one batch: one checkpoint, not two, at the end of the run."""
        try:
            for waiting in self._ahead:
                waiting.cancel()  # only those not begun
            # The thread's last task closes its connection, in the thread that made it.
            closing = self._background.submit(self._close_copies_session)
            self._background.shutdown(wait=True)
            while self._ahead:
                unused = self._ahead.popleft()
                if not unused.cancelled() and unused.exception() is None:
                    self.drop_postgresql(unused.result())
            closing.result()
        finally:
            try:
                if self._postgresql is not None:
                    self.drop_postgresql(self._postgresql)
                    self._postgresql = None
            finally:
                self._dropper.close()
