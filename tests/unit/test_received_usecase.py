"""The window and the gaps of ``ReceivedPerDay`` (the dashboard's chart), with a fake store."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime

import pytest

from xmrgate.core.received import ReceivedPerDay
from xmrgate.domain.errors import InvalidInput

# 2026-11-23 10:30:00 UTC
NOW = datetime(2026, 11, 23, 10, 30, tzinfo=UTC).timestamp()


def day_number(d: date) -> int:
    return (d - date(1970, 1, 1)).days


class FakeSums:
    """Remembers what it was asked; answers with the sums it was given."""

    def __init__(self, sums: dict[int, tuple[int, int]]) -> None:
        self.sums = sums
        self.asked: list[tuple[int, int]] = []

    async def daily_sums(self, since: int, utc_offset: int) -> dict[int, tuple[int, int]]:
        self.asked.append((since, utc_offset))
        return self.sums


def test_every_day_of_the_window_is_present_oldest_first() -> None:
    store = FakeSums({day_number(date(2026, 11, 21)): (5 * 10**12, 2)})
    days = asyncio.run(ReceivedPerDay(store, clock=lambda: NOW).last_days(3))
    assert [(d.day, d.amount, d.count) for d in days] == [
        (date(2026, 11, 21), 5 * 10**12, 2),
        (date(2026, 11, 22), 0, 0),
        (date(2026, 11, 23), 0, 0),
    ]
    # The window starts at midnight UTC of the first day.
    assert store.asked == [(int(datetime(2026, 11, 21, tzinfo=UTC).timestamp()), 0)]


@pytest.mark.parametrize(
    ("offset_minutes", "today", "first_midnight_utc"),
    [
        # UTC+14: 10:30 UTC is already 00:30 on the 24th; the 22nd began on the 21st, 10:00 UTC.
        (14 * 60, date(2026, 11, 24), datetime(2026, 11, 21, 10, tzinfo=UTC)),
        # UTC-11: 10:30 UTC is 23:30 the day before.
        (-11 * 60, date(2026, 11, 22), datetime(2026, 11, 20, 11, tzinfo=UTC)),
        # UTC+05:30 (minutes matter).
        (330, date(2026, 11, 23), datetime(2026, 11, 20, 18, 30, tzinfo=UTC)),
    ],
)
def test_days_follow_the_callers_time_zone(
    offset_minutes: int, today: date, first_midnight_utc: datetime
) -> None:
    store = FakeSums({})
    days = asyncio.run(ReceivedPerDay(store, clock=lambda: NOW).last_days(3, offset_minutes))
    assert days[-1].day == today
    assert len(days) == 3
    assert store.asked == [(int(first_midnight_utc.timestamp()), offset_minutes * 60)]


@pytest.mark.parametrize(("days", "offset"), [(0, 0), (367, 0), (30, 841), (30, -841)])
def test_out_of_range_is_invalid_input(days: int, offset: int) -> None:
    with pytest.raises(InvalidInput):
        asyncio.run(ReceivedPerDay(FakeSums({}), clock=lambda: NOW).last_days(days, offset))
