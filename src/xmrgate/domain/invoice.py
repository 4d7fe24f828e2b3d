"""The lifecycle of a payment request: status, what is still due, expiry (pure).

A request may carry an expiry (``expires_at``) and an underpayment tolerance. Its
``status`` follows from its transfers, the clock and the status recorded before:

- ``waiting``: nothing received;
- ``partial``: something received, total below ``expected - tolerance``;
- ``paid``: total reached ``expected - tolerance`` in time, not yet unlocked;
- ``complete``: unlocked reached it, in time; never left again;
- ``expired``: ``expires_at`` passed before the total reached it;
- ``paid_late``: it reached it only with money that first appeared after ``expires_at``.

"In time" is decided per transfer by when it first appeared (``Transfer.seen_at``:
the pool sighting, else the block), so a transfer seen in the pool before the
expiry and mined after it counts as in time. ``reconcile_invoices`` runs the ledger's
``reconcile`` and gives each event the status at that moment, adding a
``request.expired`` event when a request with an expiry enters ``expired`` or
``paid_late`` (once: the recorded status says it happened).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from xmrgate.domain import ledger
from xmrgate.domain.ledger import Coverage, Observation, Transfer, TransferState


class InvoiceStatus(StrEnum):
    """Where a payment request stands (``status`` in answers and callbacks)."""

    WAITING = "waiting"
    PARTIAL = "partial"
    PAID = "paid"
    COMPLETE = "complete"
    EXPIRED = "expired"
    PAID_LATE = "paid_late"


# Statuses an expiry can still happen to, and the statuses after it.
OPEN = frozenset({InvoiceStatus.WAITING, InvoiceStatus.PARTIAL})
AFTER_EXPIRY = frozenset({InvoiceStatus.EXPIRED, InvoiceStatus.PAID_LATE})
EXPIRED_EVENT = "request.expired"
MAX_EXPIRES_IN = 30 * 24 * 3600  # 2,592,000 s: 30 days


@dataclass(frozen=True, slots=True)
class Invoice:
    """A request's terms and the status recorded for it (None: none recorded yet)."""

    expected: int
    tolerance: int = 0
    expires_at: float | None = None  # unix seconds
    recorded: InvoiceStatus | None = None

    @property
    def threshold(self) -> int:
        """What must arrive: ``expected - tolerance`` (never negative)."""
        return max(self.expected - self.tolerance, 0)


def unix(value: datetime | None) -> float | None:
    """A datetime as unix seconds (None stays None)."""
    return None if value is None else value.timestamp()


def due(invoice: Invoice, total: int) -> int:
    """What is still missing: ``max(0, expected - tolerance - covered.total)``."""
    return max(invoice.threshold - total, 0)


def is_complete(invoice: Invoice, unlocked: int) -> bool:
    """The ``complete`` flag: unlocked money reached ``expected - tolerance``.

    Without a tolerance this is the spec's rule (``unlocked >= expected``) unchanged.
    """
    return unlocked >= invoice.threshold


def initial_status(expected: int, tolerance: int) -> InvoiceStatus:
    """The status of a new request: complete at once when nothing is required."""
    return InvoiceStatus.COMPLETE if expected - tolerance <= 0 else InvoiceStatus.WAITING


def in_time_before(expires_at: float) -> int:
    """The first whole second that is late.

    The wallet reports when a transfer appeared in whole seconds; a transfer seen in
    the second that holds ``expires_at`` may have come after the expiry was announced
    (``now >= expires_at``), so that whole second counts as late: in time means
    ``seen_at < floor(expires_at)``.
    """
    return math.floor(expires_at)


def status_of(invoice: Invoice, transfers: Iterable[Transfer], now: float) -> InvoiceStatus:
    """The status of a request with these transfers at ``now`` (see the module doc)."""
    if invoice.recorded is InvoiceStatus.COMPLETE:
        return InvoiceStatus.COMPLETE
    total = unlocked = in_time = 0
    for t in transfers:
        if ledger.counts_toward_total(t):
            total += t.amount
            if invoice.expires_at is None or t.seen_at < in_time_before(invoice.expires_at):
                in_time += t.amount
        if t.state is TransferState.UNLOCKED:
            unlocked += t.amount
    threshold = invoice.threshold
    if in_time >= threshold:
        return InvoiceStatus.COMPLETE if unlocked >= threshold else InvoiceStatus.PAID
    if total >= threshold:
        return InvoiceStatus.PAID_LATE
    if invoice.expires_at is not None and now >= invoice.expires_at:
        return InvoiceStatus.EXPIRED
    return InvoiceStatus.PARTIAL if total > 0 else InvoiceStatus.WAITING


def displayed(recorded: InvoiceStatus, expires_at: float | None, now: float) -> InvoiceStatus:
    """The status from the recorded one alone (the list): an open request past its expiry.

    Equals ``status_of`` over the same transfers: only the clock moves a recorded
    status between two sync ticks, and only from waiting/partial to expired.
    """
    if recorded in OPEN and expires_at is not None and now >= expires_at:
        return InvoiceStatus.EXPIRED
    return recorded


@dataclass(frozen=True, slots=True)
class InvoiceEvent:
    """One event of a request: a transfer's (``transfer`` set) or ``request.expired``."""

    subaddr_index: int
    kind: str
    transfer: Transfer | None
    coverage: Coverage
    status: InvoiceStatus


@dataclass(frozen=True, slots=True)
class InvoiceReconciliation:
    """What a tick writes: changed transfers, events, and statuses that changed."""

    changed: list[Transfer]
    events: list[InvoiceEvent]
    statuses: dict[int, InvoiceStatus]


def reconcile_invoices(
    *,
    invoices: Mapping[int, Invoice],
    stored: Iterable[Transfer],
    observed: Iterable[Observation],
    window_start: int,
    chain_height: int,
    now: float,
    zero_conf: bool,
    announced: Collection[tuple[str, int]] = frozenset(),
) -> InvoiceReconciliation:
    """``ledger.reconcile`` for these requests, with a status on every event.

    ``invoices`` maps subaddress index to terms and recorded status; it may include
    requests nothing happened to (an expiry needs no transfer). The events of one
    request keep the ledger's order; ``request.expired`` goes right where the replay
    first reaches ``expired``/``paid_late``, and only when the request ends the tick
    there (an in-time transfer first seen in this tick keeps it from expiring).
    """
    stored = list(stored)
    outcome = ledger.reconcile(
        expected_by_index={i: inv.expected for i, inv in invoices.items()},
        stored=stored,
        observed=observed,
        window_start=window_start,
        chain_height=chain_height,
        now=int(now),
        zero_conf=zero_conf,
        announced=announced,
    )
    with_events = {e.transfer.key for e in outcome.events}
    by_index: dict[int, list[ledger.Event]] = {}
    for event in outcome.events:
        by_index.setdefault(event.subaddr_index, []).append(event)
    events: list[InvoiceEvent] = []
    statuses: dict[int, InvoiceStatus] = {}
    for index in sorted(invoices):
        invoice = invoices[index]
        working = {t.key: t for t in stored if t.subaddr_index == index}
        # Silent changes (no event of their own) are in force before any event, as in
        # the ledger, so every event's coverage here equals the ledger's.
        working.update(
            {
                t.key: t
                for t in outcome.changed
                if t.subaddr_index == index and t.key not in with_events
            }
        )
        mine, final = _replay(index, invoice, working, by_index.get(index, []), now)
        events.extend(mine)
        if final is not invoice.recorded:
            statuses[index] = final
    return InvoiceReconciliation(changed=outcome.changed, events=events, statuses=statuses)


def _replay(
    index: int,
    invoice: Invoice,
    working: dict[tuple[str, int], Transfer],
    transfer_events: list[ledger.Event],
    now: float,
) -> tuple[list[InvoiceEvent], InvoiceStatus]:
    """The request's events with their statuses, and its status at the end of the tick."""
    status = status_of(invoice, working.values(), now)
    # (status, coverage) before any event, then after each one.
    points = [(status, ledger.coverage(invoice.expected, working.values()))]
    # ``complete`` sticks from a state the wallet showed: recorded before the tick, or
    # reached once every loss of the tick is in force. The changes without an event
    # (a pool transfer no longer a double spend) are in force before the events, and
    # the losses (transfers gone) come first among them, one at a time: until the last
    # one, money the wallet no longer shows still counts. Completed there, a request
    # kept ``complete`` with no unlocked money left; there it is at most ``paid``
    # (test_invoice.py, the property test_final_status_equals_status_of_stored_rows).
    last_loss = max(
        (i for i, e in enumerate(transfer_events) if e.kind is ledger.EventKind.GONE),
        default=-1,
    )
    sticky = invoice.recorded
    annotated: list[InvoiceEvent] = []
    for i, event in enumerate(transfer_events):
        working[event.transfer.key] = event.transfer
        status = status_of(replace(invoice, recorded=sticky), working.values(), now)
        if status is InvoiceStatus.COMPLETE and sticky is not status and i < last_loss:
            status = InvoiceStatus.PAID
        sticky = status
        points.append((status, event.coverage))
        annotated.append(
            InvoiceEvent(index, event.kind.value, event.transfer, event.coverage, status)
        )
    if (
        invoice.expires_at is not None
        and invoice.recorded not in AFTER_EXPIRY
        and status in AFTER_EXPIRY
    ):
        # Where it entered for good: after the last moment it was still open or paid.
        at = max((i + 1 for i, (s, _) in enumerate(points) if s not in AFTER_EXPIRY), default=0)
        point_status, point_coverage = points[at]
        annotated.insert(at, InvoiceEvent(index, EXPIRED_EVENT, None, point_coverage, point_status))
    return annotated, status
