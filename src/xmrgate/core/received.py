"""XMR received per day: the figures behind the dashboard's chart (``GET /received/daily``).

The store sums mined transfers per day in one indexed statement; this use case picks
the window (the last ``days`` days up to today, in the caller's time zone) and fills
the days without a transfer with zeros, so the chart has one bar per day.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Protocol

from xmrgate.domain.errors import InvalidInput

SECONDS_PER_DAY = 86_400
MAX_DAYS = 366
# UTC-12:00 .. UTC+14:00 are the offsets in use; minutes, as JavaScript's Date gives them.
MAX_OFFSET_MINUTES = 14 * 60
EPOCH = date(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class DaySum:
    """What arrived on one day: piconero in mined transfers, and how many transfers."""

    day: date
    amount: int
    count: int


class DailySums(Protocol):
    """The one-statement read of daily sums (``adapters/store/received.py``)."""

    async def daily_sums(self, since: int, utc_offset: int) -> dict[int, tuple[int, int]]:
        """Mined transfers with a block time >= ``since`` (Unix seconds), summed per day.

        Keys are day numbers (days since 1970-01-01 in the zone ``utc_offset`` seconds
        east of UTC); values are (piconero, transfers).
        """
        ...


class ReceivedPerDay:
    """The daily sums of the last days, every day present."""

    def __init__(self, store: DailySums, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    async def last_days(self, days: int, utc_offset_minutes: int = 0) -> list[DaySum]:
        """``days`` days ending today, oldest first; days run midnight to midnight in the
        zone ``utc_offset_minutes`` east of UTC."""
        if not 1 <= days <= MAX_DAYS:
            raise InvalidInput(f"days must be between 1 and {MAX_DAYS}")
        if not -MAX_OFFSET_MINUTES <= utc_offset_minutes <= MAX_OFFSET_MINUTES:
            raise InvalidInput(
                f"utc_offset must be between -{MAX_OFFSET_MINUTES} and {MAX_OFFSET_MINUTES} minutes"
            )
        offset = utc_offset_minutes * 60
        today = (int(self._clock()) + offset) // SECONDS_PER_DAY
        first = today - days + 1
        sums = await self._store.daily_sums(first * SECONDS_PER_DAY - offset, offset)
        return [
            DaySum(EPOCH + timedelta(days=n), *sums.get(n, (0, 0))) for n in range(first, today + 1)
        ]
