"""Stores: several shops on one gateway, each on an account of the main wallet.

A store is an id (a short slug), a display name and the wallet account it receives on
and pays out from. The default store (``DEFAULT_STORE``) is the gateway as it was before
stores: account 0 of the main wallet, the configured API keys and callback secret.

Store keys are bearer keys like the configured ones, but belong to one store, are kept
only as SHA-256 digests in the database, and never carry the ``admin`` scope.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime

DEFAULT_STORE = "default"
# The default store's name until the operator gives it one (migration 0008).
DEFAULT_STORE_NAME = "Default store"
# A short slug: it appears in headers, URLs, metrics labels and log lines.
STORE_ID = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?")
MAX_NAME = 100
# The scopes a store key may hold; ``admin`` (managing stores) is for configured keys only.
STORE_KEY_SCOPES = frozenset({"read", "receive", "transfer", "refund", "pos"})
# A store key made without scopes gets these (``refund`` and ``pos`` are asked for by
# name: they came later, and a key made before them must not gain a power on upgrade;
# a till's key is ``pos`` alone).
DEFAULT_STORE_KEY_SCOPES = frozenset({"read", "receive", "transfer"})
# The prefix makes a leaked store key recognisable (secret scanners, logs).
KEY_PREFIX = "xgs_"
ACCENT = re.compile(r"#[0-9a-fA-F]{6}")
# The confirmations a store's POS screens wait for before "Paid" (docs/pos.md): 1 unless
# the store says otherwise (the screens' own default before stores had a say), at most
# what a device may ask for (10 blocks, about 20 minutes: a till's customer waits).
DEFAULT_POS_CONFIRMATIONS = 1
MAX_POS_CONFIRMATIONS = 10
# What PATCH /stores/{id} may change (never the id, the wallet or the creation time).
EDITABLE = frozenset(
    {
        "name",
        "enabled",
        "callback_secret",
        "accent",
        "default_expires_in",
        "default_underpay_tolerance",
        "pos_confirmations",
        "speed_policy",
    }
)
# The speed policy of a store's Greenfield invoices made without one, as BTCPay's stores
# have it: MediumSpeed (1 confirmation) unless the store sets another. Its name here, as
# stored and answered; the names and their confirmations are ``domain/greenfield/speed``'s
# (which takes this default from here: importing it here would make a loop).
DEFAULT_STORE_SPEED_POLICY = "MediumSpeed"


@dataclass(frozen=True, slots=True)
class OwnWallet:
    """A store's own monero-wallet-rpc (money kept apart from the main wallet)."""

    rpc_address: str
    primary_address: str
    wallet_no: int  # its row in sync_state (the main wallet's is 1)
    rpc_username: str | None = None
    rpc_password: str | None = None


@dataclass(frozen=True, slots=True)
class Store:
    """One shop: where its money arrives and what its customers see."""

    id: str
    name: str
    account_index: int
    enabled: bool = True
    # None: callbacks of this store are unsigned (as with no --callback-secret).
    callback_secret: str | None = None
    accent: str | None = None
    default_expires_in: int | None = None
    default_underpay_tolerance: int | None = None
    # The fewest confirmations its POS screens wait for (a device may ask for more).
    pos_confirmations: int = DEFAULT_POS_CONFIRMATIONS
    # The speed policy of its Greenfield invoices made without one: one of BTCPay's names.
    speed_policy: str = DEFAULT_STORE_SPEED_POLICY
    created_at: datetime | None = None
    # Set for a store on its own wallet-rpc (then ``account_index`` is 0, of that wallet).
    own_wallet: OwnWallet | None = None

    def public(self) -> dict[str, object]:
        """The store as the admin API shows it: never a secret (callback, wallet login)."""
        wallet: dict[str, object] = {"account": self.account_index}
        if self.own_wallet is not None:
            wallet = {
                "rpc_address": self.own_wallet.rpc_address,
                "rpc_username": self.own_wallet.rpc_username,
                "primary_address": self.own_wallet.primary_address,
            }
        return {
            "id": self.id,
            "name": self.name,
            "wallet": wallet,
            "enabled": self.enabled,
            "callback_secret_set": self.callback_secret is not None,
            "accent": self.accent,
            "default_expires_in": self.default_expires_in,
            "default_underpay_tolerance": self.default_underpay_tolerance,
            "pos_confirmations": self.pos_confirmations,
            "speed_policy": self.speed_policy,
            "created_at": None if self.created_at is None else self.created_at.isoformat(),
        }

    def with_changes(self, **changes: object) -> Store:
        """A copy with ``changes`` applied (PATCH)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class StoreKey:
    """A store's API key as stored: its digest, never the key itself."""

    id: str
    store_id: str
    digest: bytes
    scopes: frozenset[str]
    created_at: datetime | None = None
    revoked: bool = False
    label: str = field(default="")
    # The Greenfield permission names granted (a shop plugin's key), exactly
    # as granted; None for a key made with scopes.
    permissions: tuple[str, ...] | None = None

    def public(self) -> dict[str, object]:
        """The key as the admin API lists it (no secret)."""
        return {
            "id": self.id,
            "store": self.store_id,
            "scopes": sorted(self.scopes),
            "permissions": None if self.permissions is None else list(self.permissions),
            "created_at": None if self.created_at is None else self.created_at.isoformat(),
            "revoked": self.revoked,
        }


def check_store_id(value: str) -> str:
    """``value`` when it is a short slug, else ValueError saying what one is."""
    if not isinstance(value, str) or STORE_ID.fullmatch(value) is None:
        raise ValueError(
            "a store id is 1 to 32 lower-case letters, digits and inner hyphens (like shop-2)"
        )
    return value


def check_scopes(scopes: list[str] | None) -> frozenset[str]:
    """The scopes of a new store key (read, receive and transfer when none are named)."""
    chosen = frozenset(scopes) if scopes else DEFAULT_STORE_KEY_SCOPES
    unknown = chosen - STORE_KEY_SCOPES
    if unknown:
        raise ValueError(
            "a store key's scopes are read, receive, transfer, refund and pos; "
            f"not {sorted(unknown)}"
        )
    return chosen


def new_key_token() -> str:
    """A fresh store key (shown once; only its digest is kept)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_digest(token: str) -> bytes:
    """The digest a key is stored and looked up by (the same as configured keys')."""
    return hashlib.sha256(token.encode()).digest()


def key_label(key_id: str) -> str:
    """How a store key names its caller in logs, the payout journal and idempotency."""
    return f"store-key:{key_id}"
