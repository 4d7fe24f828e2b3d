"""Payment links: a public page (``/l/<slug>``) that makes a payment request of its store.

Adds ``links`` (one row per link; the slug is unique across stores, since the page is
found by it alone) and ``payment_requests.link_id``: the link that made a request, NULL
for every existing row and for requests made through the API. Its index
(``link_id``, ``created_at``, ``id``) serves a link's counts, the list filtered by link
(newest first) and the foreign key's ON DELETE SET NULL.

On PostgreSQL both are additions. On SQLite ``payment_requests`` is rebuilt (an ADD
COLUMN would keep the foreign key unnamed and without its ON DELETE as far as
reflection can tell), with foreign keys off as ``Database.migrate()`` runs revisions, so
dropping the old table does not cascade to its transfers and events; the downgrade
rebuilds it again (SQLite cannot drop a column that is in a foreign key).

Revision ID: 0011
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_FK = "fk_payment_requests_link"


def upgrade() -> None:
    """Create ``links`` and add ``payment_requests.link_id`` (NULL for every row)."""
    op.create_table(
        "links",
        sa.Column("id", sa.String(24), primary_key=True),
        sa.Column("store_id", sa.String(32), nullable=False),
        sa.Column("slug", sa.String(64), nullable=False, unique=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=True),
        sa.Column("price", sa.Text(), nullable=True),
        sa.Column("min_amount", sa.BigInteger(), nullable=True),
        sa.Column("currency", sa.String(3), nullable=True),
        sa.Column("callback_url", sa.Text(), nullable=True),
        sa.Column("return_url", sa.Text(), nullable=True),
        sa.Column("expires_in", sa.Integer(), nullable=False),
        sa.Column("max_uses", sa.Integer(), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_links_store_created", "links", ["store_id", "created_at", "id"])
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_add_link_id()
    else:
        op.add_column("payment_requests", sa.Column("link_id", sa.String(24), nullable=True))
        op.create_foreign_key(
            _FK, "payment_requests", "links", ["link_id"], ["id"], ondelete="SET NULL"
        )
    op.create_index(
        "ix_payment_requests_link_created", "payment_requests", ["link_id", "created_at", "id"]
    )


def _foreign_keys_off() -> None:
    if op.get_bind().exec_driver_sql("PRAGMA foreign_keys").scalar():
        raise RuntimeError(
            "revision 0011 rebuilds payment_requests and must run with foreign keys off"
            " (Database.migrate() does that): with them on, its transfers would be deleted"
        )


def _sqlite_requests(*, link: bool) -> sa.Table:
    """``payment_requests`` as SQLite holds it after revision 0010 (and ``link_id``).

    The rebuild copies from this, not from reflection: reflection would turn the CHECK
    of ``refunded`` (a column constraint since 0010's ADD COLUMN) into a table
    constraint, which 0010's downgrade (a DROP COLUMN) could then no longer get past.
    """
    meta = sa.MetaData()
    sa.Table("stores", meta, sa.Column("id", sa.String(32), primary_key=True))
    sa.Table("links", meta, sa.Column("id", sa.String(24), primary_key=True))
    extra: list[Any] = []
    if link:
        extra = [
            sa.Column("link_id", sa.String(24), nullable=True),
            sa.ForeignKeyConstraint(["link_id"], ["links.id"], name=_FK, ondelete="SET NULL"),
        ]
    return sa.Table(
        "payment_requests",
        meta,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("address", sa.String(128), nullable=False),
        sa.Column("subaddr_index", sa.Integer(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("callback_url", sa.Text(), nullable=True),
        sa.Column("return_url", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_height", sa.Integer(), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("underpay_tolerance", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("status", sa.String(16), nullable=False, server_default="waiting"),
        sa.Column(
            "store_id",
            sa.String(32),
            sa.ForeignKey("stores.id", name="fk_payment_requests_store"),
            nullable=False,
            server_default="default",
        ),
        sa.Column("price", sa.Text(), nullable=True),
        sa.Column(
            "refunded",
            sa.BigInteger(),
            sa.CheckConstraint("refunded >= 0", name="ck_payment_requests_refunded"),
            nullable=False,
            server_default="0",
        ),
        *extra,
        sa.UniqueConstraint("address", name="uq_payment_requests_address"),
        sa.UniqueConstraint("store_id", "subaddr_index", name="uq_payment_requests_store_subaddr"),
        sa.Index("ix_payment_requests_store_created", "store_id", "created_at", "id"),
        sa.Index(
            "ix_payment_requests_store_status_created", "store_id", "status", "created_at", "id"
        ),
        sa.Index("ix_payment_requests_created", "created_at", "id"),
        sa.Index("ix_payment_requests_status_created", "status", "created_at", "id"),
        sa.Index("ix_payment_requests_status_expires", "status", "expires_at"),
    )


def _sqlite_add_link_id() -> None:
    """SQLite: a rebuild. ADD COLUMN could take the foreign key only as a column
    constraint, which SQLite keeps without its name and SQLAlchemy reflects without its
    ON DELETE: the schema would no longer be the one of ``tables.py``."""
    _foreign_keys_off()
    with op.batch_alter_table(
        "payment_requests", recreate="always", copy_from=_sqlite_requests(link=False)
    ) as batch:
        batch.add_column(sa.Column("link_id", sa.String(24), nullable=True))
        batch.create_foreign_key(_FK, "links", ["link_id"], ["id"], ondelete="SET NULL")


def downgrade() -> None:
    """Drop both again (the links with them; the requests they made stay, unlinked)."""
    op.drop_index("ix_payment_requests_link_created", "payment_requests")
    if op.get_bind().dialect.name == "sqlite":
        _foreign_keys_off()
        with op.batch_alter_table(
            "payment_requests", recreate="always", copy_from=_sqlite_requests(link=True)
        ) as batch:
            batch.drop_constraint(_FK, type_="foreignkey")
            batch.drop_column("link_id")
    else:
        op.drop_constraint(_FK, "payment_requests", type_="foreignkey")
        op.drop_column("payment_requests", "link_id")
    op.drop_index("ix_links_store_created", "links")
    op.drop_table("links")
