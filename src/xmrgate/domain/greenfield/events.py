"""Webhook events: their types, a webhook's filter, and which events a change makes (§2.7).

An event here is what happened to one invoice (its type and the fields only that type
carries); ``deliveries`` adds the fields of one delivery try. Which events a change makes,
and in which order, follows BTCPay's invoice state machine: one
event per state change, in the order BTCPay sends them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.payment_methods import XMR_CHAIN
from xmrgate.domain.greenfield.payments import PaymentStatus
from xmrgate.domain.greenfield.states import AdditionalStatus, GreenfieldState, Status


class EventType(StrEnum):
    """The invoice event types we send (BTCPay's names, matched exactly)."""

    CREATED = "InvoiceCreated"
    RECEIVED_PAYMENT = "InvoiceReceivedPayment"
    PAYMENT_SETTLED = "InvoicePaymentSettled"
    PROCESSING = "InvoiceProcessing"
    EXPIRED = "InvoiceExpired"
    SETTLED = "InvoiceSettled"
    INVALID = "InvoiceInvalid"
    EXPIRED_PAID_PARTIAL = "InvoiceExpiredPaidPartial"
    PAID_AFTER_EXPIRATION = "InvoicePaidAfterExpiration"
    REFUND = "InvoiceRefund"


# The fields each type carries besides the common ones (§2.7 table), in body order.
EXTRA_FIELDS: Mapping[EventType, tuple[str, ...]] = {
    EventType.CREATED: (),
    EventType.RECEIVED_PAYMENT: ("afterExpiration", "paymentMethodId", "payment"),
    EventType.PAYMENT_SETTLED: ("afterExpiration", "paymentMethodId", "payment"),
    EventType.PROCESSING: ("overPaid",),
    EventType.SETTLED: ("manuallyMarked", "overPaid"),
    EventType.INVALID: ("manuallyMarked",),
    EventType.EXPIRED: ("partiallyPaid",),
    EventType.EXPIRED_PAID_PARTIAL: (),
    EventType.PAID_AFTER_EXPIRATION: (),
    EventType.REFUND: ("pullPaymentId",),
}
_BY_NAME = {t.value: t for t in EventType}


@dataclass(frozen=True, slots=True)
class InvoiceEvent:
    """One event of an invoice: its type and exactly the extra fields that type carries."""

    type: EventType
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if tuple(self.extras) != EXTRA_FIELDS[self.type]:
            raise ValueError(
                f"{self.type} carries {EXTRA_FIELDS[self.type]}, not {tuple(self.extras)}"
            )


@dataclass(frozen=True, slots=True)
class EventFilter:
    """A webhook's ``authorizedEvents``: everything, or the listed types only."""

    everything: bool = True
    specific: tuple[EventType, ...] = ()

    def wants(self, event_type: EventType) -> bool:
        """Whether a delivery of ``event_type`` goes to this webhook."""
        return self.everything or event_type in self.specific

    def to_json(self) -> dict[str, Any]:
        """``{"everything": bool, "specificEvents": [...]}`` as answered."""
        return {"everything": self.everything, "specificEvents": [t.value for t in self.specific]}


def parse_event_filter(value: object, path: str = "authorizedEvents") -> EventFilter:
    """``authorizedEvents`` of a webhook create or update; absent or null is everything
    (BTCPay's default). ``specificEvents`` items must be our type names exactly (BTCPay
    compares them as written): a wrong case is refused, naming the right spelling.
    """
    if value is None:
        return EventFilter()
    if not isinstance(value, dict):
        raise FieldError(path, f"{path} must be an object", value)
    everything = value.get("everything", False)
    if not isinstance(everything, bool):
        raise FieldError(f"{path}.everything", "everything must be true or false", everything)
    listed = value.get("specificEvents") or []
    if not isinstance(listed, list):
        raise FieldError(f"{path}.specificEvents", "specificEvents must be a list", listed)
    specific: list[EventType] = []
    for index, name in enumerate(listed):
        where = f"{path}.specificEvents[{index}]"
        if isinstance(name, str) and name in _BY_NAME:
            specific.append(_BY_NAME[name])
            continue
        near = [t.value for t in EventType if isinstance(name, str) and t.lower() == name.lower()]
        hint = f"; did you mean {near[0]}?" if near else ""
        raise FieldError(where, f"Unknown webhook event type {name!r}{hint}", name)
    return EventFilter(everything, tuple(dict.fromkeys(specific)))


def _over(state: GreenfieldState) -> bool:
    return state.additional is AdditionalStatus.PAID_OVER


def status_events(before: GreenfieldState | None, after: GreenfieldState) -> list[InvoiceEvent]:
    """The events of an invoice's change of state, in BTCPay's order.

    ``before`` None is the creation (InvoiceCreated, then whatever the first state says).
    New -> Processing -> Settled/Invalid each send one event, also when one step crosses
    both; an expiry sends InvoiceExpired (with InvoiceExpiredPaidPartial when something
    had come); money after the expiry, InvoicePaidAfterExpiration once; a mark, Settled or
    Invalid with ``manuallyMarked``. A step back (Processing -> New after a reorg) and a
    change of additional status alone send nothing, as in BTCPay.
    """
    events: list[InvoiceEvent] = []
    if before is None:
        events.append(InvoiceEvent(EventType.CREATED))
        before = GreenfieldState(Status.NEW)
    if after == before:
        return events
    if after.marked:
        kind = EventType.SETTLED if after.status is Status.SETTLED else EventType.INVALID
        extras: dict[str, Any] = {"manuallyMarked": True}
        if kind is EventType.SETTLED:
            extras["overPaid"] = False  # a marked invoice says Marked, not PaidOver
        return [*events, InvoiceEvent(kind, extras)]
    if after.status is Status.EXPIRED:
        if before.status is not Status.EXPIRED:
            # Partly paid: when it expired, or by what the expired invoice holds now (the
            # money and the expiry may both be news of the same tick).
            partial = before.additional is AdditionalStatus.PAID_PARTIAL or (
                after.additional is AdditionalStatus.PAID_PARTIAL
            )
            events.append(InvoiceEvent(EventType.EXPIRED, {"partiallyPaid": partial}))
            if partial:
                events.append(InvoiceEvent(EventType.EXPIRED_PAID_PARTIAL))
        if after.additional is AdditionalStatus.PAID_LATE and (
            before.additional is not AdditionalStatus.PAID_LATE
            or before.status is not Status.EXPIRED
        ):
            events.append(InvoiceEvent(EventType.PAID_AFTER_EXPIRATION))
        return events
    if after.status in (Status.PROCESSING, Status.SETTLED, Status.INVALID) and (
        before.status is Status.NEW
    ):
        events.append(InvoiceEvent(EventType.PROCESSING, {"overPaid": _over(after)}))
    if after.status is Status.SETTLED and before.status is not Status.SETTLED:
        events.append(
            InvoiceEvent(EventType.SETTLED, {"manuallyMarked": False, "overPaid": _over(after)})
        )
    if after.status is Status.INVALID and before.status is not Status.INVALID:
        events.append(InvoiceEvent(EventType.INVALID, {"manuallyMarked": False}))
    return events


def payment_events(
    before: PaymentStatus | None,
    after: PaymentStatus,
    payment: Mapping[str, Any],
    *,
    after_expiration: bool,
) -> list[InvoiceEvent]:
    """The events of one payment's change (``payment``: ``payments.payment_json``).

    New and still confirming: InvoiceReceivedPayment. New and already Settled (HighSpeed,
    or first seen in a block deep enough): InvoicePaymentSettled *first*, then
    InvoiceReceivedPayment, as BTCPay sends them. Processing -> Settled:
    InvoicePaymentSettled. Nothing for Invalid or no change.
    """

    def event(kind: EventType) -> InvoiceEvent:
        extras = {
            "afterExpiration": after_expiration,
            "paymentMethodId": XMR_CHAIN,
            "payment": dict(payment),
        }
        return InvoiceEvent(kind, extras)

    if after is PaymentStatus.INVALID or after == before:
        return []
    if before is None:
        if after is PaymentStatus.SETTLED:
            return [event(EventType.PAYMENT_SETTLED), event(EventType.RECEIVED_PAYMENT)]
        return [event(EventType.RECEIVED_PAYMENT)]
    if after is PaymentStatus.SETTLED:
        return [event(EventType.PAYMENT_SETTLED)]
    return []
