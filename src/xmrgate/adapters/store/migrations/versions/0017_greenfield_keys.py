"""Greenfield keys and consent: a shop plugin's key and its approval.

Adds ``store_keys.permissions`` (the Greenfield permission names a key was granted,
separated by spaces; NULL for every existing key, made with scopes) and
``consent_tokens``: the consent page's single-use approvals, by the SHA-256 of the
token, bound to what they approve, until they expire.

Revision ID: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the column and create the table with its index."""
    op.add_column("store_keys", sa.Column("permissions", sa.Text(), nullable=True))
    op.create_table(
        "consent_tokens",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("binding", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_consent_tokens_expires", "consent_tokens", ["expires_at"])


def downgrade() -> None:
    """Drop the table and the column (SQLite 3.35+ drops a plain column in place)."""
    op.drop_table("consent_tokens")
    op.execute("ALTER TABLE store_keys DROP COLUMN permissions")
