"""The payout journal: every ``POST /transfer`` is recorded before the wallet is asked
and again after it answered, so "did this payout go out?" always has an answer.

States: ``requested`` (wallet not answered yet, or the process died meanwhile),
``sent`` (tx hashes known), ``failed`` (the wallet refused; nothing left the
wallet), ``unknown`` (the wallet call timed out or broke off after it was sent:
check the wallet before paying again).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import insert, select, update

from xmrgate.adapters.store.db import Database, as_utc, utcnow
from xmrgate.adapters.store.tables import payouts
from xmrgate.domain.payloads import rfc3339
from xmrgate.domain.stores import DEFAULT_STORE

REQUESTED = "requested"
SENT = "sent"
FAILED = "failed"
UNKNOWN = "unknown"


class PayoutStore:
    """Writes and reads of the payout journal."""

    def __init__(self, db: Database, store_id: str = DEFAULT_STORE) -> None:
        self._db = db
        # Each store has its own journal: its payouts, from its own account.
        self._store_id = store_id

    async def record_requested(
        self,
        destinations: list[dict[str, Any]],
        *,
        requested_by: str | None,
        idempotency_key: str | None,
    ) -> int:
        """Journal a payout before the wallet sees it; returns its id."""
        now = utcnow()
        async with self._db.write() as conn:
            result = await conn.execute(
                insert(payouts).values(
                    state=REQUESTED,
                    destinations=json.dumps(destinations),
                    amount=sum(int(d["amount"]) for d in destinations),
                    requested_by=requested_by,
                    idempotency_key=idempotency_key,
                    created_at=now,
                    updated_at=now,
                    store_id=self._store_id,
                )
            )
            (payout_id,) = result.inserted_primary_key or (0,)
            return int(payout_id)

    async def record_outcome(
        self,
        payout_id: int,
        state: str,
        *,
        fee: int | None = None,
        tx_hash_list: list[str] | None = None,
        error: str | None = None,
    ) -> None:
        """Journal what the wallet answered."""
        async with self._db.write() as conn:
            await conn.execute(
                update(payouts)
                .where(payouts.c.id == payout_id)
                .values(
                    state=state,
                    fee=fee,
                    tx_hash_list=json.dumps(tx_hash_list) if tx_hash_list is not None else None,
                    error=error,
                    updated_at=utcnow(),
                )
            )

    async def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest payouts, newest first, as JSON-ready dicts."""
        async with self._db.read() as conn:
            rows = await conn.execute(
                select(payouts)
                .where(payouts.c.store_id == self._store_id)
                .order_by(payouts.c.id.desc())
                .limit(limit)
            )
            return [
                {
                    "id": r["id"],
                    "state": r["state"],
                    "amount": r["amount"],
                    "fee": r["fee"],
                    "destinations": json.loads(r["destinations"]),
                    "tx_hash_list": json.loads(r["tx_hash_list"]) if r["tx_hash_list"] else [],
                    "error": r["error"],
                    "requested_by": r["requested_by"],
                    "created_at": rfc3339(as_utc(r["created_at"])),
                    "updated_at": rfc3339(as_utc(r["updated_at"])),
                }
                for r in rows.mappings()
            ]
