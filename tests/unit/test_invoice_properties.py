"""Hypothesis properties of the request lifecycle (``xmrgate.domain.invoice``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from tests.unit.test_ledger_properties import (
    INDICES,
    MAX_AMOUNT,
    NOW,
    apply,
    observation_sets,
    stored_sets,
)
from testsupport.properties import examples
from xmrgate.domain.invoice import (
    AFTER_EXPIRY,
    EXPIRED_EVENT,
    Invoice,
    InvoiceReconciliation,
    InvoiceStatus,
    reconcile_invoices,
    status_of,
)
from xmrgate.domain.ledger import Observation, Transfer, counts_toward_total

# examples(): the full number in `make test`, a quarter in `make unit` (testsupport/properties.py).
PROPS = settings(max_examples=examples(150), deadline=None, database=None)

statuses = st.sampled_from(list(InvoiceStatus))
expiries = st.one_of(st.none(), st.integers(NOW - 10**6, NOW + 10**3))


@st.composite
def invoices(draw: st.DrawFn) -> dict[int, Invoice]:
    """Terms of the three requests: amount, tolerance, expiry, recorded status."""
    found = {}
    for index in INDICES:
        expected = draw(st.integers(0, MAX_AMOUNT))
        found[index] = Invoice(
            expected=expected,
            tolerance=draw(st.integers(0, expected)),
            expires_at=draw(expiries),
            recorded=draw(statuses),
        )
    return found


def tick(
    terms: dict[int, Invoice],
    stored: list[Transfer],
    observed: list[Observation],
    *,
    chain: int,
    now: int,
    zero_conf: bool = True,
) -> InvoiceReconciliation:
    """One tick with window 0 (everything may change)."""
    return reconcile_invoices(
        invoices=terms,
        stored=stored,
        observed=observed,
        window_start=0,
        chain_height=chain,
        now=now,
        zero_conf=zero_conf,
    )


@PROPS
@given(invoices(), stored_sets(), observation_sets(), st.integers(0, 400), st.randoms())
def test_same_events_whatever_the_order_of_transfers(
    terms: dict[int, Invoice],
    stored: list[Transfer],
    observed: list[Observation],
    chain: int,
    rng: random.Random,
) -> None:
    """Shuffling the wallet's report and the stored rows changes no event, status or row."""
    a = tick(terms, stored, observed, chain=chain, now=NOW)
    shuffled_obs = list(observed)
    shuffled_stored = list(stored)
    rng.shuffle(shuffled_obs)
    rng.shuffle(shuffled_stored)
    b = tick(terms, shuffled_stored, shuffled_obs, chain=chain, now=NOW)
    assert a.events == b.events
    assert a.statuses == b.statuses
    assert sorted(a.changed, key=lambda t: t.key) == sorted(b.changed, key=lambda t: t.key)


@PROPS
@given(
    invoices(),
    stored_sets(),
    st.lists(observation_sets(), min_size=1, max_size=4),
    st.booleans(),
)
def test_status_never_leaves_complete(
    terms: dict[int, Invoice],
    stored: list[Transfer],
    reports: list[list[Observation]],
    zero_conf: bool,
) -> None:
    """Over ticks (chain and clock moving on), once complete a request stays complete."""
    chain, now = 100, NOW
    for observed in reports:
        result = tick(terms, stored, observed, chain=chain, now=now, zero_conf=zero_conf)
        for index, invoice in terms.items():
            mine = [e.status for e in result.events if e.subaddr_index == index]
            if invoice.recorded is InvoiceStatus.COMPLETE:
                assert set(mine) <= {InvoiceStatus.COMPLETE}
                assert index not in result.statuses
            if InvoiceStatus.COMPLETE in mine:
                after = mine[mine.index(InvoiceStatus.COMPLETE) :]
                assert set(after) == {InvoiceStatus.COMPLETE}
        stored = apply(stored, result.changed)
        terms = {
            i: Invoice(t.expected, t.tolerance, t.expires_at, result.statuses.get(i, t.recorded))
            for i, t in terms.items()
        }
        chain += 7
        now += 600


@PROPS
@given(invoices(), stored_sets(), observation_sets(), st.integers(0, 400), st.integers(0, 2000))
def test_paid_late_only_after_expiry(
    terms: dict[int, Invoice],
    stored: list[Transfer],
    observed: list[Observation],
    chain: int,
    later: int,
) -> None:
    """paid_late (and request.expired) only for a request with an expiry that has passed."""
    now = NOW + later
    result = tick(terms, stored, observed, chain=chain, now=now)
    final = apply(stored, result.changed)
    for event in result.events:
        expires_at = terms[event.subaddr_index].expires_at
        if event.status is InvoiceStatus.PAID_LATE or event.kind == EXPIRED_EVENT:
            assert expires_at is not None and now >= expires_at
    for index, status in result.statuses.items():
        invoice = terms[index]
        if status is InvoiceStatus.PAID_LATE:
            assert invoice.expires_at is not None and now >= invoice.expires_at
            rows = [t for t in final if t.subaddr_index == index and counts_toward_total(t)]
            in_time = sum(t.amount for t in rows if t.seen_at < invoice.expires_at)
            assert in_time < invoice.threshold
            assert any(t.seen_at >= invoice.expires_at for t in rows)


@PROPS
@given(invoices(), stored_sets(), observation_sets(), st.integers(0, 400))
def test_final_status_equals_status_of_stored_rows(
    terms: dict[int, Invoice],
    stored: list[Transfer],
    observed: list[Observation],
    chain: int,
) -> None:
    """What the tick records is what a read computes from the rows it wrote."""
    # Recorded statuses as a previous tick left them (complete sticks even if rows went).
    terms = {
        i: replace(t, recorded=status_of(t, [r for r in stored if r.subaddr_index == i], NOW))
        for i, t in terms.items()
    }
    result = tick(terms, stored, observed, chain=chain, now=NOW)
    final = apply(stored, result.changed)
    for index, invoice in terms.items():
        rows = [t for t in final if t.subaddr_index == index]
        recorded = result.statuses.get(index, invoice.recorded)
        assert recorded is not None
        assert status_of(invoice, rows, NOW) is recorded
        entered = recorded in AFTER_EXPIRY and invoice.recorded not in AFTER_EXPIRY
        expired_events = [
            e for e in result.events if e.subaddr_index == index and e.kind == EXPIRED_EVENT
        ]
        assert len(expired_events) == (1 if entered and invoice.expires_at is not None else 0)


# No shrinking: the search only has to show that an example exists.
FIND = settings(max_examples=5000, database=None, deadline=None, phases=[Phase.generate])


def test_the_properties_reach_their_conditional_branches() -> None:
    """The properties above assert inside ``if``s; these searches, over the same
    strategies, show each branch is reachable (else ``find`` raises NoSuchExample)."""
    late_args = st.tuples(
        invoices(), stored_sets(), observation_sets(), st.integers(0, 400), st.integers(0, 2000)
    )

    def records(status: InvoiceStatus) -> Callable[[Any], bool]:
        def predicate(args: Any) -> bool:
            terms, stored, observed, chain, later = args
            result = tick(terms, stored, observed, chain=chain, now=NOW + later)
            return status in result.statuses.values()

        return predicate

    def announces(status: InvoiceStatus) -> Callable[[Any], bool]:
        def predicate(args: Any) -> bool:
            terms, stored, observed, chain, later = args
            result = tick(terms, stored, observed, chain=chain, now=NOW + later)
            return any(e.status is status for e in result.events)

        return predicate

    for check in (
        records(InvoiceStatus.PAID_LATE),
        announces(InvoiceStatus.PAID_LATE),
        announces(InvoiceStatus.COMPLETE),
        records(InvoiceStatus.EXPIRED),
    ):
        find(late_args, check, settings=FIND)
    find(
        invoices(),
        lambda t: InvoiceStatus.COMPLETE in {i.recorded for i in t.values()},
        settings=FIND,
    )
