"""The confirmations a store's point of sale waits for, and an open fiat link's minimum.

Adds ``stores.pos_confirmations``: the fewest confirmations before a sale is
"Paid" on the store's POS screens (a device may ask for more, never fewer). NOT NULL
with the server default 1, the screen's default before this setting, so every existing
store (the default one included) keeps what its tills did.

Adds ``links.min_price``: the minimum of an open amount typed in the link's
fiat ``currency``, as exact decimal text ("5.00"), so the page shows and checks it in
that currency. NULL for every existing link (their ``min_amount`` stays in piconero).

Revision ID: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add both columns (no table rebuild on SQLite: ADD COLUMN suffices)."""
    op.add_column(
        "stores",
        sa.Column("pos_confirmations", sa.Integer(), nullable=False, server_default="1"),
    )
    op.add_column("links", sa.Column("min_price", sa.Text(), nullable=True))


def downgrade() -> None:
    """Drop them again (SQLite 3.35+ drops a plain column in place, no rebuild)."""
    op.execute("ALTER TABLE links DROP COLUMN min_price")
    op.execute("ALTER TABLE stores DROP COLUMN pos_confirmations")
