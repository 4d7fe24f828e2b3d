"""Never reuse an event's ``seq`` on SQLite: rebuild ``events`` with AUTOINCREMENT.

Without it SQLite gives a new row max(seq) + 1, so deleting the newest event (a deleted
request's events, or retention) frees its number for the next one, and a client of
``GET /events?after=<seq>`` that already saw that seq would never see the new event.
AUTOINCREMENT keeps the highest seq ever handed out (in ``sqlite_sequence``).
PostgreSQL's sequence never goes back: nothing to do there.

The rebuild copies every row with its seq (so ``sqlite_sequence`` starts at the highest
one) and recreates the indexes and constraints. It must run with foreign keys off
(``Database.migrate()`` sees to it): with them on, dropping the old ``events`` deletes
its rows first, and that cascades to ``callback_tries``.

Revision ID: 0007
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Rebuild ``events`` with AUTOINCREMENT on SQLite, unless it has it already."""
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    ddl = bind.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'"
    ).scalar_one()
    if "AUTOINCREMENT" in ddl.upper():
        return  # upgraded before (the downgrade keeps it)
    if bind.exec_driver_sql("PRAGMA foreign_keys").scalar():
        raise RuntimeError(
            "revision 0007 rebuilds the events table and must run with foreign keys off"
            " (Database.migrate() does that): with them on, callback_tries would be deleted"
        )
    with op.batch_alter_table(
        "events", recreate="always", table_kwargs={"sqlite_autoincrement": True}
    ):
        pass


def downgrade() -> None:
    """Nothing: AUTOINCREMENT suits revision 0006's code, and taking it away would need
    another rebuild (with foreign keys off) only to let seq values be reused again."""
