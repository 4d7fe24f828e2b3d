"""A store's default speed policy for its Greenfield invoices.

Adds ``stores.speed_policy``: the confirmations a Greenfield invoice made
without ``checkout.speedPolicy`` needs, as one of BTCPay's names (``HighSpeed`` 0,
``MediumSpeed`` 1, ``LowMediumSpeed`` 2, ``LowSpeed`` 6). NOT NULL with the server
default ``MediumSpeed``, what every such invoice needed before this setting, so every
existing store (the default one included) keeps what its invoices did. An invoice
records its confirmations when it is made: existing invoices are not touched.

Revision ID: 0019
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the column (no table rebuild on SQLite: ADD COLUMN suffices)."""
    op.add_column(
        "stores",
        sa.Column("speed_policy", sa.Text(), nullable=False, server_default="MediumSpeed"),
    )


def downgrade() -> None:
    """Drop it again (SQLite 3.35+ drops a plain column in place, no rebuild)."""
    op.execute("ALTER TABLE stores DROP COLUMN speed_policy")
