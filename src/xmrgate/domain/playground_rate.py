"""The fixed playground rate: ``xmrgate dev``'s offline exchange rate (docs/pricing.md).

The playground prices fiat without reaching any provider, so fiat prices can be tried
offline. Its rate is a constant, not a market price; its source's name says so wherever
a rate's sources are shown (``GET /rates``, a quote's ``sources``, the dashboard) and the
checkout adds :data:`PLAYGROUND_RATE_NOTE`. ``xmrgate serve`` refuses to start with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

#: The source's name in ``--rate-sources``, ``GET /rates`` and every quote's ``sources``.
PLAYGROUND_RATE_SOURCE = "fixed-playground-rate"
#: What a page says beside a rate made from it.
PLAYGROUND_RATE_NOTE = "fixed playground rate, not a market price"
#: Fiat per XMR. Round numbers, so a price's XMR amount is easy to check by hand
#: (12.50 EUR is 0.0625 XMR), and far enough from the market not to pass for it.
PLAYGROUND_RATES: Mapping[str, Decimal] = {"EUR": Decimal("200"), "USD": Decimal("250")}


def uses_playground_rate(sources: Iterable[str]) -> bool:
    """Whether a rate made from ``sources`` includes the fixed playground rate."""
    return PLAYGROUND_RATE_SOURCE in sources


def playground_rate_text() -> str:
    """``1 XMR = 200 EUR = 250 USD``: the fixed rates, for the playground's banner."""
    parts = " = ".join(f"{rate} {code}" for code, rate in PLAYGROUND_RATES.items())
    return f"1 XMR = {parts}"
