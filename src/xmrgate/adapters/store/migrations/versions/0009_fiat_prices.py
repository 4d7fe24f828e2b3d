"""Fiat prices: the quote a fiat-priced payment request was converted with.

``payment_requests.price`` holds the quote as JSON text (amount, currency, rate,
sources, rate_at): it is shown with the request and never queried, so one column
serves both databases. NULL for requests priced in piconero (all existing rows).

Revision ID: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the nullable column (no table rebuild on SQLite: ADD COLUMN suffices)."""
    op.add_column("payment_requests", sa.Column("price", sa.Text(), nullable=True))


def downgrade() -> None:
    """Drop it again (SQLite 3.35+ drops a plain column in place, no rebuild)."""
    op.execute("ALTER TABLE payment_requests DROP COLUMN price")
