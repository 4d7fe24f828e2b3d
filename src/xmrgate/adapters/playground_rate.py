"""The fixed playground rate as a rate source: no network, a constant per currency.

Only ``xmrgate dev`` configures it (``--rate-sources fixed-playground-rate``);
``xmrgate serve`` refuses to start with it (``runtime/cli.py``). It goes through the
same rate book as the real providers, so the playground's fiat prices, quotes,
``GET /rates`` and pages behave as in production, only the number is made up.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from xmrgate.core.rates import RateSourceMiss
from xmrgate.domain.playground_rate import PLAYGROUND_RATE_SOURCE, PLAYGROUND_RATES


class PlaygroundRateSource:
    """Answers :data:`PLAYGROUND_RATES` at once; a currency it has no rate for is a miss."""

    name = PLAYGROUND_RATE_SOURCE

    def __init__(self, rates: Mapping[str, Decimal] = PLAYGROUND_RATES) -> None:
        """``rates``: fiat per XMR by currency code (the playground's by default)."""
        self._rates = dict(rates)

    async def fetch(self, currency: str) -> Decimal:
        """The fixed price of one XMR in ``currency``; ``RateSourceMiss`` without one."""
        rate = self._rates.get(currency.upper())
        if rate is None:
            known = ", ".join(self._rates)
            raise RateSourceMiss(f"the fixed playground rate has no {currency} (only {known})")
        return rate
