"""Table definitions (SQLAlchemy Core). The Alembic migrations create exactly these.

``tests/db/test_schema.py`` checks that on both backends: a change here needs a new
migration in ``migrations/versions/`` (never an edit of one that has shipped).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from xmrgate.domain.fiat import Quote

log = logging.getLogger(__name__)

metadata = MetaData()


class QuoteText(TypeDecorator[Quote]):
    """A fiat price's quote (``domain/fiat.py``) stored as JSON text.

    Every query module gets the record's ``Quote`` without converting it itself.
    """

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Quote | None, dialect: Dialect) -> str | None:
        """The quote as compact JSON, or NULL."""
        return None if value is None else json.dumps(value.to_json(), separators=(",", ":"))

    def process_result_value(self, value: Any, dialect: Dialect) -> Quote | None:
        """The stored quote; one edited by hand into something else reads as none (logged),
        so a request stays readable."""
        if value is None:
            return None
        try:
            return Quote.from_json(json.loads(value))
        except (ValueError, TypeError, AttributeError) as exc:
            log.error("payment request with an unreadable price %r: %s", value[:200], exc)
            return None


# Shops on this gateway (migration 0008); "default" is the gateway as it was before.
stores = Table(
    "stores",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(100), nullable=False),
    # The account (major index) of the main wallet it receives on and pays out from;
    # NULL for a store on its own wallet (it uses that wallet's account 0).
    Column("account_index", Integer, nullable=True, unique=True),
    # A store on its own wallet-rpc: where, its login, the wallet's primary address
    # (checked before every tick, like the main wallet's identity), and the number of
    # its row in sync_state (the main wallet's is 1).
    Column("rpc_address", Text, nullable=True),
    Column("rpc_username", Text, nullable=True),
    Column("rpc_password", Text, nullable=True),
    Column("primary_address", String(128), nullable=True, unique=True),
    Column("wallet_no", Integer, nullable=True, unique=True),
    Column("enabled", Boolean, nullable=False),
    Column("callback_secret", Text, nullable=True),
    Column("accent", String(7), nullable=True),
    Column("default_expires_in", Integer, nullable=True),
    Column("default_underpay_tolerance", BigInteger, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# Store API keys, by the SHA-256 of the key (shown once at creation, never stored).
store_keys = Table(
    "store_keys",
    metadata,
    Column("id", String(16), primary_key=True),
    Column("store_id", String(32), ForeignKey("stores.id"), nullable=False, index=True),
    Column("digest", String(64), nullable=False, unique=True),
    Column("scopes", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
)

# Payment links (migration 0011; ``domain/links.py``): a public page ``/l/<slug>`` that
# makes a payment request of its store. Slugs are global; everything else is per store.
links = Table(
    "links",
    metadata,
    Column("id", String(24), primary_key=True),
    Column("store_id", String(32), nullable=False),
    Column("slug", String(64), nullable=False, unique=True),
    Column("title", Text, nullable=False),
    Column("description", Text, nullable=False),
    # A fixed amount (piconero), a fixed fiat price (JSON {"amount", "currency"}), or an
    # open amount (both NULL) of at least min_amount, in currency when that is fiat.
    Column("amount", BigInteger, nullable=True),
    Column("price", Text, nullable=True),
    Column("min_amount", BigInteger, nullable=True),
    Column("currency", String(3), nullable=True),
    Column("callback_url", Text, nullable=True),
    Column("return_url", Text, nullable=True),
    # The life of each request it makes (seconds), and how many it may make.
    Column("expires_in", Integer, nullable=False),
    Column("max_uses", Integer, nullable=True),
    Column("active", Boolean, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_links_store_created", "store_id", "created_at", "id"),
)

payment_requests = Table(
    "payment_requests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("address", String(128), nullable=False, unique=True),
    # Minor index in the store's account; the wallet never hands out the same one twice.
    Column("subaddr_index", Integer, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("description", Text, nullable=False),
    Column("callback_url", Text, nullable=True),
    Column("return_url", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("created_height", Integer, nullable=True),
    # Invoices (migration 0004): expiry, tolerance, and the status the sync tick recorded.
    Column("expires_at", DateTime(timezone=True), nullable=True),
    Column("underpay_tolerance", BigInteger, nullable=False, server_default="0"),
    Column("status", String(16), nullable=False, server_default="waiting"),
    # The store it belongs to (migration 0008): every read and write is scoped by it.
    Column(
        "store_id",
        String(32),
        ForeignKey("stores.id", name="fk_payment_requests_store"),
        nullable=False,
        server_default="default",
    ),
    # A fiat-priced request's quote as JSON (migration 0009; ``domain/fiat.py`` Quote).
    Column("price", QuoteText, nullable=True),
    # What refunds in a holding state reserve of what it received (migration 0010): one
    # conditional UPDATE of this column reserves, so two racing refunds never both fit.
    Column(
        "refunded",
        BigInteger,
        CheckConstraint("refunded >= 0", name="ck_payment_requests_refunded"),
        nullable=False,
        server_default="0",
    ),
    # The link that made it (migration 0011); NULL: made through the API.
    Column(
        "link_id",
        String(24),
        ForeignKey("links.id", name="fk_payment_requests_link", ondelete="SET NULL"),
        nullable=True,
    ),
    # Accounts of one wallet reuse minor indices: unique within a store.
    UniqueConstraint("store_id", "subaddr_index", name="uq_payment_requests_store_subaddr"),
    Index("ix_payment_requests_store_created", "store_id", "created_at", "id"),
    Index("ix_payment_requests_store_status_created", "store_id", "status", "created_at", "id"),
    # GET /receive lists newest first, optionally by status; the tick finds due expiries.
    Index("ix_payment_requests_created", "created_at", "id"),
    Index("ix_payment_requests_status_created", "status", "created_at", "id"),
    Index("ix_payment_requests_status_expires", "status", "expires_at"),
    # A link's requests: its counts, the list filtered by link (newest first), and the
    # foreign key's ON DELETE.
    Index("ix_payment_requests_link_created", "link_id", "created_at", "id"),
)

transfers = Table(
    "transfers",
    metadata,
    # One transaction may pay the same minor index of two accounts (two stores): the key
    # is the request, not the index (migration 0008).
    Column("tx_hash", String(64), primary_key=True),
    Column(
        "request_id",
        Integer,
        ForeignKey("payment_requests.id", ondelete="CASCADE"),
        primary_key=True,
        index=True,
    ),
    Column("subaddr_index", Integer, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("fee", BigInteger, nullable=False),
    Column("height", Integer, nullable=False),
    Column("timestamp", BigInteger, nullable=False),
    Column("unlock_time", BigInteger, nullable=False),
    Column("double_spend_seen", Boolean, nullable=False),
    Column("state", String(16), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # Unix time it first appeared (pool or block); NULL (older rows): ``timestamp``.
    Column("first_seen", BigInteger, nullable=True),
    Index("ix_transfers_state_height", "state", "height"),
    # XMR received per day (the dashboard's chart): mined transfers in a window of block
    # times, one range per state.
    Index("ix_transfers_state_timestamp", "state", "timestamp"),
)

# Money given back to a customer, who names the address on a claim link (migration 0010;
# ``domain/refunds.py``). Its amount is reserved in ``payment_requests.refunded`` while
# the refund is in a holding state.
refunds = Table(
    "refunds",
    metadata,
    Column("id", String(24), primary_key=True),
    # The request's store, copied so that every read and write is scoped without a join.
    Column("store_id", String(32), nullable=False),
    # What it gives back: a request's money, or an unmatched receipt's (migration 0012).
    Column(
        "request_id",
        Integer,
        ForeignKey("payment_requests.id", ondelete="CASCADE"),
        nullable=True,
        index=True,
    ),
    Column(
        "receipt_id",
        Integer,
        ForeignKey("unmatched_receipts.id", name="fk_refunds_receipt", ondelete="CASCADE"),
        nullable=True,
        index=True,
    ),
    Column("amount", BigInteger, nullable=False),
    # A refund asked in fiat: {"amount": "5.00", "currency": "EUR"} as JSON text.
    Column("price", Text, nullable=True),
    Column("reason", Text, nullable=False),
    # The SHA-256 (hex) of the claim token: the token itself is shown once, never stored.
    Column("token_digest", String(64), nullable=False, unique=True),
    Column("status", String(16), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("claimed_at", DateTime(timezone=True), nullable=True),
    Column("sent_at", DateTime(timezone=True), nullable=True),
    Column("confirmed_at", DateTime(timezone=True), nullable=True),
    Column("cancelled_at", DateTime(timezone=True), nullable=True),
    Column("claim_address", String(128), nullable=True),
    # The transactions that paid it, a JSON list (NULL until sent).
    Column("tx_hash_list", Text, nullable=True),
    # Several keys concatenated when the tx paid a subaddress among other outputs.
    Column("tx_key", Text, nullable=True),
    Column("fee", BigInteger, nullable=True),
    Column("manual", Boolean, nullable=False, server_default=false()),
    # The payout journal's row of the send (no foreign key: the journal is kept apart).
    Column("payout_id", Integer, nullable=True),
    Column("error", Text, nullable=True),
    CheckConstraint("amount > 0", name="ck_refunds_amount"),
    # GET /refunds lists a store's refunds newest first, optionally by status.
    Index("ix_refunds_store_status_created", "store_id", "status", "created_at", "id"),
    Index("ix_refunds_store_created", "store_id", "created_at", "id"),
)

# Money that reached a subaddress of a store that no payment request owns (migration
# 0012; ``domain/unmatched.py``): a payment to a pruned or deleted request, to a pooled
# index, or to a subaddress made with another tool. Kept in step with the chain like a
# transfer; the merchant dismisses it with a note (kept, never deleted).
unmatched_receipts = Table(
    "unmatched_receipts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("store_id", String(32), nullable=False),
    Column("subaddr_index", Integer, nullable=False),
    Column("address", String(128), nullable=False),
    Column("tx_hash", String(64), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("fee", BigInteger, nullable=False),
    Column("height", Integer, nullable=False),
    Column("timestamp", BigInteger, nullable=False),
    Column("unlock_time", BigInteger, nullable=False),
    Column("double_spend_seen", Boolean, nullable=False),
    Column("state", String(16), nullable=False),
    Column("first_seen", BigInteger, nullable=True),
    # open | dismissed (the merchant's answer).
    Column("status", String(16), nullable=False),
    Column("note", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("dismissed_at", DateTime(timezone=True), nullable=True),
    # What refunds in a holding state reserve of it (as ``payment_requests.refunded``).
    Column(
        "refunded",
        BigInteger,
        CheckConstraint("refunded >= 0", name="ck_unmatched_receipts_refunded"),
        nullable=False,
        server_default="0",
    ),
    # A receipt is recorded once; (store, index) first: the tick looks receipts up by
    # the subaddresses it observed.
    UniqueConstraint(
        "store_id", "subaddr_index", "tx_hash", name="uq_unmatched_receipts_store_index_tx"
    ),
    # GET /unmatched lists a store's receipts newest first; the tick reads the window.
    Index("ix_unmatched_receipts_store_created", "store_id", "created_at", "id"),
    Index("ix_unmatched_receipts_state_height", "state", "height"),
)

# One row (id = 1): how far the sync engine has got.
sync_state = Table(
    "sync_state",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("wallet_height", Integer, nullable=False),
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
