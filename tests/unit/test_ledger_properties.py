"""Hypothesis properties of ``xmrgate.domain.ledger``: coverage and reconcile invariants."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from testsupport.properties import examples
from xmrgate.domain.ledger import (
    Observation,
    Reconciliation,
    Transfer,
    TransferState,
    coverage,
    reconcile,
)

NOW = 1_700_000_000
INDICES = (1, 2, 3)
TX_HASHES = ("a1", "b2", "c3", "d4", "e5")
MAX_AMOUNT = 10**13  # 10 XMR in piconero

# No example database: the tests write nothing to the working tree.
# examples(): the full number in `make test`, a quarter in `make unit` (testsupport/properties.py).
FAST = settings(max_examples=examples(200), deadline=None, database=None)
RECONCILE = settings(max_examples=examples(150), deadline=None, database=None)

amounts = st.integers(min_value=0, max_value=MAX_AMOUNT)
states = st.sampled_from(list(TransferState))


@st.composite
def transfers(draw: st.DrawFn, *, double_spend: bool | None = None) -> Transfer:
    """Any stored transfer (states and heights need not be consistent for coverage)."""
    state = draw(states)
    height = 0 if state is TransferState.POOL else draw(st.integers(1, 300))
    return Transfer(
        tx_hash=draw(st.sampled_from(TX_HASHES)),
        subaddr_index=draw(st.sampled_from(INDICES)),
        amount=draw(amounts),
        fee=draw(st.integers(0, 10**9)),
        height=height,
        timestamp=draw(st.integers(NOW - 10**6, NOW)),
        unlock_time=draw(st.sampled_from([0, 0, 0, 150, NOW + 100])),
        double_spend_seen=draw(st.booleans()) if double_spend is None else double_spend,
        state=state,
    )


@st.composite
def observation_sets(draw: st.DrawFn, max_height: int = 300) -> list[Observation]:
    """What get_transfers may report: per key at most one mined entry and one pool entry."""
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from(TX_HASHES), st.sampled_from((*INDICES, 9))),
            unique=True,
            max_size=8,
        )
    )
    result: list[Observation] = []
    for tx_hash, index in keys:
        entries: list[Observation] = []
        amount = draw(amounts)
        timestamp = draw(st.integers(NOW - 10**6, NOW))
        unlock_time = draw(st.sampled_from([0, 0, 0, 150, NOW + 100]))
        mined = draw(st.booleans())
        listed_in_pool = not mined or draw(st.booleans())  # a mined tx still in the pool
        if mined:
            entries.append(
                Observation(
                    tx_hash=tx_hash,
                    subaddr_index=index,
                    amount=amount,
                    fee=1,
                    height=draw(st.integers(1, max_height)),
                    timestamp=timestamp,
                    unlock_time=unlock_time,
                    double_spend_seen=False,
                    in_pool=False,
                )
            )
        if listed_in_pool:
            entries.append(
                Observation(
                    tx_hash=tx_hash,
                    subaddr_index=index,
                    amount=amount,
                    fee=1,
                    height=0,
                    timestamp=timestamp,
                    unlock_time=unlock_time,
                    double_spend_seen=draw(st.booleans()),
                    in_pool=True,
                )
            )
        # The wallet lists pool and mined entries in no particular order.
        result.extend(draw(st.permutations(entries)))
    return result


@st.composite
def stored_sets(draw: st.DrawFn) -> list[Transfer]:
    """Stored transfers of the known requests, unique per (tx, index)."""
    rows = draw(st.lists(transfers(), max_size=8, unique_by=lambda t: (t.tx_hash, t.subaddr_index)))
    return [t for t in rows if t.subaddr_index in INDICES]


expectations = st.fixed_dictionaries({i: st.integers(0, MAX_AMOUNT) for i in INDICES})
chain_heights = st.integers(0, 400)


def run(
    expected: dict[int, int],
    stored: Iterable[Transfer],
    observed: Iterable[Observation],
    *,
    window: int,
    chain: int,
    zero_conf: bool,
) -> Reconciliation:
    """Reconcile at a fixed ``now``."""
    return reconcile(
        expected_by_index=expected,
        stored=list(stored),
        observed=list(observed),
        window_start=window,
        chain_height=chain,
        now=NOW,
        zero_conf=zero_conf,
    )


def apply(stored: Iterable[Transfer], changed: Iterable[Transfer]) -> list[Transfer]:
    """What the store holds after writing ``changed``."""
    rows = {t.key: t for t in stored}
    rows.update({t.key: t for t in changed})
    return list(rows.values())


@FAST
@given(st.integers(0, 2 * MAX_AMOUNT), st.lists(transfers(double_spend=False), max_size=12))
def test_totals_non_negative_and_unlocked_within_total(
    expected: int, items: list[Transfer]
) -> None:
    """Without double spends, totals are never negative and unlocked never exceeds total."""
    result = coverage(expected, items)
    assert 0 <= result.unlocked <= result.total
    assert result.expected == expected


@FAST
@given(st.integers(0, 2 * MAX_AMOUNT), st.lists(transfers(), max_size=12))
def test_unlocked_within_total_even_with_double_spends(
    expected: int, items: list[Transfer]
) -> None:
    """Double-spent pool transfers never make unlocked exceed total."""
    result = coverage(expected, items)
    assert 0 <= result.unlocked <= result.total


@FAST
@given(st.integers(0, 2 * MAX_AMOUNT), st.lists(transfers(), max_size=12), st.data())
def test_coverage_independent_of_order(
    expected: int, items: list[Transfer], data: st.DataObject
) -> None:
    """Coverage does not depend on the order of the transfers."""
    shuffled = data.draw(st.permutations(items))
    assert coverage(expected, shuffled) == coverage(expected, items)


@FAST
@given(st.integers(0, 2 * MAX_AMOUNT), st.lists(transfers(), max_size=12))
def test_complete_is_unlocked_reaching_expected(expected: int, items: list[Transfer]) -> None:
    """complete is exactly unlocked >= expected."""
    result = coverage(expected, items)
    assert result.complete is (result.unlocked >= expected)


@RECONCILE
@given(
    expectations,
    stored_sets(),
    observation_sets(),
    st.integers(0, 300),
    chain_heights,
    st.booleans(),
    st.data(),
)
def test_reconcile_independent_of_observation_order(
    expected: dict[int, int],
    stored: list[Transfer],
    observed: list[Observation],
    window: int,
    chain: int,
    zero_conf: bool,
    data: st.DataObject,
) -> None:
    """Reconcile writes the same rows and sends the same events whatever the report order."""
    first = run(expected, stored, observed, window=window, chain=chain, zero_conf=zero_conf)
    # Check both the given store and the store one tick later (steady state).
    for rows in (stored, apply(stored, first.changed)):
        shuffled = data.draw(st.permutations(observed))
        a = run(expected, rows, observed, window=window, chain=chain, zero_conf=zero_conf)
        b = run(expected, rows, shuffled, window=window, chain=chain, zero_conf=zero_conf)
        assert sorted(a.changed, key=lambda t: t.key) == sorted(b.changed, key=lambda t: t.key)
        assert a.events == b.events


@RECONCILE
@given(
    expectations,
    stored_sets(),
    observation_sets(),
    st.integers(0, 300),
    chain_heights,
    st.booleans(),
)
def test_reconcile_reaches_fixed_point(
    expected: dict[int, int],
    stored: list[Transfer],
    observed: list[Observation],
    window: int,
    chain: int,
    zero_conf: bool,
) -> None:
    """Applying reconcile's changes and reconciling again yields no changes and no events."""
    first = run(expected, stored, observed, window=window, chain=chain, zero_conf=zero_conf)
    stored_after = apply(stored, first.changed)
    second = run(expected, stored_after, observed, window=window, chain=chain, zero_conf=zero_conf)
    assert second.changed == []
    assert second.events == []


@RECONCILE
@given(
    expectations,
    stored_sets(),
    observation_sets(),
    st.integers(0, 300),
    chain_heights,
    st.booleans(),
)
def test_events_only_for_changed_transfers_of_known_requests(
    expected: dict[int, int],
    stored: list[Transfer],
    observed: list[Observation],
    window: int,
    chain: int,
    zero_conf: bool,
) -> None:
    """Every event belongs to a known request and to a transfer that was written."""
    result = run(expected, stored, observed, window=window, chain=chain, zero_conf=zero_conf)
    changed_keys = {t.key for t in result.changed}
    for event in result.events:
        assert event.subaddr_index in expected
        assert event.transfer.key in changed_keys
        assert event.coverage.expected == expected[event.subaddr_index]
    indices = [e.subaddr_index for e in result.events]
    assert indices == sorted(indices)


@RECONCILE
@given(
    expectations,
    observation_sets(max_height=200),
    st.lists(st.integers(0, 40), min_size=2, max_size=6),
    st.booleans(),
)
def test_complete_is_monotone_as_chain_grows(
    expected: dict[int, int],
    observed: list[Observation],
    steps: list[int],
    zero_conf: bool,
) -> None:
    """While no transfer disappears, complete never flips back as the chain height grows."""
    stored: list[Transfer] = []
    chain = 200
    was_complete = {i: False for i in INDICES}
    for step in steps:
        chain += step
        result = run(expected, stored, observed, window=0, chain=chain, zero_conf=zero_conf)
        assert all(t.state is not TransferState.GONE for t in result.changed)
        in_tick = dict(was_complete)
        for event in result.events:
            assert event.coverage.complete or not in_tick[event.subaddr_index]
            in_tick[event.subaddr_index] = event.coverage.complete
        stored = apply(stored, result.changed)
        for index in INDICES:
            rows = [t for t in stored if t.subaddr_index == index]
            now_complete = coverage(expected[index], rows).complete
            assert now_complete or not was_complete[index]
            was_complete[index] = now_complete


@RECONCILE
@given(
    expectations,
    stored_sets(),
    observation_sets(),
    st.integers(0, 300),
    chain_heights,
    st.booleans(),
)
def test_last_event_coverage_equals_stored_coverage(
    expected: dict[int, int],
    stored: list[Transfer],
    observed: list[Observation],
    window: int,
    chain: int,
    zero_conf: bool,
) -> None:
    """A request's last event carries the coverage its stored transfers have after the tick."""
    result = run(expected, stored, observed, window=window, chain=chain, zero_conf=zero_conf)
    stored_after = apply(stored, result.changed)
    last = {event.subaddr_index: event for event in result.events}
    for index, event in last.items():
        rows = [t for t in stored_after if t.subaddr_index == index]
        assert event.coverage == coverage(expected[index], rows)
