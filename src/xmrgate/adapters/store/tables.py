"""Table definitions (SQLAlchemy Core). The Alembic migrations create exactly these.

``tests/db/test_schema.py`` checks that on both backends: a change here needs a new
migration in ``migrations/versions/`` (never an edit of one that has shipped).

Import every table (and ``metadata``) from here. The one ``metadata`` and our column
types are in ``tables_base.py``; the tables of the stores and of the money paid to and
by them (stores, store keys, links, payment requests, transfers, refunds, unmatched
receipts) in ``tables_payments.py``, re-exported below and registered first; the
gateway's own working tables (sync state, events and their callback tries, the payout
journal, idempotency keys, the wallet's identity, the address pool, the cluster's rate
answers and flood windows) are defined here.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from xmrgate.adapters.store.tables_base import QuoteText, metadata
from xmrgate.adapters.store.tables_greenfield import (
    consent_tokens,
    greenfield_invoices,
    greenfield_webhooks,
)
from xmrgate.adapters.store.tables_payments import (
    links,
    payment_requests,
    refunds,
    store_keys,
    stores,
    transfers,
    unmatched_receipts,
)

__all__ = [
    "QuoteText",
    "address_pool",
    "callback_tries",
    "consent_tokens",
    "events",
    "flood_windows",
    "greenfield_invoices",
    "greenfield_webhooks",
    "idempotency_keys",
    "links",
    "metadata",
    "payment_requests",
    "payouts",
    "rate_answers",
    "refunds",
    "store_keys",
    "stores",
    "sync_health",
    "sync_state",
    "transfers",
    "unmatched_receipts",
    "wallet_identity",
]

# One row (id = 1): how far the sync engine has got.
sync_state = Table(
    "sync_state",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("wallet_height", Integer, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# Wallets whose sync ticks fail in a row (migration 0020): one row per failing wallet
# (sync_state's ids), gone once a tick runs again; /health and the overview read it.
sync_health = Table(
    "sync_health",
    metadata,
    Column("sync_id", Integer, primary_key=True),
    Column("failures", Integer, nullable=False),
    Column("last_error", Text, nullable=False),
    Column("failing_since", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# The outbox and event feed: one row per event (a callback to deliver when the request
# has a callback_url), written with the state change; seq orders the feed.
events = Table(
    "events",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(36), nullable=False, unique=True),
    # NULL for an unmatched receipt's event (migration 0012): ``receipt_id`` names it.
    Column(
        "request_id",
        Integer,
        ForeignKey("payment_requests.id", ondelete="CASCADE"),
        nullable=True,
        index=True,
    ),
    Column("kind", String(32), nullable=False),
    Column("tx_hash", String(64), nullable=False),
    # NULL: the request has no callback_url; the event is only in the feed (GET /events).
    Column("callback_url", Text, nullable=True),
    Column("payload", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("next_attempt_at", DateTime(timezone=True), nullable=True),
    Column("last_attempt_at", DateTime(timezone=True), nullable=True),
    Column("delivered_at", DateTime(timezone=True), nullable=True),
    Column("last_status", Integer, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("claimed_by", String(64), nullable=True),
    Column("claimed_until", DateTime(timezone=True), nullable=True),
    # The request's store (migration 0008), copied so that the feed of one store and the
    # callback's signing secret need no join.
    Column("store_id", String(32), nullable=False, server_default="default"),
    Column(
        "receipt_id",
        Integer,
        ForeignKey("unmatched_receipts.id", name="fk_events_receipt", ondelete="CASCADE"),
        nullable=True,
        index=True,
    ),
    # A delivery of a Greenfield webhook (migration 0018): its webhook; NULL for a
    # callback or an event of the feed only.
    Column("webhook_id", String(32), nullable=True, index=True),
    Index("ix_events_status_next", "status", "next_attempt_at"),
    Index("ix_events_store_seq", "store_id", "seq"),
    # GET /events?after=<seq> needs a seq that is never handed out twice. Without
    # AUTOINCREMENT SQLite gives max(seq) + 1, reusing the number of a deleted newest
    # event (DELETE /receive, retention) that a client may have seen (migration 0007).
    # PostgreSQL's sequence never goes back anyway.
    sqlite_autoincrement=True,
)

# Every try of every callback (migration 0005): when, the HTTP answer, the error. The
# events row keeps the totals; this is the history the dashboard shows.
callback_tries = Table(
    "callback_tries",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "event_seq",
        Integer,
        ForeignKey("events.seq", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("attempted_at", DateTime(timezone=True), nullable=False),
    Column("delivered", Boolean, nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("error", Text, nullable=True),
    Index("ix_callback_tries_event", "event_seq", "id"),
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
    Column(
        "store_id",
        String(32),
        ForeignKey("stores.id", name="fk_payouts_store"),
        nullable=False,
        server_default="default",
        index=True,
    ),
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
    # Of a running claim (migration 0020): the process working on it, until when it holds
    # it unless renewed, and the reference its work records (``core/idempotency.py``).
    Column("owner", String(64), nullable=True),
    Column("lease_until", DateTime(timezone=True), nullable=True),
    Column("ref", String(36), nullable=True),
)

# The wallet this database belongs to: recorded at the first start (migration 0002).
wallet_identity = Table(
    "wallet_identity",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("primary_address", String(128), nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
)

# Subaddresses created ahead and saved by the wallet, not handed out yet (migration 0003).
address_pool = Table(
    "address_pool",
    metadata,
    # Each store's pool holds subaddresses of its own account (migration 0008).
    Column(
        "store_id",
        String(32),
        ForeignKey("stores.id", name="fk_address_pool_store"),
        primary_key=True,
        server_default="default",
    ),
    Column("subaddr_index", Integer, primary_key=True, autoincrement=False),
    Column("address", String(128), nullable=False, unique=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# Each exchange-rate source's last answer per currency, stored by the process that asks
# the sources for the cluster and read by the others (migration 0014, issue 26).
rate_answers = Table(
    "rate_answers",
    metadata,
    Column("source", String(32), primary_key=True),
    Column("currency", String(3), primary_key=True),
    # The last good answer, an exact decimal as text (SQLite has no exact numeric type).
    Column("rate", Text, nullable=True),
    Column("answered_at", DateTime(timezone=True), nullable=True),
    # Why the latest try failed (NULL: it gave ``rate``), and when it ended.
    Column("error", Text, nullable=True),
    Column("checked_at", DateTime(timezone=True), nullable=False),
    Column("misses", BigInteger, nullable=False),
)

# The public pages' flood limits counted for the whole cluster on PostgreSQL (migration
# 0013, issue 26; ``adapters/store/flood_windows.py``): one window per limiter and key,
# opened by its first hit and closed at ``ends_at``, then reopened or swept.
flood_windows = Table(
    "flood_windows",
    metadata,
    Column("limiter", String(32), primary_key=True),
    Column("key", String(128), primary_key=True),
    Column("ends_at", DateTime(timezone=True), nullable=False, index=True),
    Column("hits", Integer, nullable=False),
)
