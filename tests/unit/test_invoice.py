"""Table-driven tests of the request lifecycle in ``xmrgate.domain.invoice``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from xmrgate.domain.invoice import (
    EXPIRED_EVENT,
    Invoice,
    InvoiceReconciliation,
    InvoiceStatus,
    displayed,
    due,
    initial_status,
    is_complete,
    reconcile_invoices,
    status_of,
)
from xmrgate.domain.ledger import SPENDABLE_AGE, Observation, Transfer, TransferState

WAITING = InvoiceStatus.WAITING
PARTIAL = InvoiceStatus.PARTIAL
PAID = InvoiceStatus.PAID
COMPLETE = InvoiceStatus.COMPLETE
EXPIRED = InvoiceStatus.EXPIRED
PAID_LATE = InvoiceStatus.PAID_LATE

POOL = TransferState.POOL
CONFIRMED = TransferState.CONFIRMED
UNLOCKED = TransferState.UNLOCKED
GONE = TransferState.GONE

NOW = 1_700_000_000
EXPIRY = NOW + 100  # requests below expire at this time
CHAIN = 1000


def tr(
    amount: int,
    state: TransferState = CONFIRMED,
    *,
    seen: int = NOW,
    tx: str = "aa",
    double_spend: bool = False,
) -> Transfer:
    """A stored transfer of request 1, first seen at ``seen``."""
    return Transfer(
        tx_hash=tx,
        subaddr_index=1,
        amount=amount,
        fee=1,
        height=0 if state is POOL else 950,
        timestamp=seen,
        unlock_time=0,
        double_spend_seen=double_spend,
        state=state,
        first_seen=seen,
    )


def obs(tx: str, amount: int, height: int = 0, *, at: int = NOW, index: int = 1) -> Observation:
    """A wallet report; height 0 is the pool."""
    return Observation(
        tx_hash=tx,
        subaddr_index=index,
        amount=amount,
        fee=1,
        height=height,
        timestamp=at,
        unlock_time=0,
        double_spend_seen=False,
        in_pool=height == 0,
    )


LATE = EXPIRY + 5
EARLY = EXPIRY - 5


@pytest.mark.parametrize(
    ("invoice", "transfers", "now", "expected"),
    [
        pytest.param(Invoice(100), [], NOW, WAITING, id="nothing"),
        pytest.param(Invoice(100), [tr(40, POOL)], NOW, PARTIAL, id="partial-pool"),
        pytest.param(Invoice(100), [tr(40)], NOW, PARTIAL, id="partial-mined"),
        pytest.param(Invoice(100), [tr(100, POOL)], NOW, PAID, id="paid-in-pool"),
        pytest.param(Invoice(100), [tr(60), tr(40, tx="b")], NOW, PAID, id="paid-two-parts"),
        pytest.param(Invoice(100), [tr(100, UNLOCKED)], NOW, COMPLETE, id="complete"),
        pytest.param(Invoice(100), [tr(150, UNLOCKED)], NOW, COMPLETE, id="overpaid-complete"),
        pytest.param(Invoice(100), [tr(60, UNLOCKED)], NOW, PARTIAL, id="partial-unlocked"),
        pytest.param(Invoice(100), [tr(100, GONE)], NOW, WAITING, id="gone-does-not-count"),
        pytest.param(
            Invoice(100), [tr(100, POOL, double_spend=True)], NOW, WAITING, id="double-spend"
        ),
        pytest.param(Invoice(100, 10), [tr(90)], NOW, PAID, id="tolerance-paid"),
        pytest.param(Invoice(100, 10), [tr(90, UNLOCKED)], NOW, COMPLETE, id="tolerance-complete"),
        pytest.param(Invoice(100, 10), [tr(89, UNLOCKED)], NOW, PARTIAL, id="below-tolerance"),
        pytest.param(Invoice(0), [], NOW, COMPLETE, id="any-amount-complete"),
        pytest.param(Invoice(100, 100), [], NOW, COMPLETE, id="all-tolerated"),
        pytest.param(Invoice(100, 0, EXPIRY), [], EXPIRY - 1, WAITING, id="before-expiry"),
        pytest.param(Invoice(100, 0, EXPIRY), [], EXPIRY, EXPIRED, id="at-expiry"),
        pytest.param(Invoice(100, 0, EXPIRY), [tr(40, seen=EARLY)], LATE, EXPIRED, id="part-exp"),
        pytest.param(Invoice(100, 0, EXPIRY), [tr(100, seen=EARLY)], LATE, PAID, id="paid-in-time"),
        pytest.param(
            Invoice(100, 0, EXPIRY),
            [tr(100, UNLOCKED, seen=EARLY)],
            LATE,
            COMPLETE,
            id="complete-in-time-after-expiry",
        ),
        pytest.param(
            Invoice(100, 0, EXPIRY), [tr(100, seen=EXPIRY)], LATE, PAID_LATE, id="late-at-expiry"
        ),
        # The wallet's times are whole seconds: seen in the second that holds a
        # fractional expiry (maybe after "expired" was announced) is late; the second
        # before is in time.
        pytest.param(
            Invoice(100, 0, EXPIRY + 0.9),
            [tr(100, seen=EXPIRY)],
            LATE,
            PAID_LATE,
            id="late-in-the-expiry-second",
        ),
        pytest.param(
            Invoice(100, 0, EXPIRY + 0.9),
            [tr(100, seen=EXPIRY - 1)],
            LATE,
            PAID,
            id="in-time-the-second-before",
        ),
        pytest.param(
            Invoice(100, 0, EXPIRY), [tr(100, UNLOCKED, seen=LATE)], LATE, PAID_LATE, id="late"
        ),
        pytest.param(
            Invoice(100, 0, EXPIRY),
            [tr(40, seen=EARLY), tr(60, seen=LATE, tx="b")],
            LATE,
            PAID_LATE,
            id="rest-late",
        ),
        pytest.param(
            Invoice(100, 0, EXPIRY),
            [tr(40, seen=LATE)],
            LATE,
            EXPIRED,
            id="late-partial-stays-expired",
        ),
        pytest.param(
            Invoice(100, 0, None, COMPLETE), [tr(100, GONE)], NOW, COMPLETE, id="complete-sticks"
        ),
        pytest.param(
            Invoice(100, 0, EXPIRY, PAID),
            [tr(100, GONE, seen=EARLY)],
            LATE,
            EXPIRED,
            id="paid-then-gone-expires",
        ),
    ],
)
def test_status_of(
    invoice: Invoice, transfers: list[Transfer], now: int, expected: InvoiceStatus
) -> None:
    """Each status from its rule: threshold, in-time sightings, the clock, complete sticks."""
    assert status_of(invoice, transfers, now) is expected


def test_due_and_complete_use_the_tolerance() -> None:
    """amount.due is max(0, expected - tolerance - total); complete needs expected - tolerance."""
    invoice = Invoice(100, 10)
    assert [due(invoice, t) for t in (0, 50, 90, 150)] == [90, 40, 0, 0]
    assert not is_complete(invoice, 89)
    assert is_complete(invoice, 90)
    assert is_complete(Invoice(100), 100) and not is_complete(Invoice(100), 99)


def test_initial_status() -> None:
    """A new request waits, unless nothing is required of it."""
    assert initial_status(100, 0) is WAITING
    assert initial_status(100, 99) is WAITING
    assert initial_status(100, 100) is COMPLETE
    assert initial_status(0, 0) is COMPLETE


@pytest.mark.parametrize(
    ("recorded", "expires_at", "now", "expected"),
    [
        (WAITING, None, NOW, WAITING),
        (WAITING, EXPIRY, EXPIRY - 1, WAITING),
        (WAITING, EXPIRY, EXPIRY, EXPIRED),
        (PARTIAL, EXPIRY, LATE, EXPIRED),
        (PAID, EXPIRY, LATE, PAID),
        (COMPLETE, EXPIRY, LATE, COMPLETE),
        (PAID_LATE, EXPIRY, LATE, PAID_LATE),
    ],
)
def test_displayed(
    recorded: InvoiceStatus, expires_at: int | None, now: int, expected: InvoiceStatus
) -> None:
    """The list's status: an open request past its expiry is expired."""
    assert displayed(recorded, expires_at, now) is expected


# --------------------------------------------------------------------------- reconcile


def run(
    invoices: Mapping[int, Invoice],
    stored: Iterable[Transfer] = (),
    observed: Iterable[Observation] = (),
    *,
    now: int = NOW,
) -> InvoiceReconciliation:
    """One tick at ``now`` with zero-conf on."""
    return reconcile_invoices(
        invoices=invoices,
        stored=list(stored),
        observed=list(observed),
        window_start=900,
        chain_height=CHAIN,
        now=now,
        zero_conf=True,
    )


def kinds(result: InvoiceReconciliation) -> list[tuple[str, InvoiceStatus]]:
    """(event kind, status) in order."""
    return [(e.kind, e.status) for e in result.events]


def test_expiry_without_transfers_emits_request_expired() -> None:
    """An open request past its expiry: one request.expired event with no transfer."""
    result = run({1: Invoice(100, 0, EXPIRY, WAITING)}, now=EXPIRY)
    assert kinds(result) == [(EXPIRED_EVENT, EXPIRED)]
    assert result.events[0].transfer is None
    assert result.statuses == {1: EXPIRED}


def test_expired_is_announced_once() -> None:
    """Once recorded as expired, a later tick announces nothing."""
    assert run({1: Invoice(100, 0, EXPIRY, EXPIRED)}, now=LATE).events == []
    assert run({1: Invoice(100, 0, EXPIRY, EXPIRED)}, now=LATE).statuses == {}


def test_no_expiry_no_expired_event() -> None:
    """Requests without expires_in never get request.expired (today's callbacks)."""
    result = run({1: Invoice(100, 0, None, WAITING)}, now=NOW + 10**7)
    assert result.events == [] and result.statuses == {}


def test_late_payment_after_unannounced_expiry() -> None:
    """A late payment in the tick that notices the expiry: expired first, then paid_late."""
    result = run({1: Invoice(100, 0, EXPIRY, WAITING)}, observed=[obs("a", 100, at=LATE)], now=LATE)
    assert kinds(result) == [(EXPIRED_EVENT, EXPIRED), ("transfer.pool", PAID_LATE)]
    assert result.events[0].coverage.total == 0
    assert result.statuses == {1: PAID_LATE}


def test_late_payment_after_announced_expiry() -> None:
    """After request.expired, the late payment is announced as paid_late, with no new expiry."""
    result = run({1: Invoice(100, 0, EXPIRY, EXPIRED)}, observed=[obs("a", 100, at=LATE)], now=LATE)
    assert kinds(result) == [("transfer.pool", PAID_LATE)]


def test_in_time_sighting_noticed_after_expiry_is_not_expired() -> None:
    """A transfer the wallet saw before the expiry counts in time even if we tick later."""
    result = run(
        {1: Invoice(100, 0, EXPIRY, WAITING)}, observed=[obs("a", 100, at=EARLY)], now=LATE
    )
    assert kinds(result) == [("transfer.pool", PAID)]
    assert result.statuses == {1: PAID}


def test_pool_before_expiry_mined_after_is_paid() -> None:
    """Seen in the pool in time, mined after the expiry: paid, then complete, never late."""
    invoice = Invoice(100, 0, EXPIRY, WAITING)
    first = run({1: invoice}, observed=[obs("a", 100, at=EARLY)], now=EARLY)
    (stored,) = first.changed
    mined = run(
        {1: Invoice(100, 0, EXPIRY, PAID)},
        [stored],
        [obs("a", 100, height=CHAIN - 2, at=LATE)],
        now=LATE,
    )
    assert kinds(mined) == [("transfer.confirmed", PAID)]
    assert mined.changed[0].seen_at == EARLY
    unlocked = run(
        {1: Invoice(100, 0, EXPIRY, PAID)},
        mined.changed,
        [obs("a", 100, height=CHAIN - SPENDABLE_AGE, at=LATE)],
        now=LATE + 50,
    )
    assert kinds(unlocked) == [("transfer.unlocked", COMPLETE)]


def test_partial_then_rest() -> None:
    """Partial, then the rest: statuses partial then paid; due follows."""
    invoice = Invoice(100, 0, EXPIRY, WAITING)
    first = run({1: invoice}, observed=[obs("a", 40)])
    assert kinds(first) == [("transfer.pool", PARTIAL)]
    second = run({1: Invoice(100, 0, EXPIRY, PARTIAL)}, first.changed, [obs("a", 40), obs("b", 60)])
    assert kinds(second) == [("transfer.pool", PAID)]


def test_tolerance_makes_underpaid_request_complete() -> None:
    """99 of 100 with a tolerance of 1: complete once unlocked."""
    result = run({1: Invoice(100, 1)}, observed=[obs("a", 99, height=CHAIN - SPENDABLE_AGE)])
    assert kinds(result) == [("transfer.confirmed", PAID), ("transfer.unlocked", COMPLETE)]


def test_two_requests_independent() -> None:
    """One request expires while another is paid in the same tick."""
    result = run(
        {1: Invoice(100, 0, EXPIRY, WAITING), 2: Invoice(50, 0, None, WAITING)},
        observed=[obs("b", 50, index=2, at=LATE)],
        now=LATE,
    )
    assert [(e.subaddr_index, e.kind) for e in result.events] == [
        (1, EXPIRED_EVENT),
        (2, "transfer.pool"),
    ]
    assert result.statuses == {1: EXPIRED, 2: PAID}


def test_a_state_the_wallet_never_showed_does_not_complete_a_request() -> None:
    """Found by the property test_final_status_equals_status_of_stored_rows.

    In one tick a pool payment in time stops being a double spend (a change without an
    event of its own, in force before the events) and the late unlocked payment is gone
    (an event). Before the first event, both count: in-time money covers it and unlocked
    money covers it. That state never existed; ``complete`` must not stick from it."""
    invoice = Invoice(expected=2, expires_at=EXPIRY, recorded=PAID_LATE)
    in_time = tr(2, POOL, seen=EARLY, tx="aa", double_spend=True)  # not counted yet
    late = tr(2, UNLOCKED, seen=LATE, tx="bb")
    assert status_of(invoice, [in_time, late], LATE) is PAID_LATE
    result = run({1: invoice}, [in_time, late], [obs("aa", 2, at=EARLY)], now=LATE)
    assert kinds(result) == [("transfer.gone", PAID)]
    assert result.statuses == {1: PAID}
    assert status_of(invoice, result.changed, LATE) is PAID  # what a read computes


def test_between_two_losses_of_a_tick_a_request_is_at_most_paid() -> None:
    """As above with two transfers gone in the tick: after the first loss the late money
    still counts, a state the wallet never showed; that event says ``paid``, not
    ``complete``, and the request ends ``paid``."""
    invoice = Invoice(expected=2, expires_at=EXPIRY, recorded=PAID_LATE)
    in_time = tr(2, POOL, seen=EARLY, tx="aa", double_spend=True)
    pool = tr(1, POOL, seen=LATE, tx="cc")  # announced (zero-conf), then gone
    late = tr(2, UNLOCKED, seen=LATE, tx="bb")
    assert status_of(invoice, [in_time, pool, late], LATE) is PAID_LATE
    result = run({1: invoice}, [in_time, pool, late], [obs("aa", 2, at=EARLY)], now=LATE)
    assert kinds(result) == [("transfer.gone", PAID), ("transfer.gone", PAID)]
    assert result.statuses == {1: PAID}
