"""Initial schema: payment requests, transfers, sync state, outbox, payouts, idempotency.

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create every table of the first release."""
    op.create_table(
        "payment_requests",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("address", sa.String(128), nullable=False, unique=True),
        sa.Column("subaddr_index", sa.Integer, nullable=False, unique=True),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("callback_url", sa.Text),
        sa.Column("return_url", sa.Text),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("created_height", sa.Integer),
    )
    op.create_table(
        "transfers",
        sa.Column("tx_hash", sa.String(64), primary_key=True),
        sa.Column("subaddr_index", sa.Integer, primary_key=True),
        sa.Column(
            "request_id",
            sa.Integer,
            sa.ForeignKey("payment_requests.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("fee", sa.BigInteger, nullable=False),
        sa.Column("height", sa.Integer, nullable=False),
        sa.Column("timestamp", sa.BigInteger, nullable=False),
        sa.Column("unlock_time", sa.BigInteger, nullable=False),
        sa.Column("double_spend_seen", sa.Boolean, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
    )
    op.create_index("ix_transfers_request_id", "transfers", ["request_id"])
    op.create_index("ix_transfers_state_height", "transfers", ["state", "height"])
    op.create_table(
        "sync_state",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("wallet_height", sa.Integer, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
    )
    op.create_table(
        "events",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(36), nullable=False, unique=True),
        sa.Column(
            "request_id",
            sa.Integer,
            sa.ForeignKey("payment_requests.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("tx_hash", sa.String(64), nullable=False),
        sa.Column("callback_url", sa.Text, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("next_attempt_at", TZ),
        sa.Column("last_attempt_at", TZ),
        sa.Column("delivered_at", TZ),
        sa.Column("last_status", sa.Integer),
        sa.Column("last_error", sa.Text),
        sa.Column("claimed_by", sa.String(64)),
        sa.Column("claimed_until", TZ),
    )
    op.create_index("ix_events_request_id", "events", ["request_id"])
    op.create_index("ix_events_status_next", "events", ["status", "next_attempt_at"])
    op.create_table(
        "payouts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("destinations", sa.Text, nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("fee", sa.BigInteger),
        sa.Column("tx_hash_list", sa.Text),
        sa.Column("error", sa.Text),
        sa.Column("requested_by", sa.String(128)),
        sa.Column("idempotency_key", sa.String(255)),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("endpoint", sa.String(64), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("response_status", sa.Integer),
        sa.Column("response_body", sa.Text),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("expires_at", TZ, nullable=False),
    )
    op.create_index("ix_idempotency_keys_expires_at", "idempotency_keys", ["expires_at"])


def downgrade() -> None:
    """Drop everything (development only)."""
    for table in (
        "idempotency_keys",
        "payouts",
        "events",
        "sync_state",
        "transfers",
        "payment_requests",
    ):
        op.drop_table(table)
