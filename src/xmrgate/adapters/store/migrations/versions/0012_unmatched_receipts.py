"""Unmatched receipts: money that reached a subaddress no payment request owns.

Adds ``unmatched_receipts`` (one row per transaction's outputs to one subaddress of a
store, kept in step with the chain like a transfer, and a status the merchant sets:
open or dismissed with a note), and lets an event belong to a receipt instead of a
request: ``events.request_id`` becomes nullable and ``events.receipt_id`` names the
receipt (``transfer.unmatched`` events share the feed and its ``seq``). A refund may give
a receipt back: ``refunds.request_id`` becomes nullable, ``refunds.receipt_id`` names the
receipt, and ``unmatched_receipts.refunded`` is its reservation (as
``payment_requests.refunded`` is a request's).

On PostgreSQL these are additions and one ALTER COLUMN. On SQLite ``events`` is rebuilt
and ``refunds`` are rebuilt (a column cannot be made nullable in place): ``events`` keeps
AUTOINCREMENT (revision 0007) and every row with its seq; ``refunds`` is copied from its
definition here, not from reflection, so its CHECK stays what revision 0010 made.
``Database.migrate()`` runs revisions with foreign keys off, so dropping the old
``events`` does not cascade to ``callback_tries``.

Revision ID: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_FK = "fk_events_receipt"
_REFUND_FK = "fk_refunds_receipt"


def _sqlite_refunds() -> sa.Table:
    """``refunds`` as revision 0010 made it (the batch copies from this)."""
    meta = sa.MetaData()
    sa.Table("payment_requests", meta, sa.Column("id", sa.Integer(), primary_key=True))
    return sa.Table(
        "refunds",
        meta,
        sa.Column("id", sa.String(24), primary_key=True),
        sa.Column("store_id", sa.String(32), nullable=False),
        sa.Column(
            "request_id",
            sa.Integer(),
            sa.ForeignKey("payment_requests.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("price", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("token_digest", sa.String(64), nullable=False, unique=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("cancelled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claim_address", sa.String(128), nullable=True),
        sa.Column("tx_hash_list", sa.Text(), nullable=True),
        sa.Column("tx_key", sa.Text(), nullable=True),
        sa.Column("fee", sa.BigInteger(), nullable=True),
        sa.Column("manual", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("payout_id", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint("amount > 0", name="ck_refunds_amount"),
        sa.Index("ix_refunds_request_id", "request_id"),
        sa.Index("ix_refunds_store_status_created", "store_id", "status", "created_at", "id"),
        sa.Index("ix_refunds_store_created", "store_id", "created_at", "id"),
    )


def upgrade() -> None:
    """Create ``unmatched_receipts``; ``events.request_id`` nullable, ``events.receipt_id``."""
    op.create_table(
        "unmatched_receipts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("store_id", sa.String(32), nullable=False),
        sa.Column("subaddr_index", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(128), nullable=False),
        sa.Column("tx_hash", sa.String(64), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("fee", sa.BigInteger(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("timestamp", sa.BigInteger(), nullable=False),
        sa.Column("unlock_time", sa.BigInteger(), nullable=False),
        sa.Column("double_spend_seen", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("first_seen", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("dismissed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "refunded",
            sa.BigInteger(),
            sa.CheckConstraint("refunded >= 0", name="ck_unmatched_receipts_refunded"),
            nullable=False,
            server_default="0",
        ),
        sa.UniqueConstraint(
            "store_id", "subaddr_index", "tx_hash", name="uq_unmatched_receipts_store_index_tx"
        ),
    )
    op.create_index(
        "ix_unmatched_receipts_store_created",
        "unmatched_receipts",
        ["store_id", "created_at", "id"],
    )
    op.create_index("ix_unmatched_receipts_state_height", "unmatched_receipts", ["state", "height"])
    if op.get_bind().dialect.name == "sqlite":
        if op.get_bind().exec_driver_sql("PRAGMA foreign_keys").scalar():
            raise RuntimeError(
                "revision 0012 rebuilds the events table and must run with foreign keys off"
                " (Database.migrate() does that): with them on, callback_tries would be deleted"
            )
        with op.batch_alter_table(
            "events", recreate="always", table_kwargs={"sqlite_autoincrement": True}
        ) as batch:
            batch.alter_column("request_id", existing_type=sa.Integer(), nullable=True)
            batch.add_column(sa.Column("receipt_id", sa.Integer(), nullable=True))
            batch.create_foreign_key(
                _FK, "unmatched_receipts", ["receipt_id"], ["id"], ondelete="CASCADE"
            )
        with op.batch_alter_table(
            "refunds", recreate="always", copy_from=_sqlite_refunds()
        ) as batch:
            batch.alter_column("request_id", existing_type=sa.Integer(), nullable=True)
            batch.add_column(sa.Column("receipt_id", sa.Integer(), nullable=True))
            batch.create_foreign_key(
                _REFUND_FK, "unmatched_receipts", ["receipt_id"], ["id"], ondelete="CASCADE"
            )
    else:
        op.alter_column("events", "request_id", existing_type=sa.Integer(), nullable=True)
        op.add_column("events", sa.Column("receipt_id", sa.Integer(), nullable=True))
        op.create_foreign_key(
            _FK, "events", "unmatched_receipts", ["receipt_id"], ["id"], ondelete="CASCADE"
        )
        op.alter_column("refunds", "request_id", existing_type=sa.Integer(), nullable=True)
        op.add_column("refunds", sa.Column("receipt_id", sa.Integer(), nullable=True))
        op.create_foreign_key(
            _REFUND_FK, "refunds", "unmatched_receipts", ["receipt_id"], ["id"], ondelete="CASCADE"
        )
    op.create_index("ix_events_receipt_id", "events", ["receipt_id"])
    op.create_index("ix_refunds_receipt_id", "refunds", ["receipt_id"])


def downgrade() -> None:
    """Drop receipts' events and refunds, then ``events.receipt_id``,
    ``refunds.receipt_id`` and ``unmatched_receipts``."""
    op.execute("DELETE FROM events WHERE request_id IS NULL")
    op.execute("DELETE FROM refunds WHERE request_id IS NULL")
    op.drop_index("ix_refunds_receipt_id", "refunds")
    op.drop_index("ix_events_receipt_id", "events")
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("refunds", recreate="always") as batch:
            batch.drop_constraint(_REFUND_FK, type_="foreignkey")
            batch.drop_column("receipt_id")
            batch.alter_column("request_id", existing_type=sa.Integer(), nullable=False)
    else:
        op.drop_constraint(_REFUND_FK, "refunds", type_="foreignkey")
        op.drop_column("refunds", "receipt_id")
        op.alter_column("refunds", "request_id", existing_type=sa.Integer(), nullable=False)
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table(
            "events", recreate="always", table_kwargs={"sqlite_autoincrement": True}
        ) as batch:
            batch.drop_constraint(_FK, type_="foreignkey")
            batch.drop_column("receipt_id")
            batch.alter_column("request_id", existing_type=sa.Integer(), nullable=False)
    else:
        op.drop_constraint(_FK, "events", type_="foreignkey")
        op.drop_column("events", "receipt_id")
        op.alter_column("events", "request_id", existing_type=sa.Integer(), nullable=False)
    op.drop_index("ix_unmatched_receipts_state_height", "unmatched_receipts")
    op.drop_index("ix_unmatched_receipts_store_created", "unmatched_receipts")
    op.drop_table("unmatched_receipts")
