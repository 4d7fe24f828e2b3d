"""Payment state as a pure function of stored transfers and the chain height.

No I/O and nothing of ours is imported here: the sync tick feeds this module what
the wallet reported and what the store holds, and writes back what it returns. The
API uses the same functions to answer reads, so a callback and ``GET /receive``
can never disagree about totals, ``complete`` or ``locked``.

Money is an ``int`` of piconero throughout.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

# Received outputs unlock after this many blocks (CRYPTONOTE_DEFAULT_TX_SPENDABLE_AGE).
SPENDABLE_AGE = 10
# unlock_time below this is a block height, above it a unix timestamp.
MAX_BLOCK_NUMBER = 500_000_000
# Leeway wallet2 grants time-locked outputs (CRYPTONOTE_LOCKED_TX_ALLOWED_DELTA_SECONDS_V2:
# DIFFICULTY_TARGET_V2 * CRYPTONOTE_LOCKED_TX_ALLOWED_DELTA_BLOCKS = 120 * 1).
LOCKED_TX_ALLOWED_DELTA_SECONDS = 120


class TransferState(StrEnum):
    """Where an incoming transfer stands."""

    POOL = "pool"  # seen in the tx pool, not mined
    CONFIRMED = "confirmed"  # mined, still locked
    UNLOCKED = "unlocked"  # mined and spendable
    GONE = "gone"  # dropped from the pool or removed by a reorg


class EventKind(StrEnum):
    """Events a state change produces; each becomes one callback."""

    POOL = "transfer.pool"
    CONFIRMED = "transfer.confirmed"
    UNLOCKED = "transfer.unlocked"
    GONE = "transfer.gone"


@dataclass(frozen=True, slots=True)
class Observation:
    """One incoming transfer as the wallet reports it (``get_transfers`` entry)."""

    tx_hash: str
    subaddr_index: int
    amount: int
    fee: int
    height: int  # 0 while in the pool
    timestamp: int  # unix seconds
    unlock_time: int
    double_spend_seen: bool
    in_pool: bool


@dataclass(frozen=True, slots=True)
class Transfer:
    """One incoming transfer as the store keeps it: what was observed plus its state."""

    tx_hash: str
    subaddr_index: int
    amount: int
    fee: int
    height: int
    timestamp: int
    unlock_time: int
    double_spend_seen: bool
    state: TransferState
    # Unix time the transfer first appeared (pool or block), kept across state changes;
    # None: ``timestamp``. Not part of equality: it never changes on its own.
    first_seen: int | None = field(default=None, compare=False)

    @property
    def seen_at(self) -> int:
        """When the transfer first appeared: decides whether it came before an expiry."""
        return self.timestamp if self.first_seen is None else self.first_seen

    @property
    def key(self) -> tuple[str, int]:
        """A transfer is one transaction's outputs to one subaddress."""
        return (self.tx_hash, self.subaddr_index)

    @property
    def locked(self) -> bool:
        """Locked until its outputs are spendable; gone transfers count as locked."""
        return self.state is not TransferState.UNLOCKED

    def confirmations(self, chain_height: int) -> int:
        """Blocks on top of (and including) the transfer's block; 0 in the pool or gone."""
        if self.state in (TransferState.POOL, TransferState.GONE) or self.height <= 0:
            return 0
        return max(chain_height - self.height, 0)


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much of a payment request is paid."""

    expected: int
    total: int
    unlocked: int

    @property
    def complete(self) -> bool:
        """True once the unlocked amount reaches the expected amount (the spec's rule)."""
        return self.unlocked >= self.expected


@dataclass(frozen=True, slots=True)
class Event:
    """A state change of one transfer, with the request's coverage at that moment."""

    subaddr_index: int
    kind: EventKind
    transfer: Transfer
    coverage: Coverage


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """What one sync tick must write: changed transfers (final state) and their events."""

    changed: list[Transfer]
    events: list[Event]


def is_unlocked(height: int, unlock_time: int, chain_height: int, now: int) -> bool:
    """Whether outputs mined at ``height`` are spendable at ``chain_height`` (blocks known).

    Mirrors wallet2: SPENDABLE_AGE confirmations, and ``unlock_time`` read as a block
    height below MAX_BLOCK_NUMBER, otherwise as a unix time.
    """
    if height <= 0 or chain_height - height < SPENDABLE_AGE:
        return False
    if unlock_time == 0:
        return True
    if unlock_time < MAX_BLOCK_NUMBER:
        return chain_height >= unlock_time
    return now + LOCKED_TX_ALLOWED_DELTA_SECONDS >= unlock_time


def state_of(observation: Observation, chain_height: int, now: int) -> TransferState:
    """The state an observed transfer is in."""
    if observation.in_pool or observation.height <= 0:
        return TransferState.POOL
    if is_unlocked(observation.height, observation.unlock_time, chain_height, now):
        return TransferState.UNLOCKED
    return TransferState.CONFIRMED


def counts_toward_total(transfer: Transfer) -> bool:
    """Gone transfers and pool transfers whose inputs were spent elsewhere do not count."""
    if transfer.state is TransferState.GONE:
        return False
    return not (transfer.state is TransferState.POOL and transfer.double_spend_seen)


def coverage(expected: int, transfers: Iterable[Transfer]) -> Coverage:
    """Covered totals of a request from all of its transfers."""
    total = 0
    unlocked = 0
    for transfer in transfers:
        if counts_toward_total(transfer):
            total += transfer.amount
        if transfer.state is TransferState.UNLOCKED:
            unlocked += transfer.amount
    return Coverage(expected=expected, total=total, unlocked=unlocked)


def visible_transfers(
    transfers: Iterable[Transfer], min_height: int | None = None, max_height: int | None = None
) -> list[Transfer]:
    """Transfers listed by ``GET /receive``: not gone, heights inclusive, oldest first.

    Pool transfers have height 0, so a ``min`` above 0 leaves them out.
    """
    shown = [
        t
        for t in transfers
        if t.state is not TransferState.GONE
        and (min_height is None or t.height >= min_height)
        and (max_height is None or t.height <= max_height)
    ]
    # Pool transfers (height 0) are the newest: list them last.
    shown.sort(key=lambda t: (t.height == 0, t.height, t.timestamp, t.tx_hash))
    return shown


# Steps of a transition, in the order their callbacks must arrive.
_TRANSITIONS: dict[tuple[TransferState | None, TransferState], tuple[TransferState, ...]] = {
    (None, TransferState.POOL): (TransferState.POOL,),
    (None, TransferState.CONFIRMED): (TransferState.CONFIRMED,),
    (None, TransferState.UNLOCKED): (TransferState.CONFIRMED, TransferState.UNLOCKED),
    (TransferState.POOL, TransferState.CONFIRMED): (TransferState.CONFIRMED,),
    (TransferState.POOL, TransferState.UNLOCKED): (TransferState.CONFIRMED, TransferState.UNLOCKED),
    (TransferState.CONFIRMED, TransferState.UNLOCKED): (TransferState.UNLOCKED,),
}
_EVENT_OF_STEP = {
    TransferState.POOL: EventKind.POOL,
    TransferState.CONFIRMED: EventKind.CONFIRMED,
    TransferState.UNLOCKED: EventKind.UNLOCKED,
    TransferState.GONE: EventKind.GONE,
}
_STEP_ORDER = {
    TransferState.GONE: 0,
    TransferState.POOL: 1,
    TransferState.CONFIRMED: 2,
    TransferState.UNLOCKED: 3,
}


def _steps(
    old: TransferState | None, new: TransferState, zero_conf: bool, announced: bool = False
) -> tuple[TransferState, ...]:
    """The announced steps from ``old`` to ``new``.

    A gone transfer that comes back starts over. A move backwards (a reorg that puts
    a mined transfer back into the pool) is recorded silently: its next
    confirmation is announced again. Pool sightings and their loss are announced
    only in zero-conf mode, except the loss of a pool transfer whose confirmation
    was announced before (``announced``): whoever heard "confirmed" must hear "gone".
    """
    if old is TransferState.GONE:
        old = None
    if new is TransferState.GONE:
        if old is None or (old is TransferState.POOL and not zero_conf and not announced):
            return ()
        return (TransferState.GONE,)
    steps = _TRANSITIONS.get((old, new), ())
    if not zero_conf:
        steps = tuple(s for s in steps if s is not TransferState.POOL)
    return steps


def _first_seen(old: Transfer | None, obs: Observation, now: int) -> int:
    """The earliest sighting: the wallet's time (pool: when it saw it; block: its timestamp).

    Never later than ``now`` (a block's timestamp may lie ahead of our clock), and never
    later than an earlier sighting (a pool transfer keeps its pool time once mined).
    """
    seen = min(obs.timestamp, now)
    return seen if old is None else min(seen, old.seen_at)


def reconcile(
    *,
    expected_by_index: Mapping[int, int],
    stored: Iterable[Transfer],
    observed: Iterable[Observation],
    window_start: int,
    chain_height: int,
    now: int,
    zero_conf: bool,
    announced: Collection[tuple[str, int]] = frozenset(),
) -> Reconciliation:
    """Compare what the wallet reports with what is stored.

    ``expected_by_index`` maps the subaddress index of every payment request that
    can be touched to its expected amount; observations of other subaddresses are
    ignored. ``stored`` holds ALL transfers of those requests (coverage needs them
    all). A stored transfer that is still pending or mined at or above
    ``window_start`` but no longer reported is gone. ``announced`` holds the keys of
    stored pool transfers whose last event was a confirmation (a reorg put them
    back into the pool): their loss is announced even without zero-conf.

    Returns the transfers whose stored form changes and, per request in callback
    order, the events with the coverage at the moment of each event.
    """
    current: dict[tuple[str, int], Transfer] = {t.key: t for t in stored}
    seen: set[tuple[str, int]] = set()
    final: dict[tuple[str, int], Transfer] = {}
    steps_by_key: dict[tuple[str, int], tuple[TransferState, ...]] = {}

    # A transfer listed both mined and in the pool: the mined entry wins, in any order.
    latest: dict[tuple[str, int], Observation] = {}
    for obs in observed:
        if obs.subaddr_index not in expected_by_index:
            continue
        key = (obs.tx_hash, obs.subaddr_index)
        if key not in latest or not obs.in_pool:
            latest[key] = obs
    for key, obs in latest.items():
        seen.add(key)
        new = Transfer(
            tx_hash=obs.tx_hash,
            subaddr_index=obs.subaddr_index,
            amount=obs.amount,
            fee=obs.fee,
            height=0 if obs.in_pool else obs.height,
            timestamp=obs.timestamp,
            unlock_time=obs.unlock_time,
            double_spend_seen=obs.double_spend_seen,
            state=state_of(obs, chain_height, now),
            first_seen=_first_seen(current.get(key), obs, now),
        )
        old = current.get(key)
        if old != new:
            final[key] = new
            steps = _steps(old.state if old else None, new.state, zero_conf)
            if (
                zero_conf
                and old is not None
                and old.state is new.state is TransferState.POOL
                and new.double_spend_seen
                and not old.double_spend_seen
            ):
                # Its inputs were spent elsewhere: the money a zero-conf merchant was
                # told about may never come. Announce the sighting again, flagged.
                steps = (TransferState.POOL,)
            steps_by_key[key] = steps

    for key, old in current.items():
        if key in seen or old.state is TransferState.GONE:
            continue
        if old.state is TransferState.POOL or old.height >= window_start:
            final[key] = replace(old, state=TransferState.GONE)
            steps_by_key[key] = _steps(
                old.state, TransferState.GONE, zero_conf, announced=key in announced
            )

    events: list[Event] = []
    by_index: dict[int, list[tuple[tuple[str, int], TransferState]]] = {}
    for key, steps in steps_by_key.items():
        for step in steps:
            by_index.setdefault(key[1], []).append((key, step))
    for index in sorted(by_index):
        working = {k: t for k, t in current.items() if k[1] == index}
        # Silent changes (no event of their own) are in force before any event.
        working.update({k: t for k, t in final.items() if k[1] == index and not steps_by_key[k]})
        planned = sorted(
            by_index[index],
            key=lambda item: (
                _STEP_ORDER[item[1]],
                final[item[0]].height or current.get(item[0], final[item[0]]).height,
                item[0][0],
            ),
        )
        for key, step in planned:
            snapshot = replace(final[key], state=step)
            working[key] = snapshot
            events.append(
                Event(
                    subaddr_index=index,
                    kind=_EVENT_OF_STEP[step],
                    transfer=snapshot,
                    coverage=coverage(expected_by_index[index], working.values()),
                )
            )
    return Reconciliation(changed=list(final.values()), events=events)


def window_start(
    last_synced_height: int | None, lowest_pending_height: int | None, margin: int
) -> int:
    """First block height the next tick must scan.

    Heights that can still change: from the lowest mined-but-locked transfer or the
    last synced height, whichever is lower, minus a reorg margin.
    """
    candidates = [h for h in (last_synced_height, lowest_pending_height) if h is not None]
    if not candidates:
        return 0
    return max(min(candidates) - margin, 0)
