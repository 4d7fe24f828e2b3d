"""What the checkout page shows about a payment request, from stored state only.

The same pure function feeds the server-rendered page and ``status.json``, so the
first paint and every poll agree. Totals come from ``ledger.coverage``: the page
and ``GET /receive/:address`` can never disagree about what was received.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from xmrgate.checkout.money import piconero_to_xmr
from xmrgate.ledger import SPENDABLE_AGE, Transfer, counts_toward_total, coverage

State = Literal["waiting", "seen", "paid"]

REQUIRED_CONFIRMATIONS = SPENDABLE_AGE


@dataclass(frozen=True, slots=True)
class CheckoutStatus:
    """The state of one payment request as the buyer sees it."""

    state: State
    expected: int
    received: int
    unlocked: int
    due: int
    confirmations: int
    complete: bool

    def to_json(self) -> dict[str, Any]:
        """The body of ``GET /pay/{address}/status.json``.

        Piconero stay integers; the ``*_xmr`` strings are for display (a JS number
        cannot hold every uint64 exactly, so the page never does arithmetic on them).
        """
        return {
            "state": self.state,
            "expected": self.expected,
            "received": self.received,
            "unlocked": self.unlocked,
            "due": self.due,
            "expected_xmr": piconero_to_xmr(self.expected),
            "received_xmr": piconero_to_xmr(self.received),
            "unlocked_xmr": piconero_to_xmr(self.unlocked),
            "due_xmr": piconero_to_xmr(self.due),
            "confirmations": self.confirmations,
            "required_confirmations": REQUIRED_CONFIRMATIONS,
            "complete": self.complete,
        }


def checkout_status(
    expected: int, transfers: Iterable[Transfer], chain_height: int
) -> CheckoutStatus:
    """Waiting, seen or paid, with totals and the least-confirmed transfer's confirmations.

    ``paid`` follows the spec's ``complete`` (unlocked >= expected), except that a
    request for any amount (``expected == 0``) is paid only once something unlocked:
    a donation page must not say "paid" before anyone paid.
    """
    counted = [t for t in transfers if counts_toward_total(t)]
    cov = coverage(expected, counted)
    confirmations = min((t.confirmations(chain_height) for t in counted), default=0)
    paid = cov.complete and (expected > 0 or cov.unlocked > 0)
    state: State = "paid" if paid else "seen" if cov.total > 0 else "waiting"
    return CheckoutStatus(
        state=state,
        expected=expected,
        received=cov.total,
        unlocked=cov.unlocked,
        due=max(expected - cov.total, 0),
        confirmations=confirmations,
        complete=cov.complete,
    )
