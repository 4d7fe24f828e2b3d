"""``speedPolicy``: how many confirmations a payment needs to count as settled (§2.1).

BTCPay's Monero plugin asks HighSpeed for 0
confirmations (seen in the pool), MediumSpeed 1, LowMediumSpeed 2, LowSpeed 6. A null
policy on an invoice means the store's default, which is MediumSpeed unless the store
sets another, as BTCPay's stores do.
"""

from __future__ import annotations

from enum import StrEnum

from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.stores import DEFAULT_STORE_SPEED_POLICY


class SpeedPolicy(StrEnum):
    """BTCPay's names, as sent and answered."""

    HIGH = "HighSpeed"
    MEDIUM = "MediumSpeed"
    LOW_MEDIUM = "LowMediumSpeed"
    LOW = "LowSpeed"


CONFIRMATIONS: dict[SpeedPolicy, int] = {
    SpeedPolicy.HIGH: 0,
    SpeedPolicy.MEDIUM: 1,
    SpeedPolicy.LOW_MEDIUM: 2,
    SpeedPolicy.LOW: 6,
}
# A store's default unless it sets another (``stores.speed_policy``): MediumSpeed.
DEFAULT_SPEED_POLICY = SpeedPolicy(DEFAULT_STORE_SPEED_POLICY)
# Json.NET's enum converter matches names case-insensitively; so do we.
_BY_LOWER = {p.value.lower(): p for p in SpeedPolicy}
_NAMES = tuple(p.value for p in SpeedPolicy)


def parse_speed_policy(value: object, path: str = "checkout.speedPolicy") -> SpeedPolicy | None:
    """``value`` as a policy; ``None`` (JSON null, which PHPLIB sends) stays ``None``: the
    store's default applies. Anything else, a number too, is a ``FieldError`` at ``path``.
    """
    if value is None:
        return None
    if isinstance(value, str) and (policy := _BY_LOWER.get(value.strip().lower())):
        return policy
    names = ", ".join(p.value for p in SpeedPolicy)
    raise FieldError(path, f"Unknown speed policy {value!r}: use one of {names} or null", value)


def check_store_speed_policy(value: object) -> SpeedPolicy:
    """A store's default speed policy (``/stores``): one of BTCPay's four names spelled
    exactly as BTCPay spells them (what it is stored and answered as; an invoice's
    ``speedPolicy`` is read in any case, as Json.NET reads it). Anything else, null too
    (every store has one), is InvalidInput (400)."""
    if isinstance(value, str) and value in _NAMES:
        return SpeedPolicy(value)
    raise InvalidInput(f"speed_policy must be one of {', '.join(_NAMES)}, spelled exactly so")


def confirmations_for(
    policy: SpeedPolicy | None, store_default: SpeedPolicy = DEFAULT_SPEED_POLICY
) -> int:
    """The confirmations a payment needs under ``policy`` (``None``: ``store_default``)."""
    return CONFIRMATIONS[store_default if policy is None else policy]


def policy_for_confirmations(confirmations: int) -> SpeedPolicy:
    """The policy to report for a store that waits for ``confirmations`` blocks.

    Exact when the number is one of the four; otherwise the strictest policy that asks
    for no more than the store waits for (3 -> LowMediumSpeed): a merchant reading the
    policy must never believe in more confirmations than payments really get.
    """
    if confirmations < 0:
        raise ValueError("confirmations must not be negative")
    fitting = [p for p, n in CONFIRMATIONS.items() if n <= confirmations]
    return max(fitting, key=CONFIRMATIONS.__getitem__)
