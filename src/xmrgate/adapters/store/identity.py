"""The wallet this database belongs to (implements ``core.wallet_status.IdentityStore``)."""

from __future__ import annotations

from sqlalchemy import insert, select

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.tables import wallet_identity
from xmrgate.domain.errors import AlreadyExists

IDENTITY_ROW = 1


class SqlIdentityStore:
    """One row: the primary address recorded at the first start."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def remembered(self) -> str | None:
        """The recorded primary address, or None before the first start."""
        async with self._db.read() as conn:
            value = (
                await conn.execute(
                    select(wallet_identity.c.primary_address).where(
                        wallet_identity.c.id == IDENTITY_ROW
                    )
                )
            ).scalar()
        return None if value is None else str(value)

    async def remember(self, primary_address: str) -> str:
        """Record ``primary_address`` unless a first start (maybe another worker) did."""
        try:
            async with self._db.write() as conn:
                await conn.execute(
                    insert(wallet_identity).values(
                        id=IDENTITY_ROW, primary_address=primary_address, recorded_at=utcnow()
                    )
                )
        except AlreadyExists:
            pass  # another process recorded it first: that one is the truth
        recorded = await self.remembered()
        return recorded if recorded is not None else primary_address
