"""Announce writes to what GET /receive reads: statement-level triggers that NOTIFY
``xmrgate_reads_changed`` (PostgreSQL only; ``adapters/store/change_feed.py`` listens).

Inserting a payment request does not notify: an unknown address is never cached.

Revision ID: 0006
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# (table, events) whose writes change some GET /receive answer.
WATCHED = (
    ("payment_requests", "UPDATE OR DELETE OR TRUNCATE"),
    ("transfers", "INSERT OR UPDATE OR DELETE OR TRUNCATE"),
    ("sync_state", "INSERT OR UPDATE OR DELETE OR TRUNCATE"),
)


def upgrade() -> None:
    """Create the function and one trigger per table (nothing on SQLite: one process)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        """
        CREATE FUNCTION xmrgate_reads_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('xmrgate_reads_changed', '');
            RETURN NULL;
        END $$
        """
    )
    for table, events in WATCHED:
        op.execute(
            f"CREATE TRIGGER {table}_reads_changed AFTER {events} ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION xmrgate_reads_changed()"
        )


def downgrade() -> None:
    """Drop the triggers and the function."""
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, _events in WATCHED:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_reads_changed ON {table}")
    op.execute("DROP FUNCTION IF EXISTS xmrgate_reads_changed()")
