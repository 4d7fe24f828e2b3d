"""The tables of the stores and of the money paid to and by them (SQLAlchemy Core).

Stores and their keys, payment links, payment requests and their transfers, refunds,
unmatched receipts: a part of the schema of ``tables.py``, which re-exports them. Import
them from there: it registers every table in the one ``metadata`` (``tables_base.py``).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

from xmrgate.adapters.store.tables_base import QuoteText, metadata

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
    # The fewest confirmations before a sale is "Paid" on its POS screens (migration 0015).
    Column("pos_confirmations", Integer, nullable=False, server_default="1"),
    # The speed policy of its Greenfield invoices made without one (migration 0019):
    # one of BTCPay's names (``domain/greenfield/speed.py``).
    Column("speed_policy", Text, nullable=False, server_default="MediumSpeed"),
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
    # A shop plugin's key (migration 0017): the Greenfield permission names granted,
    # separated by spaces; NULL for a key made with scopes.
    Column("permissions", Text, nullable=True),
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
    # An open amount's minimum in that fiat currency, exact decimal text (migration 0015).
    Column("min_price", Text, nullable=True),
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
    # The Idempotency-Key claim that made it (migration 0020): a process that finds the
    # claim's lease expired answers this request instead of making a second one.
    Column("idempotency_ref", String(36), nullable=True),
    # Accounts of one wallet reuse minor indices: unique within a store.
    UniqueConstraint("store_id", "subaddr_index", name="uq_payment_requests_store_subaddr"),
    Index("uq_payment_requests_idempotency_ref", "idempotency_ref", unique=True),
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
