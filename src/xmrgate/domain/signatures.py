"""The callback signature: ``t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``."""

from __future__ import annotations

import hashlib
import hmac
import time


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """The signature header value: ``t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``."""
    mac = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(
    secret: bytes, header: str, body: bytes, *, tolerance: float = 300, now: float | None = None
) -> bool:
    """Check a signature header as a merchant would (constant-time, with a freshness window)."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        timestamp = int(parts["t"])
        given = parts["v1"]
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, given)
