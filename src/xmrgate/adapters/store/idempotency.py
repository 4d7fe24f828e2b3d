"""Idempotency keys: the first answer to a keyed request, kept for replay.

A key is claimed by inserting its row (``running``); the primary key makes the
claim atomic across requests and processes. The answer is stored when the
request ends; a repeat gets the stored answer without running again.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, insert, select, update

from xmrgate.adapters.store.db import Database, as_utc, utcnow
from xmrgate.adapters.store.tables import idempotency_keys
from xmrgate.domain.errors import AlreadyExists
from xmrgate.domain.records import StoredAnswer

RUNNING = "running"
DONE = "done"


class IdempotencyStore:
    """Claim, complete and release idempotency keys."""

    def __init__(self, db: Database, ttl: float) -> None:
        self._db = db
        self._ttl = ttl

    async def claim(self, endpoint: str, key: str, request_hash: str) -> StoredAnswer | None:
        """Claim ``key``; None when it is ours now, else what the earlier request left."""
        now = utcnow()
        try:
            async with self._db.write() as conn:
                # Expired keys are free again.
                await conn.execute(
                    delete(idempotency_keys).where(
                        idempotency_keys.c.endpoint == endpoint,
                        idempotency_keys.c.key == key,
                        idempotency_keys.c.expires_at < now,
                    )
                )
                await conn.execute(
                    insert(idempotency_keys).values(
                        endpoint=endpoint,
                        key=key,
                        request_hash=request_hash,
                        state=RUNNING,
                        created_at=now,
                        expires_at=now + timedelta(seconds=self._ttl),
                    )
                )
            return None
        except AlreadyExists:  # someone holds the key
            pass
        async with self._db.read() as conn:
            row = (
                (
                    await conn.execute(
                        select(idempotency_keys).where(
                            idempotency_keys.c.endpoint == endpoint,
                            idempotency_keys.c.key == key,
                        )
                    )
                )
                .mappings()
                .first()
            )
        if row is None:  # released in between: let the caller try again
            return await self.claim(endpoint, key, request_hash)
        return StoredAnswer(
            request_hash=row["request_hash"],
            state=row["state"],
            status=row["response_status"],
            body=row["response_body"],
            created_at=as_utc(row["created_at"]),
        )

    async def complete(self, endpoint: str, key: str, status: int, body: str) -> None:
        """Store the final answer of a claimed key."""
        async with self._db.write() as conn:
            await conn.execute(
                update(idempotency_keys)
                .where(idempotency_keys.c.endpoint == endpoint, idempotency_keys.c.key == key)
                .values(state=DONE, response_status=status, response_body=body)
            )

    async def release(self, endpoint: str, key: str) -> None:
        """Forget a claim whose request provably did nothing, so a retry may run."""
        async with self._db.write() as conn:
            await conn.execute(
                delete(idempotency_keys).where(
                    idempotency_keys.c.endpoint == endpoint,
                    idempotency_keys.c.key == key,
                    idempotency_keys.c.state == RUNNING,
                )
            )
