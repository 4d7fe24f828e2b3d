"""The payout journal as ``GET /payouts`` lists it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.payouts import SENT, PayoutStore

# What every other endpoint writes (domain/payloads.py rfc3339): UTC with a Z.
RFC3339_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def test_recent_payouts_have_z_timestamps(on_database: Any) -> None:
    """``created_at``/``updated_at`` end in ``Z`` (not ``+00:00``) and are the right instant."""

    async def scenario(db: Database) -> list[dict[str, Any]]:
        store = PayoutStore(db)
        payout_id = await store.record_requested(
            [{"address": "8x", "amount": 5}], requested_by="key-1", idempotency_key=None
        )
        await store.record_outcome(payout_id, SENT, fee=1, tx_hash_list=["ab" * 32])
        return await store.recent()

    before = datetime.now(UTC)
    [entry] = on_database(scenario)
    after = datetime.now(UTC)
    for field in ("created_at", "updated_at"):
        assert RFC3339_Z.match(entry[field]), entry[field]
        at = datetime.fromisoformat(entry[field])
        assert before - timedelta(seconds=1) <= at <= after + timedelta(seconds=1)
    assert entry["state"] == SENT and entry["tx_hash_list"] == ["ab" * 32]
