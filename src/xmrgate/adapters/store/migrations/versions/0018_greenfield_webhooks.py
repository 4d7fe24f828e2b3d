"""Greenfield store webhooks: where a shop is told of its invoices.

Adds ``greenfield_webhooks`` (a store's webhooks: URL, secret, on or off, automatic
redelivery, which events), ``events.webhook_id`` (a delivery of a webhook is an event of
the outbox, like a callback, with the invoice's request: the same durable retries, in
order per request; NULL for every existing event), and on ``greenfield_invoices`` the
state last announced (``announced``: JSON, NULL before the first announcement) and
whether it is still watched for changes (``watching``).

Revision ID: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the table and add the columns (ADD COLUMN: no table rebuild)."""
    op.create_table(
        "greenfield_webhooks",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("store_id", sa.String(32), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("automatic_redelivery", sa.Boolean(), nullable=False),
        sa.Column("everything", sa.Boolean(), nullable=False),
        sa.Column("specific_events", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_greenfield_webhooks_store_id", "greenfield_webhooks", ["store_id"])
    op.add_column("events", sa.Column("webhook_id", sa.String(32), nullable=True))
    op.create_index("ix_events_webhook_id", "events", ["webhook_id"])
    op.add_column("greenfield_invoices", sa.Column("announced", sa.Text(), nullable=True))
    op.add_column(
        "greenfield_invoices",
        sa.Column("watching", sa.Boolean(), nullable=False, server_default=sa.true()),
    )
    op.create_index("ix_greenfield_invoices_watching", "greenfield_invoices", ["watching"])


def downgrade() -> None:
    """Drop them again (SQLite 3.35+ drops a plain column in place)."""
    op.drop_index("ix_greenfield_invoices_watching", "greenfield_invoices")
    op.execute("ALTER TABLE greenfield_invoices DROP COLUMN watching")
    op.execute("ALTER TABLE greenfield_invoices DROP COLUMN announced")
    op.drop_index("ix_events_webhook_id", "events")
    op.execute("ALTER TABLE events DROP COLUMN webhook_id")
    op.drop_table("greenfield_webhooks")
