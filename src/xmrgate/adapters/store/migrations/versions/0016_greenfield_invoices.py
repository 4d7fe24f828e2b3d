"""Greenfield invoices: what BTCPay's API adds to a payment request.

Adds ``greenfield_invoices``: one row per invoice made through ``/api/v1``, tied to its
payment request (deleted with it), with the shop's order id and metadata, the amount
and currency as sent, the confirmations its speed policy asks for, the redirect, and
the merchant's mark. Nothing existing changes.

Revision ID: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the table and its two indexes."""
    op.create_table(
        "greenfield_invoices",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("store_id", sa.String(32), nullable=False),
        sa.Column(
            "request_id",
            sa.Integer(),
            sa.ForeignKey("payment_requests.id", name="fk_greenfield_request", ondelete="CASCADE"),
            nullable=False,
            unique=True,
        ),
        sa.Column("order_id", sa.String(256), nullable=True),
        sa.Column("currency", sa.String(8), nullable=False),
        sa.Column("amount", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("speed_policy", sa.String(16), nullable=True),
        sa.Column("confirmations", sa.Integer(), nullable=False),
        sa.Column("monitoring_minutes", sa.Integer(), nullable=False),
        sa.Column("redirect_url", sa.Text(), nullable=True),
        sa.Column("redirect_automatically", sa.Boolean(), nullable=False),
        sa.Column("marked", sa.String(16), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_greenfield_invoices_order", "greenfield_invoices", ["store_id", "order_id"])
    op.create_index(
        "ix_greenfield_invoices_created", "greenfield_invoices", ["store_id", "created_at", "id"]
    )


def downgrade() -> None:
    """Drop the table (its indexes go with it)."""
    op.drop_table("greenfield_invoices")
