"""Invoices: expiry, underpayment tolerance and recorded status of payment requests,
the first sighting of transfers, and events without a callback (the event feed).

Revision ID: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# The status of requests made before this revision, from their transfers (what the
# sync tick would record; it recomputes each request the next time one changes).
_COUNTED = (
    "SELECT COALESCE(SUM(t.amount), 0) FROM transfers t WHERE t.request_id = payment_requests.id"
    " AND (t.state IN ('confirmed', 'unlocked') OR (t.state = 'pool' AND NOT t.double_spend_seen))"
)
_UNLOCKED = (
    "SELECT COALESCE(SUM(t.amount), 0) FROM transfers t WHERE t.request_id = payment_requests.id"
    " AND t.state = 'unlocked'"
)
_BACKFILL = f"""
UPDATE payment_requests SET status = CASE
    WHEN ({_UNLOCKED}) >= amount THEN 'complete'
    WHEN ({_COUNTED}) >= amount THEN 'paid'
    WHEN ({_COUNTED}) > 0 THEN 'partial'
    ELSE 'waiting' END
"""


def upgrade() -> None:
    """Add the columns and indexes; record the status of existing requests."""
    # Plain ADD COLUMN with constant defaults: a batch (copy-and-rename) of
    # payment_requests on SQLite would drop the table and cascade-delete its transfers.
    op.add_column(
        "payment_requests", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column(
        "payment_requests",
        sa.Column("underpay_tolerance", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.add_column(
        "payment_requests",
        sa.Column("status", sa.String(16), nullable=False, server_default="waiting"),
    )
    op.create_index("ix_payment_requests_created", "payment_requests", ["created_at", "id"])
    op.create_index(
        "ix_payment_requests_status_created", "payment_requests", ["status", "created_at", "id"]
    )
    op.create_index(
        "ix_payment_requests_status_expires", "payment_requests", ["status", "expires_at"]
    )
    op.add_column("transfers", sa.Column("first_seen", sa.BigInteger, nullable=True))
    # events has no children: copying it on SQLite (to drop NOT NULL) loses nothing.
    with op.batch_alter_table("events") as batch:
        batch.alter_column("callback_url", existing_type=sa.Text, nullable=True)
    op.execute(_BACKFILL)


def downgrade() -> None:
    """Drop them again (feed-only events go: the old outbox cannot hold them)."""
    op.execute("DELETE FROM events WHERE callback_url IS NULL")
    with op.batch_alter_table("events") as batch:
        batch.alter_column("callback_url", existing_type=sa.Text, nullable=False)
    op.drop_index("ix_payment_requests_status_expires", "payment_requests")
    op.drop_index("ix_payment_requests_status_created", "payment_requests")
    op.drop_index("ix_payment_requests_created", "payment_requests")
    # ALTER TABLE ... DROP COLUMN (SQLite >= 3.35): no copy, so no cascade.
    for table, column in [
        ("transfers", "first_seen"),
        ("payment_requests", "status"),
        ("payment_requests", "underpay_tolerance"),
        ("payment_requests", "expires_at"),
    ]:
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
