"""The exchange rates' stored answers: one rate for the cluster.

Adds ``rate_answers``: one row per (source, currency) with the source's last good
answer (the rate as an exact decimal text, and when it arrived), why its latest try
failed, when that try ended, and how many of its tries missed. The process that leads
the rates (``adapters/store/rate_answers.py``) writes it each refresh; every other
process reads it. Nothing else refers to it.

Revision ID: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``rate_answers`` (empty: the first leader fills it)."""
    op.create_table(
        "rate_answers",
        sa.Column("source", sa.String(32), primary_key=True),
        sa.Column("currency", sa.String(3), primary_key=True),
        sa.Column("rate", sa.Text(), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("misses", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    """Drop it."""
    op.drop_table("rate_answers")
