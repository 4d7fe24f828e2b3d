"""What the checkout page shows about a payment request, from stored state only.

The same pure function feeds the server-rendered page and ``status.json``, so the
first paint and every poll agree. Totals come from ``ledger.coverage`` and the
status from ``invoice.status_of``: the page and ``GET /receive/:address`` can never
disagree about what was received, what is due, or whether the request expired.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from xmrgate.domain.invoice import Invoice, InvoiceStatus, due, is_complete, status_of
from xmrgate.domain.ledger import SPENDABLE_AGE, Transfer, counts_toward_total, coverage
from xmrgate.domain.money import piconero_to_xmr
from xmrgate.domain.payloads import optional_rfc3339_unix

# waiting, seen (partial, or paid and confirming), paid; expired and late (paid after
# the expiry) only for requests made with expires_in.
State = Literal["waiting", "seen", "paid", "expired", "late"]

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
    status: InvoiceStatus = InvoiceStatus.WAITING
    expires_at: float | None = None
    # Seconds until expires_at while the buyer can still pay in time, else None.
    seconds_left: int | None = None

    @property
    def overpaid(self) -> int:
        """How much more than asked arrived (0 for requests of any amount)."""
        return max(self.received - self.expected, 0) if self.expected > 0 else 0

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
            "status": self.status.value,
            "expires_at": optional_rfc3339_unix(self.expires_at),
            "seconds_left": self.seconds_left,
            "overpaid": self.overpaid,
            "overpaid_xmr": piconero_to_xmr(self.overpaid),
        }


def checkout_status(
    expected: int,
    transfers: Iterable[Transfer],
    chain_height: int,
    *,
    invoice: Invoice | None = None,
    now: float = 0.0,
) -> CheckoutStatus:
    """The page's state, with totals and the least-confirmed transfer's confirmations.

    ``paid`` follows ``complete`` (unlocked >= expected - tolerance), except that a
    request for any amount (``expected == 0``) is paid only once something unlocked:
    a donation page must not say "paid" before anyone paid. ``invoice`` (terms and
    recorded status, ``domain/invoice.py``) adds ``expired`` and ``late``; ``now`` is
    the clock the expiry is read against.
    """
    terms = invoice or Invoice(expected)
    transfers = list(transfers)
    counted = [t for t in transfers if counts_toward_total(t)]
    cov = coverage(expected, counted)
    confirmations = min((t.confirmations(chain_height) for t in counted), default=0)
    complete = is_complete(terms, cov.unlocked)
    status = status_of(terms, transfers, now)
    paid = complete and (expected > 0 or cov.unlocked > 0)
    state: State
    if status is InvoiceStatus.PAID_LATE:
        state = "late"
    elif status is InvoiceStatus.EXPIRED:
        state = "expired"
    else:
        state = "paid" if paid else "seen" if cov.total > 0 else "waiting"
    open_now = status in (InvoiceStatus.WAITING, InvoiceStatus.PARTIAL)
    left = None
    if terms.expires_at is not None and open_now:
        left = max(int(terms.expires_at - now), 0)
    return CheckoutStatus(
        state=state,
        expected=expected,
        received=cov.total,
        unlocked=cov.unlocked,
        due=due(terms, cov.total),
        confirmations=confirmations,
        complete=complete,
        status=status,
        expires_at=terms.expires_at,
        seconds_left=left,
    )
