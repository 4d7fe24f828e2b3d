"""Stores: several shops on one gateway, each on an account of the main wallet.

Adds ``stores`` (with the row ``default``: account 0, the gateway as it was) and
``store_keys``; every payment request, payout and pooled subaddress belongs to a store
(``store_id``, ``default`` for every existing row). Accounts reuse minor indices, so a
request's subaddress index is unique within its store, and a transfer's key is
(tx_hash, request_id): one transaction may pay index 3 of two stores.

On SQLite the tables are rebuilt (``Database.migrate()`` runs revisions with foreign
keys off, so dropping ``payment_requests`` does not cascade to its transfers).

Revision ID: 0008
"""

import warnings
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.exc import SAWarning

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_SQLITE_NAMES = {
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
}


def _store_id(table: str, **kwargs: object) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(
        "store_id",
        sa.String(32),
        sa.ForeignKey("stores.id", name=f"fk_{table}_store"),
        nullable=False,
        server_default="default",
        **kwargs,  # type: ignore[arg-type]
    )


def upgrade() -> None:
    """Create the stores, put everything in ``default``, re-key what accounts share."""
    stores = op.create_table(
        "stores",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("account_index", sa.Integer, nullable=True, unique=True),
        sa.Column("rpc_address", sa.Text, nullable=True),
        sa.Column("rpc_username", sa.Text, nullable=True),
        sa.Column("rpc_password", sa.Text, nullable=True),
        sa.Column("primary_address", sa.String(128), nullable=True, unique=True),
        sa.Column("wallet_no", sa.Integer, nullable=True, unique=True),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("callback_secret", sa.Text, nullable=True),
        sa.Column("accent", sa.String(7), nullable=True),
        sa.Column("default_expires_in", sa.Integer, nullable=True),
        sa.Column("default_underpay_tolerance", sa.BigInteger, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.bulk_insert(
        stores,
        [
            {
                "id": "default",
                "name": "Default store",
                "account_index": 0,
                "enabled": True,
                "created_at": datetime.now(UTC),
            }
        ],
    )
    op.create_table(
        "store_keys",
        sa.Column("id", sa.String(16), primary_key=True),
        sa.Column("store_id", sa.String(32), sa.ForeignKey("stores.id"), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("scopes", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_store_keys_store_id", "store_keys", ["store_id"])
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_rekey()
    else:
        _postgresql_rekey()
    op.create_index(
        "ix_payment_requests_store_created", "payment_requests", ["store_id", "created_at", "id"]
    )
    op.create_index(
        "ix_payment_requests_store_status_created",
        "payment_requests",
        ["store_id", "status", "created_at", "id"],
    )
    op.create_index("ix_payouts_store_id", "payouts", ["store_id"])
    # A plain ADD COLUMN (no rebuild of events and its tries); no foreign key, it copies
    # the request's store.
    op.add_column(
        "events", sa.Column("store_id", sa.String(32), nullable=False, server_default="default")
    )
    op.create_index("ix_events_store_seq", "events", ["store_id", "seq"])


def _postgresql_rekey() -> None:
    op.add_column("payment_requests", _store_id("payment_requests"))
    op.drop_constraint("payment_requests_subaddr_index_key", "payment_requests", type_="unique")
    op.create_unique_constraint(
        "uq_payment_requests_store_subaddr", "payment_requests", ["store_id", "subaddr_index"]
    )
    op.drop_constraint("transfers_pkey", "transfers", type_="primary")
    op.create_primary_key("transfers_pkey", "transfers", ["tx_hash", "request_id"])
    op.add_column("payouts", _store_id("payouts"))
    op.add_column("address_pool", _store_id("address_pool"))
    op.drop_constraint("address_pool_pkey", "address_pool", type_="primary")
    op.create_primary_key("address_pool_pkey", "address_pool", ["store_id", "subaddr_index"])


def _sqlite_rekey() -> None:
    # Rebuilding a table with a new primary key: SQLAlchemy warns that the reflected key
    # (the old one) differs from the new one, which is the point. Nothing else is hidden.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=".*primary_key=True, not matching", category=SAWarning
        )
        _sqlite_rekey_tables()


def _sqlite_rekey_tables() -> None:
    bind = op.get_bind()
    if bind.exec_driver_sql("PRAGMA foreign_keys").scalar():
        raise RuntimeError(
            "revision 0008 rebuilds payment_requests and must run with foreign keys off"
            " (Database.migrate() does that): with them on, every transfer would be deleted"
        )
    with op.batch_alter_table(
        "payment_requests", recreate="always", naming_convention=_SQLITE_NAMES
    ) as batch:
        batch.add_column(_store_id("payment_requests"))
        batch.drop_constraint("uq_payment_requests_subaddr_index", type_="unique")
        batch.create_unique_constraint(
            "uq_payment_requests_store_subaddr", ["store_id", "subaddr_index"]
        )
    with op.batch_alter_table(
        "transfers", recreate="always", naming_convention=_SQLITE_NAMES
    ) as batch:
        batch.create_primary_key("pk_transfers", ["tx_hash", "request_id"])
    with op.batch_alter_table(
        "payouts", recreate="always", naming_convention=_SQLITE_NAMES
    ) as batch:
        batch.add_column(_store_id("payouts"))
    with op.batch_alter_table(
        "address_pool", recreate="always", naming_convention=_SQLITE_NAMES
    ) as batch:
        batch.add_column(_store_id("address_pool"))
        batch.create_primary_key("pk_address_pool", ["store_id", "subaddr_index"])


def downgrade() -> None:
    """Back to one shop: only while no store but ``default`` exists (else the requests of
    other accounts would collide on account 0's indices, and be credited to it)."""
    bind = op.get_bind()
    others = bind.exec_driver_sql("SELECT count(*) FROM stores WHERE id <> 'default'").scalar()
    if others:
        raise RuntimeError(
            "revision 0008 cannot be downgraded while stores other than default exist"
        )
    op.drop_index("ix_events_store_seq", "events")
    op.drop_index("ix_payouts_store_id", "payouts")
    op.drop_index("ix_payment_requests_store_status_created", "payment_requests")
    op.drop_index("ix_payment_requests_store_created", "payment_requests")
    if bind.dialect.name == "sqlite":
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=".*primary_key=True, not matching", category=SAWarning
            )
            _sqlite_unkey()
    else:
        _postgresql_unkey()
    op.drop_index("ix_store_keys_store_id", "store_keys")
    op.drop_table("store_keys")
    op.drop_table("stores")


def _sqlite_unkey() -> None:
    if op.get_bind().exec_driver_sql("PRAGMA foreign_keys").scalar():
        raise RuntimeError("revision 0008's downgrade must run with foreign keys off")
    op.execute("ALTER TABLE events DROP COLUMN store_id")
    with op.batch_alter_table(
        "address_pool", recreate="always", naming_convention=_SQLITE_NAMES
    ) as batch:
        batch.drop_column("store_id")
        batch.create_primary_key("pk_address_pool", ["subaddr_index"])
    with op.batch_alter_table(
        "payouts", recreate="always", naming_convention=_SQLITE_NAMES
    ) as batch:
        batch.drop_column("store_id")
    with op.batch_alter_table(
        "transfers", recreate="always", naming_convention=_SQLITE_NAMES
    ) as batch:
        batch.create_primary_key("pk_transfers", ["tx_hash", "subaddr_index"])
    with op.batch_alter_table(
        "payment_requests", recreate="always", naming_convention=_SQLITE_NAMES
    ) as batch:
        batch.drop_constraint("uq_payment_requests_store_subaddr", type_="unique")
        batch.drop_column("store_id")
        batch.create_unique_constraint("uq_payment_requests_subaddr_index", ["subaddr_index"])


def _postgresql_unkey() -> None:
    op.drop_column("events", "store_id")
    op.drop_constraint("address_pool_pkey", "address_pool", type_="primary")
    op.drop_column("address_pool", "store_id")
    op.create_primary_key("address_pool_pkey", "address_pool", ["subaddr_index"])
    op.drop_column("payouts", "store_id")
    op.drop_constraint("transfers_pkey", "transfers", type_="primary")
    op.create_primary_key("transfers_pkey", "transfers", ["tx_hash", "subaddr_index"])
    op.drop_constraint("uq_payment_requests_store_subaddr", "payment_requests", type_="unique")
    op.drop_column("payment_requests", "store_id")
    op.create_unique_constraint(
        "payment_requests_subaddr_index_key", "payment_requests", ["subaddr_index"]
    )
