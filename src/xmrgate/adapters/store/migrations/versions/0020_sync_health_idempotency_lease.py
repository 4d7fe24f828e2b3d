"""Failing sync ticks recorded per wallet; Idempotency-Key claims with an owner and a lease.

``sync_health``: one row per wallet whose sync ticks fail in a row (its ``sync_state``
id), written by the process that ticks it and deleted by the first tick that runs
again, so every process of a cluster names a failing wallet on ``/health``.

``idempotency_keys.owner``, ``lease_until`` and ``ref``: a running claim names the
process working on it and holds until ``lease_until`` unless that process renews it;
``ref`` is what its work records (``payment_requests.idempotency_ref``, unique), so a
process that finds the lease expired answers the request that was made instead of
making another. Existing claims have no lease: they are treated as expired, and what
they made cannot be found by ``ref`` (none was recorded): they are taken over.

Revision ID: 0020
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``sync_health``; add the claim's columns and the requests' reference."""
    op.create_table(
        "sync_health",
        sa.Column("sync_id", sa.Integer(), primary_key=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("failing_since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.add_column("idempotency_keys", sa.Column("owner", sa.String(64), nullable=True))
    op.add_column(
        "idempotency_keys", sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column("idempotency_keys", sa.Column("ref", sa.String(36), nullable=True))
    op.add_column("payment_requests", sa.Column("idempotency_ref", sa.String(36), nullable=True))
    # A unique index: SQLite cannot add a constraint in place, and both treat it alike.
    op.create_index(
        "uq_payment_requests_idempotency_ref",
        "payment_requests",
        ["idempotency_ref"],
        unique=True,
    )


def downgrade() -> None:
    """Drop them again (SQLite 3.35+ drops a plain column in place)."""
    op.drop_index("uq_payment_requests_idempotency_ref", table_name="payment_requests")
    op.execute("ALTER TABLE payment_requests DROP COLUMN idempotency_ref")
    for column in ("ref", "lease_until", "owner"):
        op.execute(f"ALTER TABLE idempotency_keys DROP COLUMN {column}")
    op.drop_table("sync_health")
