"""The housekeeping's pruning of unpaid payment-link requests (``runtime/supervisor.py``):
batches until one comes back short, with the cut-off ``--link-prune-after`` ago. What is
deleted (and never: a request with a transfer, a store's highest index) is shown on both
databases in ``tests/db/test_link_store.py``."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from xmrgate.runtime.supervisor import LINK_PRUNE_BATCH, Supervisor


class Pruner:
    """Answers the given counts, one per call, and keeps what it was asked."""

    def __init__(self, *counts: int) -> None:
        self.counts = list(counts)
        self.asked: list[tuple[datetime, int]] = []

    async def prune_unpaid(self, before: datetime, limit: int) -> int:
        self.asked.append((before, limit))
        return self.counts.pop(0)


def test_unpaid_link_requests_are_pruned_in_batches_past_the_grace() -> None:
    pruner = Pruner(LINK_PRUNE_BATCH, LINK_PRUNE_BATCH, 3)
    services: Any = SimpleNamespace(
        settings=SimpleNamespace(link_prune_after=3600.0), link_requests=pruner
    )
    total = asyncio.run(Supervisor(services)._prune_link_requests())
    assert total == 2 * LINK_PRUNE_BATCH + 3
    assert len(pruner.asked) == 3
    expected = datetime.now(UTC) - timedelta(hours=1)
    for before, limit in pruner.asked:
        assert limit == LINK_PRUNE_BATCH
        assert abs((before - expected).total_seconds()) < 5
