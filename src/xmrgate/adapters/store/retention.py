"""Retention: delete what nobody needs any more after ``--retention`` (default 90 days).

- events that were delivered, given up (``failed``) or never had a callback, longer
  ago than that (so the feed, ``GET /events``, reaches back that far);
- idempotency keys past their expiry (their own, shorter, ``--idempotency-ttl``);
- transfers whose payment request no longer exists (the foreign key cascades on
  delete, so this only catches rows left by an older version or a manual edit with
  the foreign keys off). That sweep reads every stored transfer, a cost that grows
  with the whole history (250 ms at 1M transfers on PostgreSQL, holding SQLite's
  write lock meanwhile; ``bench/scale.py``), so it runs once per process:
  on the first pass after a start, which is also the first after an upgrade.

Kept for ever: payment requests, their transfers and pending events (a merchant may
still ask), and the payout journal (it records money that left).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, select

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.tables import events, idempotency_keys, payment_requests, transfers

# Feed-only events (no callback_url) age out with the delivered ones.
FINISHED = ("delivered", "failed", "no_callback")


@dataclass(frozen=True, slots=True)
class Pruned:
    """How many rows of each kind one pass deleted."""

    events: int
    idempotency_keys: int
    orphan_transfers: int


class RetentionStore:
    """Deletes finished events, expired keys and orphaned transfers."""

    def __init__(self, db: Database, retention: float) -> None:
        self._db = db
        self._retention = timedelta(seconds=retention)
        self._orphans_swept = False

    async def prune(self) -> Pruned:
        """One pass, in one transaction (the orphan sweep: only the first one)."""
        now = utcnow()
        cutoff = now - self._retention
        async with self._db.write() as conn:
            done = await conn.execute(
                delete(events).where(
                    events.c.status.in_(FINISHED),
                    events.c.created_at < cutoff,
                )
            )
            keys = await conn.execute(
                delete(idempotency_keys).where(idempotency_keys.c.expires_at < now)
            )
            orphans = 0
            if not self._orphans_swept:
                swept = await conn.execute(
                    delete(transfers).where(
                        transfers.c.request_id.not_in(select(payment_requests.c.id))
                    )
                )
                orphans = int(swept.rowcount or 0)
        self._orphans_swept = True  # committed
        return Pruned(
            events=int(done.rowcount or 0),
            idempotency_keys=int(keys.rowcount or 0),
            orphan_transfers=orphans,
        )
