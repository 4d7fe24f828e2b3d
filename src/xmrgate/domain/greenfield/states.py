"""BTCPay's invoice ``status`` and ``additionalStatus``, derived from our states (§2.1, §2.2).

Our request has one status (``invoice.InvoiceStatus``: waiting, partial, paid, complete,
expired, paid_late), decided by our ledger; Greenfield has two fields and its own order
(BTCPay's ``InvoiceWatcher.UpdateInvoice``). The mapping, in words:

- our status says *when* the money came: open (waiting, partial), paid in time (paid,
  complete) or after the expiry (expired, paid_late);
- the amounts say the rest: PaidPartial (something, not enough), PaidOver (more than the
  amount asked), and Settled once the payments that have the confirmations the speed
  policy asks for (``settled``) cover what is due (``expected - tolerance``);
- Processing past the monitoring deadline without being settled becomes Invalid;
- Settled, Invalid and Expired are final for everything but the merchant's mark, as in
  BTCPay: an invoice that expired stays Expired (PaidLate when the money comes anyway).
  ``previous`` (the state last reported) carries that; without it the state is derived
  from the facts alone;
- a merchant's mark (``POST .../status``) wins: Settled or Invalid, additionalStatus Marked.

A request for any amount (``expected == 0``, Greenfield's TopUp) is paid by anything
above zero, as our checkout page reads it (``checkout_state``): our own status calls it
complete from the start, which to a shop would mean "settled before anyone paid".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.invoice import AFTER_EXPIRY, InvoiceStatus


class Status(StrEnum):
    """Greenfield's ``status``."""

    NEW = "New"
    PROCESSING = "Processing"
    SETTLED = "Settled"
    EXPIRED = "Expired"
    INVALID = "Invalid"


class AdditionalStatus(StrEnum):
    """Greenfield's ``additionalStatus``. ``Invalid`` is in BTCPay's swagger enum but its
    code never produces it (§2.1); it is here to be read, never derived."""

    NONE = "None"
    PAID_PARTIAL = "PaidPartial"
    PAID_OVER = "PaidOver"
    PAID_LATE = "PaidLate"
    MARKED = "Marked"
    INVALID = "Invalid"


MARKS = (Status.SETTLED, Status.INVALID)
PAID_IN_TIME = frozenset({InvoiceStatus.PAID, InvoiceStatus.COMPLETE})


@dataclass(frozen=True, slots=True)
class GreenfieldState:
    """The pair an invoice answers with (``status``, ``additionalStatus``)."""

    status: Status
    additional: AdditionalStatus = AdditionalStatus.NONE

    @property
    def marked(self) -> bool:
        """Whether the merchant set this state by hand."""
        return self.additional is AdditionalStatus.MARKED


@dataclass(frozen=True, slots=True)
class InvoiceFacts:
    """What the derivation needs, all piconero (``int``) but ``status`` and the flags.

    ``status``: ours, from ``invoice.status_of`` (it tells paid in time from paid late).
    ``received``: what counts toward the total (``ledger.coverage(...).total``).
    ``settled``: of that, the payments that are Settled (``payments.settled_total``).
    ``monitoring_over``: the monitoring deadline (``monitoringMinutes``) has passed.
    ``marked``: the merchant's mark, Settled or Invalid, if any.
    """

    status: InvoiceStatus
    expected: int
    received: int = 0
    settled: int = 0
    tolerance: int = 0
    monitoring_over: bool = False
    marked: Status | None = None

    def __post_init__(self) -> None:
        if min(self.expected, self.received, self.settled, self.tolerance) < 0:
            raise ValueError("amounts must not be negative")
        if self.settled > self.received:
            raise ValueError("settled payments are part of what was received")
        if self.marked is not None and self.marked not in MARKS:
            raise ValueError("a merchant marks an invoice Settled or Invalid only")

    @property
    def threshold(self) -> int:
        """What must arrive: ``expected - tolerance``, as ``invoice.Invoice.threshold``."""
        return max(self.expected - self.tolerance, 0)

    @property
    def paid(self) -> bool:
        """Enough received: the threshold, or anything at all for an any-amount request.

        Our ``complete`` is final (10 confirmations): it stays paid whatever happens later.
        """
        if self.expected == 0:
            return self.received > 0
        return self.status is InvoiceStatus.COMPLETE or self.received >= self.threshold

    @property
    def settled_enough(self) -> bool:
        """The Settled payments alone cover what is due."""
        if self.expected == 0:
            return self.settled > 0
        return self.status is InvoiceStatus.COMPLETE or self.settled >= self.threshold

    @property
    def overpaid(self) -> bool:
        """More than the amount asked arrived (never for an any-amount request)."""
        return 0 < self.expected < self.received


def derive(facts: InvoiceFacts, previous: GreenfieldState | None = None) -> GreenfieldState:
    """The Greenfield state of an invoice with these ``facts`` (see the module doc).

    ``previous`` is the state reported before (None: none yet, or unknown); a final
    state stays as it was unless the merchant marked the invoice.
    """
    if facts.marked is not None:
        return GreenfieldState(facts.marked, AdditionalStatus.MARKED)
    if previous is not None and previous.status in (Status.SETTLED, Status.INVALID):
        return previous
    partial = AdditionalStatus.PAID_PARTIAL if facts.received > 0 else AdditionalStatus.NONE
    if facts.status in AFTER_EXPIRY or (previous is not None and previous.status is Status.EXPIRED):
        # BTCPay keeps an expired invoice Expired; the money decides the additional status
        # (it sets PaidPartial again if a late payment is reorged away).
        late = AdditionalStatus.PAID_LATE if facts.paid else partial
        return GreenfieldState(Status.EXPIRED, late)
    if facts.status in PAID_IN_TIME and facts.paid:
        over = AdditionalStatus.PAID_OVER if facts.overpaid else AdditionalStatus.NONE
        if facts.settled_enough:
            return GreenfieldState(Status.SETTLED, over)
        if facts.monitoring_over:
            return GreenfieldState(Status.INVALID, over)
        return GreenfieldState(Status.PROCESSING, over)
    return GreenfieldState(Status.NEW, partial)


def available_marks(state: GreenfieldState) -> tuple[Status, ...]:
    """``availableStatusesForManualMarking``: what ``POST .../status`` may set now.

    BTCPay's rule (its ``CanMarkComplete``/``CanMarkInvalid``): an open or expired invoice
    may become either; an Invalid one only Settled; a Settled one nothing, unless the
    merchant set it, who may then take it back to Invalid.
    """
    if state.status in (Status.NEW, Status.PROCESSING, Status.EXPIRED):
        return MARKS
    if state.status is Status.INVALID:
        return (Status.SETTLED,)
    return (Status.INVALID,) if state.marked else ()


def parse_mark(value: object, path: str = "status") -> Status:
    """The ``status`` of a mark request: ``"Settled"`` or ``"Invalid"`` (any case, as
    Json.NET reads an enum), else a ``FieldError`` at ``path``."""
    if isinstance(value, str):
        for target in MARKS:
            if value.strip().lower() == target.value.lower():
                return target
    raise FieldError(path, "status must be Settled or Invalid", value)


def mark(state: GreenfieldState, target: Status, path: str = "status") -> GreenfieldState:
    """The state after the merchant marks it ``target``; a ``FieldError`` at ``path``
    when ``available_marks`` does not allow it (Greenfield answers 422)."""
    if target not in available_marks(state):
        raise FieldError(
            path,
            f"A {state.status.value} invoice cannot be marked {target.value} now",
            target.value,
        )
    return GreenfieldState(target, AdditionalStatus.MARKED)
