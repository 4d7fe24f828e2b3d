"""The consent page's approvals: single-use tokens (``/api-keys/authorize``).

The page's second step (the store and the permissions, shown once the operator's key was
checked) carries a token that approving or declining uses up. Only the token's SHA-256
is kept, with a ``binding`` (a digest of what it approves: the operator key, the
redirect, the application and the permissions) and an expiry: a token copied to another
consent, replayed, or used after ``TOKEN_LIFETIME`` finds no row and makes no key.

``take`` is one conditional DELETE in the database (``adapters/store/consent_tokens.py``):
of two posts of one token, exactly one deletes the row, whichever process answers them.
``MemoryConsentTokens`` is the same for an app built without a database (tests).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

# Long enough to read the permissions and pick a store; short enough that a page left
# open is no standing approval.
TOKEN_LIFETIME = timedelta(minutes=15)


class ConsentTokens(Protocol):
    """Where the tokens' digests are kept until used or expired."""

    async def add(self, digest: bytes, binding: bytes, expires_at: datetime) -> None:
        """Keep a new token's digest (and sweep expired ones)."""
        ...

    async def take(self, digest: bytes, binding: bytes, now: datetime) -> bool:
        """Delete the token if it is there, bound to ``binding`` and not expired at
        ``now``; True only for the one call that deleted it."""
        ...


def _utcnow() -> datetime:
    return datetime.now(UTC)


def binding_of(*parts: str) -> bytes:
    """The digest of what a token approves: ``parts`` in order, each length-prefixed
    (so no two different lists give the same bytes)."""
    hasher = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        hasher.update(len(data).to_bytes(4, "big") + data)
    return hasher.digest()


class Consents:
    """Issue a token for a consent; use it up once."""

    def __init__(self, tokens: ConsentTokens, *, clock: Callable[[], datetime] = _utcnow) -> None:
        self._tokens = tokens
        self._clock = clock

    async def issue(self, binding: bytes) -> str:
        """A new token for the consent ``binding`` describes (shown in the page only)."""
        token = secrets.token_urlsafe(32)
        digest = hashlib.sha256(token.encode()).digest()
        await self._tokens.add(digest, binding, self._clock() + TOKEN_LIFETIME)
        return token

    async def redeem(self, token: str, binding: bytes) -> bool:
        """Use the token up: True the first time, for its own consent, before it expires."""
        if not token or len(token) > 100:
            return False
        digest = hashlib.sha256(token.encode()).digest()
        return await self._tokens.take(digest, binding, self._clock())


class MemoryConsentTokens:
    """``ConsentTokens`` in this process's memory (one process: tests, no database)."""

    def __init__(self) -> None:
        self._rows: dict[bytes, tuple[bytes, datetime]] = {}

    async def add(self, digest: bytes, binding: bytes, expires_at: datetime) -> None:
        """Keep the token; forget the expired ones (no row outlives its use)."""
        now = _utcnow()
        self._rows = {d: row for d, row in self._rows.items() if row[1] > now}
        self._rows[digest] = (binding, expires_at)

    async def take(self, digest: bytes, binding: bytes, now: datetime) -> bool:
        """Delete and answer True when the token is there, bound and unexpired."""
        row = self._rows.get(digest)
        if row is None or not hmac.compare_digest(row[0], binding) or row[1] <= now:
            return False
        del self._rows[digest]
        return True
