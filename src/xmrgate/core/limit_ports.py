"""What the public pages' flood limits need from storage when several processes or hosts
share one database (``adapters/store/flood_windows.py``).

The limits themselves (how many, per what) are the pages' (``web/limits.py``); a counter
only counts, for the whole cluster, and says how long a refused key must wait.
"""

from __future__ import annotations

from typing import Protocol


class WindowCounter(Protocol):
    """Attempts per (limiter, key) in windows of ``window`` seconds, shared by every
    process that uses the same database."""

    async def hit(self, limiter: str, key: str, limit: int, window: float) -> int:
        """Count an attempt of ``key`` under ``limiter``: 0 when it is within ``limit``,
        else the seconds to wait (>= 1). DatabaseUnavailable (or another XmrgateError)
        when it cannot count: the caller decides whether that refuses the attempt."""
        ...
