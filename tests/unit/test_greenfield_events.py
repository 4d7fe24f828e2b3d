"""Webhook events (``xmrgate.domain.greenfield.events``; greenfield.md §2.1, §2.7)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings

from tests.unit.test_greenfield_states import History, histories, run
from testsupport.properties import examples
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.events import (
    EXTRA_FIELDS,
    EventFilter,
    EventType,
    InvoiceEvent,
    parse_event_filter,
    payment_events,
    status_events,
)
from xmrgate.domain.greenfield.payments import PaymentStatus
from xmrgate.domain.greenfield.states import AdditionalStatus as A
from xmrgate.domain.greenfield.states import GreenfieldState as G
from xmrgate.domain.greenfield.states import Status as S

E = EventType
# §1 A5: the body WooCommerce sends.
WOOCOMMERCE = {
    "everything": False,
    "specificEvents": [
        "InvoiceReceivedPayment",
        "InvoicePaymentSettled",
        "InvoiceProcessing",
        "InvoiceExpired",
        "InvoiceSettled",
        "InvoiceInvalid",
    ],
}


def kinds(events: list[InvoiceEvent]) -> list[tuple[EventType, dict[str, object]]]:
    return [(e.type, dict(e.extras)) for e in events]


def test_the_filter_woocommerce_sends() -> None:
    found = parse_event_filter(WOOCOMMERCE)
    assert not found.everything
    assert found.wants(E.SETTLED) and found.wants(E.RECEIVED_PAYMENT)
    assert not found.wants(E.CREATED)
    assert found.to_json() == WOOCOMMERCE


def test_no_filter_is_everything() -> None:
    for value in (None, {"everything": True}):
        assert all(parse_event_filter(value).wants(kind) for kind in EventType)
    assert not EventFilter(everything=False).wants(E.CREATED)


def test_a_type_listed_twice_is_kept_once() -> None:
    found = parse_event_filter({"specificEvents": ["InvoiceSettled", "InvoiceSettled"]})
    assert found.specific == (E.SETTLED,)


@pytest.mark.parametrize(
    ("value", "path", "hint"),
    [
        ({"specificEvents": ["InvoiceSettled", "Bogus"]}, "authorizedEvents.specificEvents[1]", ""),
        (
            {"specificEvents": ["invoicesettled"]},
            "authorizedEvents.specificEvents[0]",
            "InvoiceSettled",
        ),
        ({"specificEvents": [3]}, "authorizedEvents.specificEvents[0]", ""),
        ({"specificEvents": "InvoiceSettled"}, "authorizedEvents.specificEvents", ""),
        ({"everything": "yes"}, "authorizedEvents.everything", ""),
        (["InvoiceSettled"], "authorizedEvents", ""),
    ],
)
def test_a_bad_filter_names_the_field(value: object, path: str, hint: str) -> None:
    with pytest.raises(FieldError) as caught:
        parse_event_filter(value)
    assert caught.value.path == path
    assert hint in caught.value.message


def test_an_event_carries_exactly_its_fields() -> None:
    with pytest.raises(ValueError):
        InvoiceEvent(E.SETTLED, {"manuallyMarked": False})  # overPaid missing
    with pytest.raises(ValueError):
        InvoiceEvent(E.CREATED, {"overPaid": False})
    assert EXTRA_FIELDS[E.EXPIRED] == ("partiallyPaid",)


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (None, G(S.NEW), [(E.CREATED, {})]),
        (G(S.NEW), G(S.PROCESSING), [(E.PROCESSING, {"overPaid": False})]),
        (
            G(S.NEW, A.PAID_PARTIAL),
            G(S.SETTLED, A.PAID_OVER),
            [
                (E.PROCESSING, {"overPaid": True}),
                (E.SETTLED, {"manuallyMarked": False, "overPaid": True}),
            ],
        ),
        (
            G(S.PROCESSING),
            G(S.SETTLED),
            [(E.SETTLED, {"manuallyMarked": False, "overPaid": False})],
        ),
        (G(S.PROCESSING), G(S.INVALID), [(E.INVALID, {"manuallyMarked": False})]),
        (G(S.NEW), G(S.EXPIRED), [(E.EXPIRED, {"partiallyPaid": False})]),
        (
            G(S.NEW, A.PAID_PARTIAL),
            G(S.EXPIRED, A.PAID_PARTIAL),
            [(E.EXPIRED, {"partiallyPaid": True}), (E.EXPIRED_PAID_PARTIAL, {})],
        ),
        (
            G(S.NEW),
            G(S.EXPIRED, A.PAID_LATE),
            [(E.EXPIRED, {"partiallyPaid": False}), (E.PAID_AFTER_EXPIRATION, {})],
        ),
        (G(S.EXPIRED, A.PAID_PARTIAL), G(S.EXPIRED, A.PAID_LATE), [(E.PAID_AFTER_EXPIRATION, {})]),
        (G(S.EXPIRED, A.PAID_LATE), G(S.EXPIRED, A.PAID_PARTIAL), []),
        (G(S.PROCESSING), G(S.NEW, A.PAID_PARTIAL), []),  # a reorg: BTCPay says nothing
        (G(S.PROCESSING), G(S.PROCESSING, A.PAID_OVER), []),
        (G(S.SETTLED), G(S.SETTLED), []),
        (
            G(S.EXPIRED),
            G(S.SETTLED, A.MARKED),
            [(E.SETTLED, {"manuallyMarked": True, "overPaid": False})],
        ),
        (G(S.SETTLED, A.MARKED), G(S.INVALID, A.MARKED), [(E.INVALID, {"manuallyMarked": True})]),
    ],
)
def test_status_events(
    before: G | None, after: G, expected: list[tuple[EventType, dict[str, object]]]
) -> None:
    assert kinds(status_events(before, after)) == expected


@settings(max_examples=examples(40), deadline=None)
@given(histories())
def test_a_history_sends_each_final_event_once_and_created_first(history: History) -> None:
    sent: list[EventType] = []
    before: G | None = None
    for _, state in run(history):
        events = status_events(before, state)
        assert bool(events) <= (before != state)  # no change, no event
        sent.extend(e.type for e in events)
        before = state
    assert sent[0] is E.CREATED
    counts = Counter(sent)
    assert counts[E.CREATED] == 1
    assert counts[E.SETTLED] + counts[E.INVALID] + counts[E.EXPIRED] <= 1
    if before is not None and before.status is S.SETTLED:
        assert sent[-1] is E.SETTLED and counts[E.PROCESSING] >= 1


PAYMENT = {"id": "x#0#1", "value": "1", "status": "Settled"}


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (None, PaymentStatus.PROCESSING, [E.RECEIVED_PAYMENT]),
        # already settled when first seen: PaymentSettled goes first, as BTCPay sends it
        (None, PaymentStatus.SETTLED, [E.PAYMENT_SETTLED, E.RECEIVED_PAYMENT]),
        (PaymentStatus.PROCESSING, PaymentStatus.SETTLED, [E.PAYMENT_SETTLED]),
        (PaymentStatus.SETTLED, PaymentStatus.SETTLED, []),
        (PaymentStatus.PROCESSING, PaymentStatus.INVALID, []),
        (None, PaymentStatus.INVALID, []),
    ],
)
def test_payment_events(
    before: PaymentStatus | None, after: PaymentStatus, expected: list[EventType]
) -> None:
    events = payment_events(before, after, PAYMENT, after_expiration=True)
    assert [e.type for e in events] == expected
    for event in events:
        assert event.extras == {
            "afterExpiration": True,
            "paymentMethodId": "XMR-CHAIN",
            "payment": PAYMENT,
        }
