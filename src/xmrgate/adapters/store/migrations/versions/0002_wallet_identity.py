"""The wallet this database belongs to (its primary address, recorded at first start).

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the one-row wallet_identity table."""
    op.create_table(
        "wallet_identity",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("primary_address", sa.String(128), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    """Drop it."""
    op.drop_table("wallet_identity")
