"""Refunds: money given back to a customer who names the address with a claim link.

Adds ``refunds`` (one row per refund, its claim token kept only as a SHA-256 digest)
and ``payment_requests.refunded``: what the request's refunds in a holding state
reserve of what it received. Reserving is one conditional UPDATE of that column, so
two racing refunds for the same money never both fit; ``refunded >= 0`` guards the
subtractions that free money again. Every existing request has refunded nothing.

Both are additions (``CREATE TABLE``, ``ADD COLUMN`` with its column CHECK), so no
table is rebuilt on SQLite.

Revision ID: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``refunds`` and add ``payment_requests.refunded`` (0 for every row)."""
    op.add_column(
        "payment_requests",
        sa.Column(
            "refunded",
            sa.BigInteger(),
            # A column constraint: SQLite's ADD COLUMN takes it, and its DROP COLUMN
            # (the downgrade) refuses only CHECKs of other columns naming this one.
            sa.CheckConstraint("refunded >= 0", name="ck_payment_requests_refunded"),
            nullable=False,
            server_default="0",
        ),
    )
    op.create_table(
        "refunds",
        sa.Column("id", sa.String(24), primary_key=True),
        sa.Column("store_id", sa.String(32), nullable=False),
        sa.Column(
            "request_id",
            sa.Integer(),
            sa.ForeignKey("payment_requests.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("price", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("token_digest", sa.String(64), nullable=False, unique=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("cancelled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claim_address", sa.String(128), nullable=True),
        sa.Column("tx_hash_list", sa.Text(), nullable=True),
        sa.Column("tx_key", sa.Text(), nullable=True),
        sa.Column("fee", sa.BigInteger(), nullable=True),
        sa.Column("manual", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("payout_id", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint("amount > 0", name="ck_refunds_amount"),
    )
    op.create_index("ix_refunds_request_id", "refunds", ["request_id"])
    op.create_index(
        "ix_refunds_store_status_created", "refunds", ["store_id", "status", "created_at", "id"]
    )
    op.create_index("ix_refunds_store_created", "refunds", ["store_id", "created_at", "id"])


def downgrade() -> None:
    """Drop both again (the refunds with them; SQLite drops the column in place)."""
    op.drop_index("ix_refunds_store_created", "refunds")
    op.drop_index("ix_refunds_store_status_created", "refunds")
    op.drop_index("ix_refunds_request_id", "refunds")
    op.drop_table("refunds")
    op.execute("ALTER TABLE payment_requests DROP COLUMN refunded")
