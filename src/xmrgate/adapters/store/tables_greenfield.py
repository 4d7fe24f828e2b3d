"""The tables of the Greenfield facade, re-exported by ``tables.py``.

A Greenfield invoice IS a payment request: ``greenfield_invoices`` holds only what
Greenfield adds to it (its id, the shop's order id and metadata, the amount and currency
as the shop sent them, the confirmations its speed policy asks, where to send the buyer
back, the merchant's mark). The request, its transfers and its events are the ledger's.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    true,
)

from xmrgate.adapters.store.tables_base import metadata

greenfield_invoices = Table(
    "greenfield_invoices",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("store_id", String(32), nullable=False),
    # The request is the invoice's ledger; deleting it (DELETE /receive) deletes this.
    Column(
        "request_id",
        Integer,
        ForeignKey("payment_requests.id", name="fk_greenfield_request", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
    Column("order_id", String(256), nullable=True),
    # As the shop sent them: "12.50" EUR is answered "12.50" EUR.
    Column("currency", String(8), nullable=False),
    Column("amount", Text, nullable=False),
    # The shop's JSON object, as text (at most 64 KiB).
    Column("metadata", Text, nullable=False),
    # The policy as given (NULL: the store's default) and what it asked for at creation.
    Column("speed_policy", String(16), nullable=True),
    Column("confirmations", Integer, nullable=False),
    Column("monitoring_minutes", Integer, nullable=False),
    Column("redirect_url", Text, nullable=True),
    Column("redirect_automatically", Boolean, nullable=False),
    # Settled or Invalid: the merchant's mark (POST .../status), NULL until then.
    Column("marked", String(16), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # The state last announced to the store's webhooks (JSON: status, additional status,
    # each payment's status; NULL before the first), and whether it may still change.
    Column("announced", Text, nullable=True),
    Column("watching", Boolean, nullable=False, server_default=true(), index=True),
    # The plugins look an invoice up by their order id; the list is newest first.
    Index("ix_greenfield_invoices_order", "store_id", "order_id"),
    Index("ix_greenfield_invoices_created", "store_id", "created_at", "id"),
)

# The consent page's approvals (migration 0017, ``adapters/store/consent_tokens.py``):
# a single-use token, kept as the SHA-256 of it, bound to what it approves (the digest
# of the operator key, the redirect, the permissions), until it expires. Using it
# deletes the row; a used or expired token is no row.
consent_tokens = Table(
    "consent_tokens",
    metadata,
    Column("digest", String(64), primary_key=True),
    Column("binding", String(64), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Index("ix_consent_tokens_expires", "expires_at"),
)

# A store's webhooks (migration 0018): where its invoices' events are delivered, signed
# with the webhook's secret (BTCPay-Sig), by the outbox (events.webhook_id).
greenfield_webhooks = Table(
    "greenfield_webhooks",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("store_id", String(32), nullable=False, index=True),
    Column("url", Text, nullable=False),
    Column("secret", Text, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("automatic_redelivery", Boolean, nullable=False),
    # authorizedEvents: everything, or the types listed (space-separated).
    Column("everything", Boolean, nullable=False),
    Column("specific_events", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
