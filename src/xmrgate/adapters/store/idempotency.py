"""Idempotency keys: the first answer to a keyed request, kept for replay.

A key is claimed by inserting its row (``running``); the primary key makes the claim
atomic across requests and processes. The row names its owner (the process working on
it) and holds until ``lease_until``, which that process renews while it works; an
expired lease can be taken over by another process in one conditional UPDATE (so two
cannot both take it). The answer is stored when the request ends; a repeat gets the
stored answer without running again.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import ColumnElement, and_, delete, insert, or_, select, update

from xmrgate.adapters.store.db import Database, as_utc, utcnow
from xmrgate.adapters.store.tables import idempotency_keys
from xmrgate.domain.errors import AlreadyExists
from xmrgate.domain.records import StoredAnswer

RUNNING = "running"
DONE = "done"


class IdempotencyStore:
    """Claim, renew, take over, complete and release idempotency keys."""

    def __init__(self, db: Database, ttl: float, lease: float = 10.0) -> None:
        self._db = db
        self._ttl = ttl
        self._lease = lease

    @property
    def lease(self) -> float:
        """Seconds a claim holds without being renewed."""
        return self._lease

    def _key(self, endpoint: str, key: str) -> ColumnElement[bool]:
        return and_(idempotency_keys.c.endpoint == endpoint, idempotency_keys.c.key == key)

    async def claim(
        self, endpoint: str, key: str, request_hash: str, *, owner: str = "", ref: str = ""
    ) -> StoredAnswer | None:
        """Claim ``key`` for ``owner``; None when it is ours now, else what it holds."""
        now = utcnow()
        try:
            async with self._db.write() as conn:
                # Expired keys are free again.
                await conn.execute(
                    delete(idempotency_keys).where(
                        self._key(endpoint, key), idempotency_keys.c.expires_at < now
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
                        owner=owner or None,
                        lease_until=now + timedelta(seconds=self._lease),
                        ref=ref or None,
                    )
                )
            return None
        except AlreadyExists:  # someone holds the key
            pass
        async with self._db.read() as conn:
            row = (
                (await conn.execute(select(idempotency_keys).where(self._key(endpoint, key))))
                .mappings()
                .first()
            )
        if row is None:  # released in between: let the caller try again
            return await self.claim(endpoint, key, request_hash, owner=owner, ref=ref)
        lease_until = row["lease_until"]
        return StoredAnswer(
            request_hash=row["request_hash"],
            state=row["state"],
            status=row["response_status"],
            body=row["response_body"],
            created_at=as_utc(row["created_at"]),
            owner=row["owner"],
            lease_until=None if lease_until is None else as_utc(lease_until),
            ref=row["ref"],
        )

    async def renew(self, endpoint: str, key: str, owner: str) -> bool:
        """Extend ``owner``'s lease on a running claim; False when it is no longer its."""
        async with self._db.write() as conn:
            renewed = await conn.execute(
                update(idempotency_keys)
                .where(
                    self._key(endpoint, key),
                    idempotency_keys.c.state == RUNNING,
                    idempotency_keys.c.owner == owner,
                )
                .values(lease_until=utcnow() + timedelta(seconds=self._lease))
            )
            return bool(renewed.rowcount)

    async def take_over(self, endpoint: str, key: str, owner: str) -> str | None:
        """Make a running claim whose lease expired ``owner``'s; its ref, or None when the
        lease is live or another process took it first (one conditional UPDATE)."""
        now = utcnow()
        lease_until = idempotency_keys.c.lease_until
        expired = or_(lease_until.is_(None), lease_until < now)
        async with self._db.write() as conn:
            taken = await conn.execute(
                update(idempotency_keys)
                .where(self._key(endpoint, key), idempotency_keys.c.state == RUNNING, expired)
                .values(owner=owner, lease_until=now + timedelta(seconds=self._lease))
            )
            if not taken.rowcount:
                return None
            ref = (
                await conn.execute(select(idempotency_keys.c.ref).where(self._key(endpoint, key)))
            ).scalar()
            if ref is None:
                # A claim made before leases: give it a reference now (nothing recorded one).
                ref = str(uuid.uuid4())
                await conn.execute(
                    update(idempotency_keys).where(self._key(endpoint, key)).values(ref=ref)
                )
            return str(ref)

    async def complete(self, endpoint: str, key: str, status: int, body: str) -> None:
        """Store the final answer of a claimed key."""
        async with self._db.write() as conn:
            await conn.execute(
                update(idempotency_keys)
                .where(self._key(endpoint, key))
                .values(state=DONE, response_status=status, response_body=body, lease_until=None)
            )

    async def release(self, endpoint: str, key: str) -> None:
        """Forget a claim whose request provably did nothing, so a retry may run."""
        async with self._db.write() as conn:
            await conn.execute(
                delete(idempotency_keys).where(
                    self._key(endpoint, key), idempotency_keys.c.state == RUNNING
                )
            )
