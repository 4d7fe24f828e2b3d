"""Piconero to XMR text, for display only.

Integer arithmetic only: a float has 53 bits of mantissa and cannot hold every
uint64 amount of piconero, so ``1e-12 * amount`` would print wrong digits.
"""

from __future__ import annotations

PICONERO_PER_XMR = 10**12
# Monero amounts are uint64 in the wallet; our columns are signed 64-bit.
MAX_AMOUNT = 2**63 - 1
DECIMALS = 12


def piconero_to_xmr(amount: int) -> str:
    """``amount`` piconero as XMR: up to 12 decimals, trailing zeros trimmed.

    ``1234500000000`` -> ``"1.2345"``, ``10**12`` -> ``"1"``, ``1`` -> ``"0.000000000001"``.
    Raises ``TypeError`` for anything but an ``int`` (``bool`` included) and
    ``ValueError`` for a negative amount.
    """
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise TypeError(f"amount must be an int of piconero, not {type(amount).__name__}")
    if amount < 0:
        raise ValueError("amount must not be negative")
    whole, fraction = divmod(amount, PICONERO_PER_XMR)
    if fraction == 0:
        return str(whole)
    return f"{whole}.{fraction:0{DECIMALS}d}".rstrip("0")
