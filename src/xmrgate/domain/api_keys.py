"""API keys: parsing, hashing, constant-time lookup and scopes.

Keys are held only as SHA-256 hashes in memory; a key file may hold hashes
(``sha256:<hex>``) instead of the keys themselves, so the file on disk does not
give the keys away. Presented keys are hashed and compared to every known hash
with ``hmac.compare_digest``.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

# ``admin``: manage stores (``/stores``). Picking a store with ``X-Xmrgate-Store`` is not
# a scope: every configured (operator) key may pick any store (``web/deps.py``), and its
# scopes still limit what it does there; a store key acts on its own store only.
# ``pos``: the point-of-sale screen's key (``web/api/pos.py``): it may make a sale and
# follow it, nothing else (a till is a shared device).
SCOPES = frozenset({"read", "receive", "transfer", "refund", "admin", "pos"})


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A known key: its hash, a short label for logs, and what it may do.

    ``store`` is None for the configured (operator) keys, which act on the default store
    and may pick another; a store key (``domain/stores.py``) acts on its store only.
    ``permissions`` is set for a store key made with Greenfield permissions (a shop
    plugin's): exactly the names granted (``btcpay.store.canviewinvoices``),
    each limited to the key's store; None for a key made with scopes (its permissions
    are derived from them). Names, not ``Permission`` objects: ``domain/greenfield``
    imports this module.
    """

    digest: bytes
    label: str
    scopes: frozenset[str]
    store: str | None = None
    permissions: tuple[str, ...] | None = None


def _hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def _parse_entry(entry: str) -> ApiKey:
    """``KEY`` or ``KEY:scope+scope`` or ``sha256:<hex>[:scope+scope]``."""
    if entry.startswith("sha256:"):
        _, hexdigest, *rest = entry.split(":")
        try:
            digest = bytes.fromhex(hexdigest)
        except ValueError:
            raise ValueError("an API key hash must be sha256:<64 hex digits>") from None
        if len(digest) != 32:
            raise ValueError("an API key hash must be sha256:<64 hex digits>")
        label = f"sha256:{hexdigest[:8]}"
    else:
        token, *rest = entry.split(":")
        if len(token) < 16:
            raise ValueError("an API key must be at least 16 characters long")
        digest = _hash(token)
        label = f"key:{digest.hex()[:8]}"
    scopes = frozenset(s for s in (rest[0].split("+") if rest else []) if s) or SCOPES
    unknown = scopes - SCOPES
    if unknown or len(rest) > 1:
        raise ValueError(
            f"unknown API key scope {sorted(unknown)}; "
            "use read, receive, transfer, refund, admin, pos"
        )
    return ApiKey(digest=digest, label=label, scopes=scopes)


def parse_api_keys(spec: str) -> list[ApiKey]:
    """Keys from ``--api-key``: whitespace-separated entries, or ``@FILE`` (one per line)."""
    text = spec.strip()
    if text.startswith("@"):
        lines = Path(text[1:]).read_text().splitlines()
        entries = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    else:
        entries = text.split()
    if not entries:
        raise ValueError("no API keys given")
    keys = [_parse_entry(e) for e in entries]
    labels: set[str] = set()
    digests: set[bytes] = set()
    for key in keys:
        # The label names the caller in logs and the payout journal, and scopes its
        # Idempotency-Keys: two keys sharing one (32-bit prefixes that collide) could
        # replay one caller's answer to the other. The same key twice (also as its own
        # hash) has two scope sets, and which one applies would be an accident.
        if key.label in labels or key.digest in digests:
            raise ValueError(
                f"two API keys share the label {key.label} (the same key given twice, or "
                "hashes that begin alike): give each caller one distinct key"
            )
        labels.add(key.label)
        digests.add(key.digest)
    return keys


def find_key(keys: list[ApiKey], presented: str) -> ApiKey | None:
    """The key matching ``presented``; every known key is compared (constant time)."""
    digest = _hash(presented)
    found = None
    for key in keys:
        if hmac.compare_digest(key.digest, digest):
            found = key
    return found
