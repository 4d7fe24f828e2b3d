"""Table-driven tests of the pure payment-state logic in ``xmrgate.domain.ledger``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import pytest

from xmrgate.domain.ledger import (
    LOCKED_TX_ALLOWED_DELTA_SECONDS,
    MAX_BLOCK_NUMBER,
    SPENDABLE_AGE,
    Coverage,
    EventKind,
    Observation,
    Reconciliation,
    Transfer,
    TransferState,
    coverage,
    is_unlocked,
    reconcile,
    state_of,
    visible_transfers,
    window_start,
)

POOL = TransferState.POOL
CONFIRMED = TransferState.CONFIRMED
UNLOCKED = TransferState.UNLOCKED
GONE = TransferState.GONE

E_POOL = EventKind.POOL
E_CONFIRMED = EventKind.CONFIRMED
E_UNLOCKED = EventKind.UNLOCKED
E_GONE = EventKind.GONE

CHAIN = 1000  # wallet height: blocks 0..999 are known
NOW = 1_700_000_000
WINDOW = 900
H_LOCKED = CHAIN - 5  # 5 confirmations: mined, still locked
H_UNLOCKED = CHAIN - SPENDABLE_AGE  # exactly 10 confirmations: spendable


def obs(
    tx: str = "aa",
    index: int = 1,
    amount: int = 100,
    height: int = 0,
    *,
    unlock_time: int = 0,
    double_spend: bool = False,
    in_pool: bool | None = None,
    timestamp: int = NOW,
    fee: int = 7,
) -> Observation:
    """An observation; ``height`` 0 means a pool entry."""
    return Observation(
        tx_hash=tx,
        subaddr_index=index,
        amount=amount,
        fee=fee,
        height=height,
        timestamp=timestamp,
        unlock_time=unlock_time,
        double_spend_seen=double_spend,
        in_pool=(height == 0) if in_pool is None else in_pool,
    )


def tr(
    tx: str = "aa",
    index: int = 1,
    amount: int = 100,
    height: int = 0,
    state: TransferState = POOL,
    *,
    unlock_time: int = 0,
    double_spend: bool = False,
    timestamp: int = NOW,
    fee: int = 7,
) -> Transfer:
    """A stored transfer with the same defaults as ``obs``."""
    return Transfer(
        tx_hash=tx,
        subaddr_index=index,
        amount=amount,
        fee=fee,
        height=height,
        timestamp=timestamp,
        unlock_time=unlock_time,
        double_spend_seen=double_spend,
        state=state,
    )


def run(
    stored: Iterable[Transfer] = (),
    observed: Iterable[Observation] = (),
    *,
    expected: Mapping[int, int] | None = None,
    window: int = WINDOW,
    chain: int = CHAIN,
    now: int = NOW,
    zero_conf: bool = True,
) -> Reconciliation:
    """Reconcile with the module's defaults (request 1 expects 100)."""
    return reconcile(
        expected_by_index={1: 100} if expected is None else expected,
        stored=list(stored),
        observed=list(observed),
        window_start=window,
        chain_height=chain,
        now=now,
        zero_conf=zero_conf,
    )


def apply(stored: Iterable[Transfer], changed: Iterable[Transfer]) -> list[Transfer]:
    """What the store holds after writing ``changed``."""
    rows = {t.key: t for t in stored}
    rows.update({t.key: t for t in changed})
    return list(rows.values())


def changed_states(result: Reconciliation) -> list[tuple[str, int, TransferState]]:
    """The changed transfers as sorted (tx, index, state) triples."""
    return sorted((t.tx_hash, t.subaddr_index, t.state) for t in result.changed)


def event_kinds(result: Reconciliation) -> list[tuple[int, EventKind, str]]:
    """The events as (index, kind, tx) in emitted order."""
    return [(e.subaddr_index, e.kind, e.transfer.tx_hash) for e in result.events]


# --------------------------------------------------------------------------- is_unlocked


@pytest.mark.parametrize(
    ("height", "unlock_time", "chain_height", "now", "expected"),
    [
        pytest.param(990, 0, 999, NOW, False, id="9-confirmations-locked"),
        pytest.param(990, 0, 1000, NOW, True, id="10-confirmations-unlocked"),
        pytest.param(990, 0, 1001, NOW, True, id="11-confirmations-unlocked"),
        pytest.param(990, 0, 990, NOW, False, id="0-confirmations-locked"),
        pytest.param(990, 0, 500, NOW, False, id="chain-behind-transfer-locked"),
        pytest.param(0, 0, 10**6, NOW, False, id="pool-height-0-never"),
        pytest.param(0, 0, 10, NOW, False, id="pool-height-0-at-chain-10"),
        pytest.param(990, 1005, 1004, NOW, False, id="unlock-height-not-reached"),
        pytest.param(990, 1005, 1005, NOW, True, id="unlock-height-reached"),
        pytest.param(990, 1005, 1006, NOW, True, id="unlock-height-passed"),
        pytest.param(995, 500, 1000, NOW, False, id="unlock-height-past-but-5-confirmations"),
        pytest.param(
            990, MAX_BLOCK_NUMBER - 1, 1000, NOW, False, id="just-below-max-is-block-height"
        ),
        pytest.param(990, NOW - 1, 1000, NOW, True, id="unlock-timestamp-past"),
        pytest.param(990, NOW, 1000, NOW, True, id="unlock-timestamp-now"),
        pytest.param(
            990,
            NOW + LOCKED_TX_ALLOWED_DELTA_SECONDS,
            1000,
            NOW,
            True,
            id="unlock-timestamp-at-leeway",
        ),
        pytest.param(
            990,
            NOW + LOCKED_TX_ALLOWED_DELTA_SECONDS + 1,
            1000,
            NOW,
            False,
            id="unlock-timestamp-beyond-leeway",
        ),
        pytest.param(
            995, NOW - 1, 1000, NOW, False, id="unlock-timestamp-past-but-5-confirmations"
        ),
        pytest.param(
            990, MAX_BLOCK_NUMBER, 1000, MAX_BLOCK_NUMBER, True, id="max-block-number-is-timestamp"
        ),
    ],
)
def test_is_unlocked(
    height: int, unlock_time: int, chain_height: int, now: int, expected: bool
) -> None:
    """Outputs unlock after 10 confirmations and once unlock_time (height or time) allows."""
    assert is_unlocked(height, unlock_time, chain_height, now) is expected


def test_leeway_is_120_seconds() -> None:
    """A time-locked output may be spent up to 120 s before its unlock_time (wallet2's V2 delta)."""
    assert is_unlocked(990, NOW + 120, CHAIN, NOW)
    assert not is_unlocked(990, NOW + 121, CHAIN, NOW)


@pytest.mark.parametrize("height", [1, 50, 990, 12345])
def test_unlock_boundary_is_exactly_spendable_age(height: int) -> None:
    """Height h is unlocked exactly when chain_height - h >= 10."""
    for chain_height in range(height, height + 2 * SPENDABLE_AGE):
        assert is_unlocked(height, 0, chain_height, NOW) is (chain_height - height >= 10)


# --------------------------------------------------------------------------- state_of


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(obs(height=0), POOL, id="pool"),
        pytest.param(obs(height=0, in_pool=False), POOL, id="height-0-not-in-pool"),
        pytest.param(obs(height=990, in_pool=True), POOL, id="in-pool-flag-wins"),
        pytest.param(obs(height=CHAIN - 1), CONFIRMED, id="1-confirmation"),
        pytest.param(obs(height=CHAIN - 9), CONFIRMED, id="9-confirmations"),
        pytest.param(obs(height=CHAIN - 10), UNLOCKED, id="10-confirmations"),
        pytest.param(obs(height=CHAIN - 10, unlock_time=CHAIN + 1), CONFIRMED, id="height-lock"),
        pytest.param(obs(height=CHAIN - 10, unlock_time=NOW + 10**6), CONFIRMED, id="time-lock"),
        pytest.param(obs(height=CHAIN - 10, double_spend=True), UNLOCKED, id="mined-double-spend"),
    ],
)
def test_state_of(observation: Observation, expected: TransferState) -> None:
    """The state follows from pool membership, confirmations and unlock_time."""
    assert state_of(observation, CHAIN, NOW) is expected


# --------------------------------------------------------------------------- coverage


@pytest.mark.parametrize(
    ("expected", "transfers", "total", "unlocked", "complete"),
    [
        pytest.param(100, [], 0, 0, False, id="nothing-paid"),
        pytest.param(0, [], 0, 0, True, id="expected-0-complete-at-once"),
        pytest.param(0, [tr(amount=5)], 5, 0, True, id="expected-0-with-pool"),
        pytest.param(100, [tr()], 100, 0, False, id="pool-counts-in-total"),
        pytest.param(100, [tr(double_spend=True)], 0, 0, False, id="pool-double-spend-excluded"),
        pytest.param(
            100,
            [tr(height=H_LOCKED, state=CONFIRMED, double_spend=True)],
            100,
            0,
            False,
            id="confirmed-double-spend-counts",
        ),
        pytest.param(100, [tr(height=995, state=CONFIRMED)], 100, 0, False, id="confirmed-locked"),
        pytest.param(100, [tr(height=990, state=UNLOCKED)], 100, 100, True, id="unlocked-exact"),
        pytest.param(
            100, [tr(height=990, state=UNLOCKED, amount=99)], 99, 99, False, id="unlocked-short-1"
        ),
        pytest.param(
            100, [tr(height=990, state=UNLOCKED, amount=150)], 150, 150, True, id="overpaid"
        ),
        pytest.param(100, [tr(height=990, state=GONE)], 0, 0, False, id="gone-excluded"),
        pytest.param(
            100,
            [
                tr("a", amount=60, height=980, state=UNLOCKED),
                tr("b", amount=40, height=995, state=CONFIRMED),
            ],
            100,
            60,
            False,
            id="total-covered-but-not-unlocked",
        ),
        pytest.param(
            100,
            [
                tr("a", amount=60, height=980, state=UNLOCKED),
                tr("b", amount=40, height=985, state=UNLOCKED),
                tr("c", amount=1000, height=986, state=GONE),
                tr("d", amount=7, double_spend=True),
                tr("e", amount=3),
            ],
            103,
            100,
            True,
            id="mixed",
        ),
    ],
)
def test_coverage(
    expected: int, transfers: list[Transfer], total: int, unlocked: int, complete: bool
) -> None:
    """Totals skip gone and double-spent pool transfers; complete means unlocked >= expected."""
    result = coverage(expected, transfers)
    assert result == Coverage(expected=expected, total=total, unlocked=unlocked)
    assert result.complete is complete


# --------------------------------------------------------------------------- Transfer


@pytest.mark.parametrize(
    ("transfer", "chain_height", "confirmations", "locked"),
    [
        pytest.param(tr(), CHAIN, 0, True, id="pool"),
        pytest.param(tr(height=990, state=GONE), CHAIN, 0, True, id="gone"),
        pytest.param(tr(height=CHAIN - 1, state=CONFIRMED), CHAIN, 1, True, id="just-mined"),
        pytest.param(tr(height=995, state=CONFIRMED), CHAIN, 5, True, id="confirmed"),
        pytest.param(tr(height=990, state=UNLOCKED), CHAIN, 10, False, id="unlocked"),
        pytest.param(tr(height=990, state=CONFIRMED), 900, 0, True, id="chain-height-stale"),
        pytest.param(tr(height=0, state=CONFIRMED), CHAIN, 0, True, id="confirmed-height-0"),
    ],
)
def test_transfer_confirmations_and_locked(
    transfer: Transfer, chain_height: int, confirmations: int, locked: bool
) -> None:
    """Confirmations are chain_height - height for mined transfers; only unlocked is unlocked."""
    assert transfer.confirmations(chain_height) == confirmations
    assert transfer.locked is locked


def test_transfer_key() -> None:
    """A transfer is identified by its tx hash and subaddress index."""
    assert tr("ff", index=3).key == ("ff", 3)


# --------------------------------------------------------------------------- visible_transfers

_VISIBLE = [
    tr("pool", height=0, state=POOL),
    tr("h15", height=15, state=CONFIRMED),
    tr("h5", height=5, state=UNLOCKED),
    tr("h10", height=10, state=UNLOCKED),
    tr("gone", height=10, state=GONE),
    tr("pool-gone", height=0, state=GONE),
]


@pytest.mark.parametrize(
    ("min_height", "max_height", "expected"),
    [
        pytest.param(None, None, ["h5", "h10", "h15", "pool"], id="all-pool-last"),
        pytest.param(10, None, ["h10", "h15"], id="min-inclusive-hides-pool"),
        pytest.param(None, 10, ["h5", "h10", "pool"], id="max-inclusive"),
        pytest.param(10, 10, ["h10"], id="min-equals-max"),
        pytest.param(0, None, ["h5", "h10", "h15", "pool"], id="min-0-keeps-pool"),
        pytest.param(1, None, ["h5", "h10", "h15"], id="min-1-hides-pool"),
        pytest.param(16, None, [], id="min-above-all"),
        pytest.param(11, 14, [], id="empty-range"),
    ],
)
def test_visible_transfers(
    min_height: int | None, max_height: int | None, expected: list[str]
) -> None:
    """GET /receive lists non-gone transfers in [min, max], oldest first, pool last."""
    shown = visible_transfers(_VISIBLE, min_height, max_height)
    assert [t.tx_hash for t in shown] == expected


def test_visible_transfers_ties_by_timestamp_then_hash() -> None:
    """Transfers of one block are ordered by timestamp, then tx hash."""
    transfers = [
        tr("c", height=7, state=CONFIRMED, timestamp=2),
        tr("b", height=7, state=CONFIRMED, timestamp=1),
        tr("a", height=7, state=CONFIRMED, timestamp=2),
        tr("z", height=0, state=POOL, timestamp=0),
        tr("y", height=0, state=POOL, timestamp=0),
    ]
    assert [t.tx_hash for t in visible_transfers(transfers)] == ["b", "a", "c", "y", "z"]


# --------------------------------------------------------------------------- window_start


@pytest.mark.parametrize(
    ("last_synced", "lowest_pending", "margin", "expected"),
    [
        pytest.param(None, None, 10, 0, id="first-tick"),
        pytest.param(1000, None, 10, 990, id="last-synced-minus-margin"),
        pytest.param(None, 500, 10, 490, id="pending-only"),
        pytest.param(1000, 500, 10, 490, id="pending-lower"),
        pytest.param(500, 1000, 10, 490, id="synced-lower"),
        pytest.param(5, None, 10, 0, id="clamped-at-0"),
        pytest.param(10, None, 10, 0, id="exactly-0"),
        pytest.param(1000, None, 0, 1000, id="no-margin"),
        pytest.param(0, 0, 0, 0, id="zeros"),
    ],
)
def test_window_start(
    last_synced: int | None, lowest_pending: int | None, margin: int, expected: int
) -> None:
    """The scan starts at the lower of last synced and lowest pending height, minus the margin."""
    assert window_start(last_synced, lowest_pending, margin) == expected


# --------------------------------------------------------------------------- reconcile table


@dataclass(frozen=True)
class Case:
    """One reconcile scenario on request 1 (expects 100)."""

    stored: list[Transfer]
    observed: list[Observation]
    changed: list[tuple[str, int, TransferState]]
    events: list[tuple[int, EventKind, str]]
    zero_conf: bool = True


CASES = [
    pytest.param(
        Case([], [obs()], [("aa", 1, POOL)], [(1, E_POOL, "aa")]),
        id="new-pool-zero-conf",
    ),
    pytest.param(
        Case([], [obs()], [("aa", 1, POOL)], [], zero_conf=False),
        id="new-pool-no-zero-conf-silent",
    ),
    pytest.param(
        Case(
            [tr()],
            [obs(height=H_LOCKED)],
            [("aa", 1, CONFIRMED)],
            [(1, E_CONFIRMED, "aa")],
        ),
        id="pool-to-confirmed",
    ),
    pytest.param(
        Case(
            [tr()],
            [obs(height=H_LOCKED)],
            [("aa", 1, CONFIRMED)],
            [(1, E_CONFIRMED, "aa")],
            zero_conf=False,
        ),
        id="pool-to-confirmed-no-zero-conf",
    ),
    pytest.param(
        Case([], [obs(height=H_LOCKED)], [("aa", 1, CONFIRMED)], [(1, E_CONFIRMED, "aa")]),
        id="first-sighting-confirmed",
    ),
    pytest.param(
        Case(
            [],
            [obs(height=H_UNLOCKED)],
            [("aa", 1, UNLOCKED)],
            [(1, E_CONFIRMED, "aa"), (1, E_UNLOCKED, "aa")],
        ),
        id="first-sighting-unlocked",
    ),
    pytest.param(
        Case(
            [tr()],
            [obs(height=H_UNLOCKED)],
            [("aa", 1, UNLOCKED)],
            [(1, E_CONFIRMED, "aa"), (1, E_UNLOCKED, "aa")],
        ),
        id="pool-to-unlocked-in-one-tick",
    ),
    pytest.param(
        Case(
            [tr(height=H_UNLOCKED, state=CONFIRMED)],
            [obs(height=H_UNLOCKED)],
            [("aa", 1, UNLOCKED)],
            [(1, E_UNLOCKED, "aa")],
        ),
        id="confirmed-to-unlocked",
    ),
    pytest.param(Case([tr()], [obs()], [], []), id="unchanged-pool"),
    pytest.param(
        Case([tr(height=H_LOCKED, state=CONFIRMED)], [obs(height=H_LOCKED)], [], []),
        id="unchanged-confirmed",
    ),
    pytest.param(
        Case([tr(height=H_UNLOCKED, state=UNLOCKED)], [obs(height=H_UNLOCKED)], [], []),
        id="unchanged-unlocked",
    ),
    pytest.param(Case([], [], [], []), id="nothing-at-all"),
    pytest.param(
        Case(
            [tr(height=H_LOCKED, state=CONFIRMED)],
            [],
            [("aa", 1, GONE)],
            [(1, E_GONE, "aa")],
        ),
        id="confirmed-disappears-gone",
    ),
    pytest.param(
        Case(
            [tr(height=H_LOCKED, state=CONFIRMED)],
            [],
            [("aa", 1, GONE)],
            [(1, E_GONE, "aa")],
            zero_conf=False,
        ),
        id="confirmed-disappears-gone-no-zero-conf",
    ),
    pytest.param(
        Case(
            [tr(height=950, state=UNLOCKED)],
            [],
            [("aa", 1, GONE)],
            [(1, E_GONE, "aa")],
        ),
        id="unlocked-disappears-gone",
    ),
    pytest.param(
        Case(
            [tr(height=WINDOW, state=UNLOCKED)],
            [],
            [("aa", 1, GONE)],
            [(1, E_GONE, "aa")],
        ),
        id="disappears-at-window-start-gone",
    ),
    pytest.param(
        Case([tr(height=WINDOW - 1, state=UNLOCKED)], [], [], []),
        id="below-window-start-untouched",
    ),
    pytest.param(
        Case([tr(height=WINDOW - 1, state=CONFIRMED)], [], [], []),
        id="confirmed-below-window-start-untouched",
    ),
    pytest.param(
        Case([tr()], [], [("aa", 1, GONE)], [(1, E_GONE, "aa")]),
        id="pool-dropped-zero-conf",
    ),
    pytest.param(
        Case([tr()], [], [("aa", 1, GONE)], [], zero_conf=False),
        id="pool-dropped-no-zero-conf-silent",
    ),
    pytest.param(
        Case([tr(double_spend=True)], [], [("aa", 1, GONE)], [(1, E_GONE, "aa")]),
        id="double-spent-pool-dropped",
    ),
    pytest.param(
        Case([tr(height=H_LOCKED, state=GONE)], [], [], []),
        id="gone-stays-gone-silently",
    ),
    pytest.param(
        Case([tr(state=GONE)], [obs()], [("aa", 1, POOL)], [(1, E_POOL, "aa")]),
        id="gone-back-in-pool",
    ),
    pytest.param(
        Case([tr(state=GONE)], [obs()], [("aa", 1, POOL)], [], zero_conf=False),
        id="gone-back-in-pool-no-zero-conf",
    ),
    pytest.param(
        Case(
            [tr(height=H_LOCKED, state=GONE)],
            [obs(height=H_LOCKED)],
            [("aa", 1, CONFIRMED)],
            [(1, E_CONFIRMED, "aa")],
        ),
        id="gone-back-confirmed",
    ),
    pytest.param(
        Case(
            [tr(height=H_UNLOCKED, state=GONE)],
            [obs(height=H_UNLOCKED)],
            [("aa", 1, UNLOCKED)],
            [(1, E_CONFIRMED, "aa"), (1, E_UNLOCKED, "aa")],
        ),
        id="gone-back-unlocked",
    ),
    pytest.param(
        Case([tr(height=H_LOCKED, state=CONFIRMED)], [obs()], [("aa", 1, POOL)], []),
        id="reorg-back-to-pool-silent",
    ),
    pytest.param(
        Case(
            [tr(height=H_UNLOCKED, state=UNLOCKED)],
            [obs(height=H_LOCKED)],
            [("aa", 1, CONFIRMED)],
            [],
        ),
        id="reorg-to-higher-block-silent",
    ),
    pytest.param(
        Case([tr()], [obs(double_spend=True)], [("aa", 1, POOL)], [(1, E_POOL, "aa")]),
        id="double-spend-flag-announced-zero-conf",
    ),
    pytest.param(
        Case([tr()], [obs(double_spend=True)], [("aa", 1, POOL)], [], zero_conf=False),
        id="double-spend-flag-recorded-silently-no-zero-conf",
    ),
    pytest.param(
        Case([], [obs(index=7), obs(index=7, height=H_UNLOCKED, tx="bb")], [], []),
        id="unknown-subaddress-ignored",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_reconcile_transitions(case: Case) -> None:
    """Each transition writes the new state and announces the documented events."""
    result = run(case.stored, case.observed, zero_conf=case.zero_conf)
    assert changed_states(result) == sorted(case.changed)
    assert event_kinds(result) == case.events


@pytest.mark.parametrize("case", CASES)
def test_reconcile_is_idempotent(case: Case) -> None:
    """Feeding reconcile's own output back as ``stored`` yields no changes and no events."""
    first = run(case.stored, case.observed, zero_conf=case.zero_conf)
    second = run(apply(case.stored, first.changed), case.observed, zero_conf=case.zero_conf)
    assert second.changed == []
    assert second.events == []


# --------------------------------------------------------------------------- reconcile details


def test_new_transfer_copies_observation_fields() -> None:
    """A new transfer keeps amount, fee, height, timestamp, unlock_time and double-spend flag."""
    o = obs("cc", amount=123, height=H_LOCKED, fee=9, timestamp=NOW - 50, unlock_time=CHAIN + 3)
    (changed,) = run([], [o]).changed
    assert changed == Transfer(
        tx_hash="cc",
        subaddr_index=1,
        amount=123,
        fee=9,
        height=H_LOCKED,
        timestamp=NOW - 50,
        unlock_time=CHAIN + 3,
        double_spend_seen=False,
        state=CONFIRMED,
    )


def test_pool_entry_is_stored_with_height_0() -> None:
    """A pool observation is stored at height 0 even if the wallet reports a height."""
    (changed,) = run([], [obs(height=H_LOCKED, in_pool=True)]).changed
    assert (changed.height, changed.state) == (0, POOL)


def test_pool_event_carries_coverage() -> None:
    """A zero-conf pool event counts the pool amount in total but not in unlocked."""
    (event,) = run([], [obs(amount=100)]).events
    assert event.kind is E_POOL
    assert event.transfer.locked
    assert event.coverage == Coverage(expected=100, total=100, unlocked=0)
    assert not event.coverage.complete


def test_first_sighting_unlocked_announces_confirmed_then_unlocked() -> None:
    """An already unlocked first sighting yields CONFIRMED (locked) then UNLOCKED (complete)."""
    confirmed, unlocked = run([], [obs(amount=100, height=H_UNLOCKED)]).events
    assert confirmed.kind is E_CONFIRMED
    assert confirmed.transfer.state is CONFIRMED
    assert confirmed.transfer.locked is True
    assert confirmed.coverage == Coverage(expected=100, total=100, unlocked=0)
    assert not confirmed.coverage.complete
    assert unlocked.kind is E_UNLOCKED
    assert unlocked.transfer.state is UNLOCKED
    assert unlocked.transfer.locked is False
    assert unlocked.coverage == Coverage(expected=100, total=100, unlocked=100)
    assert unlocked.coverage.complete


def test_changed_transfer_has_final_state_even_with_two_events() -> None:
    """The written row holds the final state, not the intermediate one."""
    result = run([], [obs(height=H_UNLOCKED)])
    assert [t.state for t in result.changed] == [UNLOCKED]


def test_confirmed_to_unlocked_event_completes_request() -> None:
    """Unlocking the full amount flips complete in the UNLOCKED event."""
    stored = [tr(height=H_UNLOCKED, state=CONFIRMED)]
    (event,) = run(stored, [obs(height=H_UNLOCKED)]).events
    assert event.coverage == Coverage(expected=100, total=100, unlocked=100)
    assert event.coverage.complete


def test_gone_event_drops_coverage() -> None:
    """A transfer removed by a reorg no longer counts in the GONE event's coverage."""
    stored = [tr("a", amount=100, height=950, state=UNLOCKED)]
    (event,) = run(stored, []).events
    assert event.kind is E_GONE
    assert event.transfer.state is GONE
    assert event.transfer.locked is True
    assert event.coverage == Coverage(expected=100, total=0, unlocked=0)
    assert not event.coverage.complete


def test_gone_keeps_stored_fields() -> None:
    """A gone transfer keeps its stored height and amount; only the state changes."""
    old = tr("a", amount=42, height=950, state=UNLOCKED)
    (changed,) = run([old], []).changed
    assert changed == replace(old, state=GONE)


def test_below_window_transfer_still_counts_in_coverage() -> None:
    """Transfers below window_start are kept and still count toward events' coverage."""
    stored = [tr("old", amount=60, height=WINDOW - 50, state=UNLOCKED)]
    result = run(stored, [obs("new", amount=40, height=H_UNLOCKED)])
    assert changed_states(result) == [("new", 1, UNLOCKED)]
    assert result.events[-1].coverage == Coverage(expected=100, total=100, unlocked=100)
    assert result.events[-1].coverage.complete


def test_two_partial_payments_complete_only_when_both_unlocked() -> None:
    """Two partial payments: coverage grows per event, complete flips on the last unlock."""
    a = obs("a", amount=60, height=980)
    b = obs("b", amount=40, height=985)

    # Tick 1: both mined, both locked.
    tick1 = run([], [a, b], chain=986)
    assert event_kinds(tick1) == [(1, E_CONFIRMED, "a"), (1, E_CONFIRMED, "b")]
    assert [e.coverage for e in tick1.events] == [
        Coverage(100, total=60, unlocked=0),
        Coverage(100, total=100, unlocked=0),
    ]
    stored = apply([], tick1.changed)

    # Tick 2: a unlocks, b does not yet.
    tick2 = run(stored, [a, b], chain=990)
    assert event_kinds(tick2) == [(1, E_UNLOCKED, "a")]
    assert tick2.events[0].coverage == Coverage(100, total=100, unlocked=60)
    assert not tick2.events[0].coverage.complete
    stored = apply(stored, tick2.changed)

    # Tick 3: nothing new.
    assert run(stored, [a, b], chain=994) == Reconciliation(changed=[], events=[])

    # Tick 4: b unlocks -> complete.
    tick4 = run(stored, [a, b], chain=995)
    assert event_kinds(tick4) == [(1, E_UNLOCKED, "b")]
    assert tick4.events[0].coverage == Coverage(100, total=100, unlocked=100)
    assert tick4.events[0].coverage.complete


def test_two_partial_payments_unlocking_in_one_tick() -> None:
    """When both parts unlock in one tick, only the second UNLOCKED event is complete."""
    stored = [
        tr("a", amount=60, height=980, state=CONFIRMED),
        tr("b", amount=40, height=985, state=CONFIRMED),
    ]
    result = run(stored, [obs("b", amount=40, height=985), obs("a", amount=60, height=980)])
    assert event_kinds(result) == [(1, E_UNLOCKED, "a"), (1, E_UNLOCKED, "b")]
    assert [(e.coverage.unlocked, e.coverage.complete) for e in result.events] == [
        (60, False),
        (100, True),
    ]


def test_two_requests_in_one_tick_grouped_per_request() -> None:
    """Events are grouped per request (ascending index), each with its own coverage."""
    observed = [
        obs("x", index=2, amount=5, height=H_LOCKED),
        obs("y", index=1, amount=30, height=H_UNLOCKED),
        obs("z", index=2, amount=7),
        obs("w", index=1, amount=70, height=H_LOCKED),
    ]
    result = run([], observed, expected={1: 100, 2: 10})
    assert event_kinds(result) == [
        (1, E_CONFIRMED, "y"),
        (1, E_CONFIRMED, "w"),
        (1, E_UNLOCKED, "y"),
        (2, E_POOL, "z"),
        (2, E_CONFIRMED, "x"),
    ]
    assert [e.coverage for e in result.events] == [
        Coverage(100, total=30, unlocked=0),
        Coverage(100, total=100, unlocked=0),
        Coverage(100, total=100, unlocked=30),
        Coverage(10, total=7, unlocked=0),
        Coverage(10, total=12, unlocked=0),
    ]


def test_event_order_within_request() -> None:
    """Within a request: gone, then pool, then confirmed, then unlocked."""
    stored = [
        tr("gone", amount=1, height=H_LOCKED, state=CONFIRMED),
        tr("unl", amount=1, height=H_UNLOCKED, state=CONFIRMED),
    ]
    observed = [
        obs("unl", amount=1, height=H_UNLOCKED),
        obs("conf", amount=1, height=H_LOCKED),
        obs("pool", amount=1),
    ]
    result = run(stored, observed)
    assert [(e.kind, e.transfer.tx_hash) for e in result.events] == [
        (E_GONE, "gone"),
        (E_POOL, "pool"),
        (E_CONFIRMED, "conf"),
        (E_UNLOCKED, "unl"),
    ]


def test_events_of_one_kind_ordered_by_height_then_hash() -> None:
    """Events of the same kind come oldest block first, then by tx hash."""
    observed = [
        obs("b", amount=1, height=996),
        obs("c", amount=1, height=992),
        obs("a", amount=1, height=996),
    ]
    result = run([], observed)
    assert [e.transfer.tx_hash for e in result.events] == ["c", "a", "b"]
    assert [e.coverage.total for e in result.events] == [1, 2, 3]


def test_first_sighting_unlocked_next_to_confirmed_orders_all_confirmed_first() -> None:
    """With two first sightings, both CONFIRMED events precede the UNLOCKED one."""
    observed = [obs("new", amount=50, height=H_LOCKED), obs("old", amount=50, height=H_UNLOCKED)]
    result = run([], observed)
    assert [(e.kind, e.transfer.tx_hash) for e in result.events] == [
        (E_CONFIRMED, "old"),
        (E_CONFIRMED, "new"),
        (E_UNLOCKED, "old"),
    ]
    assert [e.coverage.unlocked for e in result.events] == [0, 0, 50]


@pytest.mark.parametrize(
    "order",
    [pytest.param("mined-first", id="mined-first"), pytest.param("pool-first", id="pool-first")],
)
def test_new_tx_listed_both_mined_and_in_pool_is_confirmed(order: str) -> None:
    """A new tx the wallet lists both in a block and in the pool counts as mined."""
    mined, pool = obs(height=H_LOCKED), obs()
    observed = [mined, pool] if order == "mined-first" else [pool, mined]
    result = run([], observed)
    assert changed_states(result) == [("aa", 1, CONFIRMED)]
    assert event_kinds(result) == [(1, E_CONFIRMED, "aa")]


@pytest.mark.parametrize(
    "order",
    [pytest.param("mined-first", id="mined-first"), pytest.param("pool-first", id="pool-first")],
)
def test_stored_confirmed_tx_still_listed_in_pool_is_unchanged(order: str) -> None:
    """A stored mined tx that is also still listed in the pool changes nothing, in any order."""
    stored = [tr(height=H_LOCKED, state=CONFIRMED)]
    mined, pool = obs(height=H_LOCKED), obs()
    observed = [mined, pool] if order == "mined-first" else [pool, mined]
    result = run(stored, observed)
    assert result.changed == []
    assert result.events == []


@pytest.mark.parametrize(
    ("stored", "observed", "zero_conf"),
    [
        pytest.param(
            [tr("p", amount=50)],
            [obs("c", amount=60, height=H_LOCKED)],
            False,
            id="silently-dropped-pool-tx",
        ),
        pytest.param(
            [tr("u", amount=100, height=950, state=UNLOCKED)],
            [obs("u", amount=100, height=H_LOCKED), obs("n", amount=1)],
            True,
            id="silently-reorged-unlocked-tx",
        ),
    ],
)
def test_last_event_coverage_matches_final_state(
    stored: list[Transfer], observed: list[Observation], zero_conf: bool
) -> None:
    """The last event of a request reports the coverage GET /receive will show after the tick."""
    result = run(stored, observed, zero_conf=zero_conf)
    assert result.events
    final = coverage(100, apply(stored, result.changed))
    assert result.events[-1].coverage == final


def _pool_tx(double_spend_seen: bool) -> Observation:
    return Observation(
        tx_hash="ds",
        subaddr_index=1,
        amount=100,
        fee=1,
        height=0,
        timestamp=NOW,
        unlock_time=0,
        double_spend_seen=double_spend_seen,
        in_pool=True,
    )


@pytest.mark.parametrize("zero_conf", [True, False])
def test_double_spend_seen_in_pool_is_announced_in_zero_conf(zero_conf: bool) -> None:
    """A pool transfer that gains double_spend_seen is announced again (zero-conf only),
    flagged and no longer counted in the total."""
    first = reconcile(
        expected_by_index={1: 100},
        stored=[],
        observed=[_pool_tx(False)],
        window_start=0,
        chain_height=CHAIN,
        now=NOW,
        zero_conf=zero_conf,
    )
    second = reconcile(
        expected_by_index={1: 100},
        stored=first.changed,
        observed=[_pool_tx(True)],
        window_start=0,
        chain_height=CHAIN,
        now=NOW,
        zero_conf=zero_conf,
    )
    [changed] = second.changed
    assert changed.double_spend_seen is True
    if not zero_conf:
        assert second.events == []
        return
    [event] = second.events
    assert event.kind is EventKind.POOL
    assert event.transfer.double_spend_seen is True
    assert event.coverage.total == 0
    assert first.events[0].coverage.total == 100
