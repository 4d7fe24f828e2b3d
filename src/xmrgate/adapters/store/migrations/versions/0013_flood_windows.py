"""The public pages' flood limits counted in the database: ``flood_windows``.

"Pay" on a payment link and the refund claim are limited per client, per link and per
token. Counted in each process's memory, ``--workers N`` (or N hosts) allowed N times
the limit; on PostgreSQL they are counted here instead, for the whole cluster
(``adapters/store/flood_windows.py``). One row per limiter and key: the window its
first hit opened (closing at ``ends_at``) and the hits counted in it; rows whose window
closed are swept. The index on ``ends_at`` serves that sweep. SQLite (one process)
keeps counting in memory, but has the table too: one schema on both backends.

Revision ID: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``flood_windows`` and its index on ``ends_at``."""
    op.create_table(
        "flood_windows",
        sa.Column("limiter", sa.String(32), primary_key=True),
        sa.Column("key", sa.String(128), primary_key=True),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
    )
    op.create_index("ix_flood_windows_ends_at", "flood_windows", ["ends_at"])


def downgrade() -> None:
    """Drop the table (the limits' windows are forgotten: at most a minute of counts)."""
    op.drop_index("ix_flood_windows_ends_at", table_name="flood_windows")
    op.drop_table("flood_windows")
