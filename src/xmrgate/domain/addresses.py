"""The shape of a Monero address, checked before any lookup."""

from __future__ import annotations

import re

BASE58 = re.compile(r"^[1-9A-HJ-NP-Za-km-z]{1,128}$")


def looks_like_address(value: str) -> bool:
    """Cheap shape check before a lookup: base58 and not absurdly long."""
    return bool(BASE58.match(value))
