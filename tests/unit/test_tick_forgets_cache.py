"""A sync tick of this process forgets the read cache at once (``runtime/container.py``).

On PostgreSQL ``GET /receive`` and the Greenfield announcer read through a cache that a
trigger's NOTIFY empties a few ms after a write. The tick wakes the announcer right after
it commits; were the cache still holding the state before the tick, the announcer would
see nothing new and wait its next round (5 s): measured as the 5.3 s outlier of
``python -m bench.greenfield_latency`` (block -> InvoiceSettled webhook)."""

from __future__ import annotations

from datetime import UTC, datetime

from xmrgate.config import Settings
from xmrgate.domain.records import PaymentRequest, PaymentStatus
from xmrgate.runtime.container import Services

NO_WALLET = "http://127.0.0.1:9/json_rpc"
ADDRESS = "8" + "a" * 94


def test_a_tick_that_changed_something_empties_the_cache_before_waking_anyone() -> None:
    settings = Settings(postgresql="postgresql://postgres@127.0.0.1:9/none", rpc_address=NO_WALLET)
    services = Services.build(settings)  # nothing connects before start
    cache = services.reads.cache
    assert cache is not None  # PostgreSQL: cached
    cache.enable(True)
    request = PaymentRequest(
        id=1,
        address=ADDRESS,
        subaddr_index=1,
        amount=1,
        description="",
        callback_url=None,
        return_url=None,
        created_at=datetime.now(UTC),
        created_height=None,
    )
    cache.put(ADDRESS, PaymentStatus(request, [], 100), cache.generation)
    assert cache.get(ADDRESS) is not None
    services.main.sync._on_events()  # what the tick calls once it committed a change
    assert cache.get(ADDRESS) is None
