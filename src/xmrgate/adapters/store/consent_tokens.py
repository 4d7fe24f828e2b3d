"""The consent page's single-use tokens in the database (implements
``core.consent.ConsentTokens``; table ``consent_tokens``, migration 0017).

Using a token is ONE statement, ``DELETE ... WHERE digest AND binding AND unexpired``:
whichever processes race on one token, the database deletes its row once, and only the
statement that deleted it (rowcount 1) approves. Expired rows are swept when a token is
added, so the table holds only the consents pages are open for.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, insert

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.tables import consent_tokens

_T = consent_tokens.c


class SqlConsentTokens:
    """The ``consent_tokens`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, digest: bytes, binding: bytes, expires_at: datetime) -> None:
        """Keep a new token's digest; sweep the expired ones in the same transaction."""
        async with self._db.write() as conn:
            await conn.execute(delete(consent_tokens).where(_T.expires_at <= utcnow()))
            await conn.execute(
                insert(consent_tokens).values(
                    digest=digest.hex(), binding=binding.hex(), expires_at=expires_at
                )
            )

    async def take(self, digest: bytes, binding: bytes, now: datetime) -> bool:
        """Delete the token's row if bound to ``binding`` and unexpired; True when this
        call deleted it (a second, concurrent or later, finds nothing)."""
        async with self._db.write(single_statement=True) as conn:
            result = await conn.execute(
                delete(consent_tokens).where(
                    _T.digest == digest.hex(),
                    _T.binding == binding.hex(),
                    _T.expires_at > now,
                )
            )
        return result.rowcount == 1
