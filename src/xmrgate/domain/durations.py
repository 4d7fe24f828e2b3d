"""Parse Go-style durations ("5s", "1m30s", "250ms", "72h") as MoneroPay's flags take them."""

from __future__ import annotations

import math
import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str | float | int) -> float:
    """Return seconds for a Go duration string; a bare number means seconds.

    Raises ValueError for anything else, including negative durations.
    """
    if isinstance(text, int | float):
        if not math.isfinite(text) or text < 0:
            raise ValueError("duration must not be negative")
        return float(text)
    value = text.strip()
    if not value:
        raise ValueError("empty duration")
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"invalid duration {text!r}")
        return seconds
    pos = 0
    total = 0.0
    for match in _PART.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(value) or pos == 0:
        raise ValueError(f"invalid duration {text!r} (use e.g. 5s, 500ms, 1m30s, 72h)")
    return total


def format_duration(seconds: float) -> str:
    """Render seconds compactly for help texts and logs (5s, 1h, 72h, 0.5s)."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:g}s"
