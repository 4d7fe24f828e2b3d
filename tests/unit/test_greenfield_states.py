"""BTCPay's invoice states from ours (``xmrgate.domain.greenfield.states``; §2.1, §2.2).

The tables below are BTCPay's, written from greenfield.md §2.1 and BTCPay's
``InvoiceWatcher``/``CanMark*`` rules, not from the module under test. The properties run
our own ledger and ``invoice.status_of`` over made-up payment histories and hold the
derived pairs to those tables.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testsupport.properties import examples
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.payments import settled_total
from xmrgate.domain.greenfield.speed import CONFIRMATIONS
from xmrgate.domain.greenfield.states import (
    AdditionalStatus as A,
)
from xmrgate.domain.greenfield.states import (
    GreenfieldState,
    InvoiceFacts,
    Status,
    available_marks,
    derive,
    mark,
    parse_mark,
)
from xmrgate.domain.invoice import AFTER_EXPIRY, Invoice, InvoiceStatus, status_of
from xmrgate.domain.ledger import SPENDABLE_AGE, Transfer, TransferState, coverage

S = Status
# The pairs BTCPay produces (§2.1; additionalStatus Invalid is never produced).
ALLOWED_PAIRS = {
    (S.NEW, A.NONE), (S.NEW, A.PAID_PARTIAL),
    (S.PROCESSING, A.NONE), (S.PROCESSING, A.PAID_OVER),
    (S.SETTLED, A.NONE), (S.SETTLED, A.PAID_OVER), (S.SETTLED, A.MARKED),
    (S.EXPIRED, A.NONE), (S.EXPIRED, A.PAID_PARTIAL), (S.EXPIRED, A.PAID_LATE),
    (S.INVALID, A.NONE), (S.INVALID, A.PAID_OVER), (S.INVALID, A.MARKED),
}  # fmt: skip
# Where BTCPay's watcher may take a status without a mark (several steps of one update
# pass count as one: New -> Processing -> Settled).
NEXT = {
    S.NEW: {S.NEW, S.PROCESSING, S.SETTLED, S.INVALID, S.EXPIRED},
    S.PROCESSING: {S.PROCESSING, S.NEW, S.SETTLED, S.INVALID, S.EXPIRED},
    S.EXPIRED: {S.EXPIRED},
    S.SETTLED: {S.SETTLED},
    S.INVALID: {S.INVALID},
}
# What a merchant may mark (BTCPay's CanMarkComplete / CanMarkInvalid).
MARKABLE = {
    GreenfieldState(S.NEW): {S.SETTLED, S.INVALID},
    GreenfieldState(S.NEW, A.PAID_PARTIAL): {S.SETTLED, S.INVALID},
    GreenfieldState(S.PROCESSING, A.PAID_OVER): {S.SETTLED, S.INVALID},
    GreenfieldState(S.EXPIRED, A.PAID_LATE): {S.SETTLED, S.INVALID},
    GreenfieldState(S.INVALID): {S.SETTLED},
    GreenfieldState(S.INVALID, A.MARKED): {S.SETTLED},
    GreenfieldState(S.SETTLED, A.PAID_OVER): set(),
    GreenfieldState(S.SETTLED, A.MARKED): {S.INVALID},
}
W = InvoiceStatus


def facts(status: InvoiceStatus, received: int = 0, settled: int = 0, **kw: object) -> InvoiceFacts:
    """Facts of a 100-piconero invoice unless ``kw`` says otherwise."""
    base = InvoiceFacts(status=status, expected=100, received=received, settled=settled)
    return replace(base, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given_facts", "previous", "expected"),
    [
        (facts(W.WAITING), None, (S.NEW, A.NONE)),
        (facts(W.PARTIAL, 40), None, (S.NEW, A.PAID_PARTIAL)),
        (facts(W.PAID, 100), None, (S.PROCESSING, A.NONE)),
        (facts(W.PAID, 130), None, (S.PROCESSING, A.PAID_OVER)),
        (facts(W.PAID, 100, 100), None, (S.SETTLED, A.NONE)),
        (facts(W.PAID, 130, 130), None, (S.SETTLED, A.PAID_OVER)),
        (facts(W.PAID, 130, 60), None, (S.PROCESSING, A.PAID_OVER)),  # not enough settled
        (facts(W.COMPLETE, 100, 100), None, (S.SETTLED, A.NONE)),
        # our complete (10 confirmations) is final, even if a deep reorg took money away
        (facts(W.COMPLETE, 0, 0), None, (S.SETTLED, A.NONE)),
        (facts(W.PAID, 100, 0, monitoring_over=True), None, (S.INVALID, A.NONE)),
        (facts(W.PAID, 100, 100, monitoring_over=True), None, (S.SETTLED, A.NONE)),
        (facts(W.EXPIRED), None, (S.EXPIRED, A.NONE)),
        (facts(W.EXPIRED, 40), None, (S.EXPIRED, A.PAID_PARTIAL)),
        (facts(W.PAID_LATE, 100), None, (S.EXPIRED, A.PAID_LATE)),
        # tolerance: 95 of 100 with 5 tolerated is paid, and not partial
        (facts(W.PAID, 95, tolerance=5), None, (S.PROCESSING, A.NONE)),
        (facts(W.PAID, 95, 95, tolerance=5), None, (S.SETTLED, A.NONE)),
        # any amount (TopUp): our "complete from the start" is not settled for a shop
        (facts(W.COMPLETE, expected=0), None, (S.NEW, A.NONE)),
        (facts(W.COMPLETE, 7, expected=0), None, (S.PROCESSING, A.NONE)),
        (facts(W.COMPLETE, 7, 7, expected=0), None, (S.SETTLED, A.NONE)),
        # what was reported before holds where BTCPay holds it
        (facts(W.PAID, 100), GreenfieldState(S.EXPIRED), (S.EXPIRED, A.PAID_LATE)),
        (facts(W.PARTIAL, 40), GreenfieldState(S.SETTLED), (S.SETTLED, A.NONE)),
        (facts(W.PAID, 100, 100), GreenfieldState(S.INVALID), (S.INVALID, A.NONE)),
        (
            facts(W.EXPIRED, 40),
            GreenfieldState(S.EXPIRED, A.PAID_LATE),
            (S.EXPIRED, A.PAID_PARTIAL),
        ),
        # a reorg under a Processing invoice: back to New, PaidPartial
        (facts(W.PARTIAL, 40), GreenfieldState(S.PROCESSING), (S.NEW, A.PAID_PARTIAL)),
        # the merchant's mark wins
        (facts(W.WAITING, marked=S.SETTLED), None, (S.SETTLED, A.MARKED)),
        (
            facts(W.PAID, 100, 100, marked=S.INVALID),
            GreenfieldState(S.SETTLED),
            (S.INVALID, A.MARKED),
        ),
    ],
)
def test_derive_examples(
    given_facts: InvoiceFacts, previous: GreenfieldState | None, expected: tuple[Status, A]
) -> None:
    state = derive(given_facts, previous)
    assert (state.status, state.additional) == expected


@pytest.mark.parametrize(
    "kw",
    [
        {"received": 10, "settled": 11},
        {"received": -1},
        {"tolerance": -1},
        {"marked": S.NEW},
    ],
)
def test_impossible_facts_are_a_bug(kw: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        InvoiceFacts(status=W.PAID, expected=100, **kw)  # type: ignore[arg-type]


# -- histories run through our own ledger and statuses --------------------------------

T0 = 1_750_000_020  # a block boundary (120 s blocks)
BLOCK = 120


@dataclass(frozen=True)
class Payment:
    amount: int
    seen: int  # seconds after T0
    mined_after: int | None  # seconds after seen; None: never mined
    dropped_after: int | None  # an unmined payment leaves the pool this long after seen
    double_spend: bool


@dataclass(frozen=True)
class History:
    expected: int
    tolerance: int
    expires_in: int | None
    monitoring: int
    required: int
    payments: tuple[Payment, ...]
    times: tuple[int, ...]


def _state_at(payment: Payment, now: int, index: int) -> Transfer | None:
    if payment.seen > now:
        return None
    chain_height = (T0 + now) // BLOCK + 1
    height, state = 0, TransferState.POOL
    if payment.mined_after is not None and payment.seen + payment.mined_after <= now:
        height = (T0 + payment.seen + payment.mined_after) // BLOCK
        unlocked = chain_height - height >= SPENDABLE_AGE
        state = TransferState.UNLOCKED if unlocked else TransferState.CONFIRMED
    elif payment.dropped_after is not None and payment.seen + payment.dropped_after <= now:
        state = TransferState.GONE
    return Transfer(
        tx_hash=f"{index:064x}",
        subaddr_index=1,
        amount=payment.amount,
        fee=0,
        height=height,
        timestamp=T0 + payment.seen,
        unlock_time=0,
        double_spend_seen=payment.double_spend and state is TransferState.POOL,
        state=state,
        first_seen=T0 + payment.seen,
    )


def run(history: History) -> list[tuple[InvoiceFacts, GreenfieldState]]:
    """The facts and the derived state at each time of ``history``, each step fed the
    state before (as the facade keeps it), our status recorded as the sync tick does."""
    expires_at = None if history.expires_in is None else T0 + history.expires_in
    monitoring_at = T0 + (history.expires_in or 0) + history.monitoring
    recorded: InvoiceStatus | None = None
    previous: GreenfieldState | None = None
    steps = []
    for now in history.times:
        transfers = [
            t for i, p in enumerate(history.payments) if (t := _state_at(p, now, i)) is not None
        ]
        terms = Invoice(history.expected, history.tolerance, expires_at, recorded)
        recorded = status_of(terms, transfers, T0 + now)
        chain_height = (T0 + now) // BLOCK + 1
        step = InvoiceFacts(
            status=recorded,
            expected=history.expected,
            received=coverage(history.expected, transfers).total,
            settled=settled_total(transfers, chain_height, history.required),
            tolerance=history.tolerance,
            monitoring_over=T0 + now >= monitoring_at,
        )
        previous = derive(step, previous)
        steps.append((step, previous))
    return steps


payments = st.builds(
    Payment,
    amount=st.integers(min_value=1, max_value=120),
    seen=st.integers(min_value=0, max_value=4000),
    mined_after=st.none() | st.integers(min_value=0, max_value=3000),
    dropped_after=st.none() | st.integers(min_value=0, max_value=2000),
    double_spend=st.booleans(),
)


@st.composite
def histories(draw: st.DrawFn) -> History:
    expected = draw(st.sampled_from([0, 100, 100, 100]))
    return History(
        expected=expected,
        tolerance=draw(st.sampled_from([0, 0, 5])) if expected else 0,
        expires_in=draw(st.none() | st.integers(min_value=300, max_value=3000)),
        monitoring=draw(st.integers(min_value=0, max_value=4000)),
        required=draw(st.sampled_from(sorted(set(CONFIRMATIONS.values())))),
        payments=tuple(draw(st.lists(payments, max_size=4))),
        times=tuple(sorted(draw(st.lists(st.integers(0, 9000), min_size=1, max_size=8)))),
    )


@settings(max_examples=examples(80), deadline=None)
@given(histories())
def test_every_history_gives_allowed_pairs_in_btcpays_order(history: History) -> None:
    steps = run(history)
    before: GreenfieldState | None = None
    ours_expired = False
    for step, state in steps:
        assert (state.status, state.additional) in ALLOWED_PAIRS
        assert not state.marked  # nobody marked anything
        if before is not None:
            assert state.status in NEXT[before.status], (before, state)
        # Fed back with the same facts, the state stays: a tick that learns nothing new
        # changes nothing (and so sends no event).
        assert derive(step, state) == state
        ours_expired = ours_expired or step.status in AFTER_EXPIRY
        # Expired only after our request expired; and then always, unless already final
        if state.status is S.EXPIRED:
            assert ours_expired
        elif step.status in AFTER_EXPIRY:
            assert state.status in (S.SETTLED, S.INVALID)
        if state.additional is A.PAID_LATE:
            assert step.received >= step.threshold
        if state.status is S.PROCESSING:
            assert step.status in (W.PAID, W.COMPLETE) and not step.monitoring_over
        # A mark the store records derives what marking answered.
        for target in available_marks(state):
            assert derive(replace(step, marked=target), state) == mark(state, target)
        before = state


# -- the merchant's mark --------------------------------------------------------------


@pytest.mark.parametrize(("state", "allowed"), MARKABLE.items())
def test_available_marks(state: GreenfieldState, allowed: set[Status]) -> None:
    assert set(available_marks(state)) == allowed
    for target in (S.SETTLED, S.INVALID):
        if target in allowed:
            assert mark(state, target) == GreenfieldState(target, A.MARKED)
        else:
            with pytest.raises(FieldError) as caught:
                mark(state, target)
            assert caught.value.path == "status"


@pytest.mark.parametrize(("text", "target"), [("Settled", S.SETTLED), ("invalid", S.INVALID)])
def test_parse_mark(text: str, target: Status) -> None:
    assert parse_mark(text) is target


@pytest.mark.parametrize("text", ["New", "Expired", "Processing", "", None, 1])
def test_only_settled_or_invalid_can_be_asked(text: object) -> None:
    with pytest.raises(FieldError) as caught:
        parse_mark(text)
    assert (caught.value.path, caught.value.value) == ("status", text)
