"""Subaddresses created ahead for POST /receive (the address pool).

Revision ID: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the address_pool table."""
    op.create_table(
        "address_pool",
        sa.Column("subaddr_index", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("address", sa.String(128), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    """Drop it."""
    op.drop_table("address_pool")
