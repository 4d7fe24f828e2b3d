"""The dashboard: every callback try kept (callback_tries), and an index on the state
and block time of transfers for the daily sums of received XMR.

Revision ID: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the table and the index (tries made before this revision are not known)."""
    op.create_table(
        "callback_tries",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "event_seq",
            sa.Integer,
            sa.ForeignKey("events.seq", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered", sa.Boolean, nullable=False),
        sa.Column("status_code", sa.Integer, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
    )
    op.create_index("ix_callback_tries_event", "callback_tries", ["event_seq", "id"])
    op.create_index("ix_transfers_state_timestamp", "transfers", ["state", "timestamp"])


def downgrade() -> None:
    """Drop them."""
    op.drop_index("ix_transfers_state_timestamp", "transfers")
    op.drop_index("ix_callback_tries_event", "callback_tries")
    op.drop_table("callback_tries")
