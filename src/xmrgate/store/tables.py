"""Table definitions (SQLAlchemy Core). The Alembic migrations create exactly these."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

payment_requests = Table(
    "payment_requests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("address", String(128), nullable=False, unique=True),
    # Minor index in account 0; the wallet never hands out the same one twice.
    Column("subaddr_index", Integer, nullable=False, unique=True),
    Column("amount", BigInteger, nullable=False),
    Column("description", Text, nullable=False, default=""),
    Column("callback_url", Text, nullable=True),
    Column("return_url", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("created_height", Integer, nullable=True),
)

transfers = Table(
    "transfers",
    metadata,
    Column("tx_hash", String(64), primary_key=True),
    Column("subaddr_index", Integer, primary_key=True),
    Column(
        "request_id",
        Integer,
        ForeignKey("payment_requests.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("amount", BigInteger, nullable=False),
    Column("fee", BigInteger, nullable=False),
    Column("height", Integer, nullable=False),
    Column("timestamp", BigInteger, nullable=False),
    Column("unlock_time", BigInteger, nullable=False),
    Column("double_spend_seen", Boolean, nullable=False),
    Column("state", String(16), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Index("ix_transfers_state_height", "state", "height"),
)

# One row (id = 1): how far the sync engine has got.
sync_state = Table(
    "sync_state",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("wallet_height", Integer, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# The outbox: one row per callback to deliver, written with the state change.
events = Table(
    "events",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(36), nullable=False, unique=True),
    Column(
        "request_id",
        Integer,
        ForeignKey("payment_requests.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("kind", String(32), nullable=False),
    Column("tx_hash", String(64), nullable=False),
    Column("callback_url", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("next_attempt_at", DateTime(timezone=True), nullable=True),
    Column("last_attempt_at", DateTime(timezone=True), nullable=True),
    Column("delivered_at", DateTime(timezone=True), nullable=True),
    Column("last_status", Integer, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("claimed_by", String(64), nullable=True),
    Column("claimed_until", DateTime(timezone=True), nullable=True),
    Index("ix_events_status_next", "status", "next_attempt_at"),
)

# Every payout, recorded before the wallet is asked and again after it answered.
payouts = Table(
    "payouts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("state", String(16), nullable=False),
    Column("destinations", Text, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("fee", BigInteger, nullable=True),
    Column("tx_hash_list", Text, nullable=True),
    Column("error", Text, nullable=True),
    Column("requested_by", String(128), nullable=True),
    Column("idempotency_key", String(255), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("endpoint", String(64), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("request_hash", String(64), nullable=False),
    Column("state", String(16), nullable=False),
    Column("response_status", Integer, nullable=True),
    Column("response_body", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False, index=True),
)
