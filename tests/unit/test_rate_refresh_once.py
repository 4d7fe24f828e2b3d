"""The rate book's refresh changes its quotes once (core/rates.py: ``refresh_once``).

The leader of a cluster quotes from its own book, the followers from the answers it
stores in one transaction. Recorded one by one as they arrived, the leader's answers made
it quote a mix for as long as the slowest source took (the fast sources' new answers
beside the slow one's old): a third rate no follower ever quoted, which
``tests/integration/test_rates_cluster.py`` caught in a burst of requests.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from decimal import Decimal

from testsupport.fake_rates import PROVIDERS, FakeRates, slow
from xmrgate.adapters.rate_sources import build_sources, rate_client
from xmrgate.core.rates import RateBook

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def test_a_quote_during_a_refresh_is_the_old_rate_or_the_new_never_a_mix() -> None:
    with FakeRates() as fake, asyncio.Runner() as runner:
        client = rate_client(None, 5.0)
        book = RateBook(
            build_sources(PROVIDERS, fake.bases, client=client),
            ("EUR",),
            refresh=60.0,
            max_age=300.0,
            max_spread=0.05,
            min_sources=1,
            timeout=None,
            now=lambda: NOW,
        )
        for provider, value in zip(PROVIDERS, ("150", "151", "152"), strict=True):
            fake.set(provider, "EUR", value)

        async def quotes_during_a_refresh() -> list[Decimal]:
            await book.refresh_once()
            # Two sources answer at once, the third 0.3 s later: with the two new answers
            # and the old third, the median would be 155.
            fake.set(PROVIDERS[0], "EUR", "155")
            fake.set(PROVIDERS[1], "EUR", "156")
            fake.set(PROVIDERS[2], "EUR", slow(0.3, "157"))
            seen = [book.current("EUR").rate]
            refresh = asyncio.create_task(book.refresh_once())
            while not refresh.done():
                seen.append(book.current("EUR").rate)
                await asyncio.sleep(0.005)
            await refresh
            seen.append(book.current("EUR").rate)
            await client.aclose()
            return seen

        seen = runner.run(quotes_during_a_refresh())
    assert len(seen) > 20  # quoted all through the slow source's 0.3 s
    assert seen[0] == Decimal("151") and seen[-1] == Decimal("156")
    assert set(seen) == {Decimal("151"), Decimal("156")}, sorted(set(seen))
