"""Pure parts of callbacks: the signature, the retry schedule, and which reorg events fire."""

from __future__ import annotations

import hashlib
import hmac
import random
from datetime import UTC, datetime, timedelta

import pytest

from xmrgate.core.callbacks import JITTER, RetryPolicy, sign, verify
from xmrgate.domain.ledger import EventKind, Transfer, TransferState, reconcile

SECRET = b"s3cret"
BODY = b'{"event":"transfer.confirmed","amount":{"expected":1}}'
NOW = 1_800_000_000


def test_sign_format_is_t_and_hex_hmac_of_t_dot_body() -> None:
    """sign() gives t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>."""
    header = sign(SECRET, NOW, BODY)
    mac = hmac.new(SECRET, b"%d." % NOW + BODY, hashlib.sha256).hexdigest()
    assert header == f"t={NOW},v1={mac}"


def test_sign_depends_on_secret_time_and_body() -> None:
    """Changing any input changes the signature."""
    base = sign(SECRET, NOW, BODY)
    assert sign(b"other", NOW, BODY) != base
    assert sign(SECRET, NOW + 1, BODY).split(",")[1] != base.split(",")[1]
    assert sign(SECRET, NOW, BODY + b" ") != base


def test_verify_accepts_a_fresh_good_signature() -> None:
    """A signature made with the secret and checked within the window verifies."""
    assert verify(SECRET, sign(SECRET, NOW, BODY), BODY, now=NOW + 10)


@pytest.mark.parametrize(
    ("header", "body", "secret"),
    [
        (sign(SECRET, NOW, BODY), BODY, b"wrong"),
        (sign(SECRET, NOW, BODY), BODY + b"x", SECRET),
        (sign(b"wrong", NOW, BODY), BODY, SECRET),
        (f"t={NOW + 1}," + sign(SECRET, NOW, BODY).split(",")[1], BODY, SECRET),
        ("", BODY, SECRET),
        ("garbage", BODY, SECRET),
        (f"t={NOW}", BODY, SECRET),
        (f"v1={'0' * 64}", BODY, SECRET),
        (f"t=soon,v1={'0' * 64}", BODY, SECRET),
    ],
    ids=[
        "wrong-secret",
        "tampered-body",
        "signed-with-other-secret",
        "timestamp-swapped",
        "empty",
        "garbage",
        "no-mac",
        "no-timestamp",
        "timestamp-not-int",
    ],
)
def test_verify_rejects_bad_signatures(header: str, body: bytes, secret: bytes) -> None:
    """Wrong secret, altered body or timestamp, and malformed headers do not verify."""
    assert not verify(secret, header, body, now=NOW)


def test_verify_rejects_expired_and_future_signatures() -> None:
    """Outside the tolerance window (either side) a correct MAC still fails."""
    header = sign(SECRET, NOW, BODY)
    assert verify(SECRET, header, BODY, tolerance=300, now=NOW + 300)
    assert not verify(SECRET, header, BODY, tolerance=300, now=NOW + 301)
    assert not verify(SECRET, header, BODY, tolerance=300, now=NOW - 301)


def test_delay_doubles_within_jitter_bounds() -> None:
    """The n-th retry waits base * 2**(n-1), +-20 %."""
    policy = RetryPolicy(base=0.5, max_interval=3600, give_up_after=3600)
    rng = random.Random(1234)
    for tries in range(1, 12):
        nominal = 0.5 * 2 ** (tries - 1)
        for _ in range(50):
            delay = policy.delay(tries, rng)
            assert nominal * (1 - JITTER) <= delay <= nominal * (1 + JITTER)


def test_delay_jitter_is_spread_and_seeded() -> None:
    """Jitter uses the whole band and the same seed gives the same schedule."""
    policy = RetryPolicy(base=10, max_interval=3600, give_up_after=3600)
    delays = [policy.delay(1, random.Random(7)) for _ in range(3)]
    assert len(set(delays)) == 1
    rng = random.Random(99)
    spread = [policy.delay(1, rng) for _ in range(500)]
    assert min(spread) < 10 * (1 - JITTER / 2) and max(spread) > 10 * (1 + JITTER / 2)


def test_delay_is_capped_at_max_interval() -> None:
    """Long after the cap is reached the delay never exceeds max_interval."""
    policy = RetryPolicy(base=5, max_interval=60, give_up_after=3600)
    rng = random.Random(3)
    for tries in (5, 10, 40, 200):
        for _ in range(50):
            delay = policy.delay(tries, rng)
            assert 60 * (1 - JITTER) <= delay <= 60


def test_delay_treats_zero_tries_as_first() -> None:
    """tries below 1 does not shrink the delay below the base band."""
    policy = RetryPolicy(base=4, max_interval=3600, give_up_after=3600)
    assert 4 * (1 - JITTER) <= policy.delay(0, random.Random(1)) <= 4 * (1 + JITTER)


def test_next_attempt_schedules_from_now() -> None:
    """Before give_up_after the next attempt is now + delay(tries)."""
    policy = RetryPolicy(base=2, max_interval=3600, give_up_after=100)
    created = datetime(2026, 1, 1, tzinfo=UTC)
    now = created + timedelta(seconds=50)
    at = policy.next_attempt(created, 3, now, random.Random(5))
    assert at is not None
    assert at - now == timedelta(seconds=policy.delay(3, random.Random(5)))
    assert timedelta(seconds=8 * 0.8) <= at - now <= timedelta(seconds=8 * 1.2)


def test_next_attempt_gives_up_after_give_up_after() -> None:
    """Once give_up_after has passed since creation, there is no next attempt."""
    policy = RetryPolicy(base=2, max_interval=3600, give_up_after=100)
    created = datetime(2026, 1, 1, tzinfo=UTC)
    assert policy.next_attempt(created, 1, created + timedelta(seconds=99.9)) is not None
    assert policy.next_attempt(created, 1, created + timedelta(seconds=100)) is None
    assert policy.next_attempt(created, 30, created + timedelta(days=10)) is None


# Which callbacks a reorg produces (ledger.reconcile), without zero-conf.

TX = "cd" * 32


def _pool_transfer() -> Transfer:
    return Transfer(
        tx_hash=TX,
        subaddr_index=1,
        amount=5,
        fee=1,
        height=0,
        timestamp=NOW,
        unlock_time=0,
        double_spend_seen=False,
        state=TransferState.POOL,
    )


def _drop(announced: frozenset[tuple[str, int]], zero_conf: bool = False) -> list[EventKind]:
    """Reconcile a stored pool transfer that the wallet no longer reports."""
    outcome = reconcile(
        expected_by_index={1: 5},
        stored=[_pool_transfer()],
        observed=[],
        window_start=100,
        chain_height=120,
        now=NOW,
        zero_conf=zero_conf,
        announced=announced,
    )
    assert [t.state for t in outcome.changed] == [TransferState.GONE]
    return [e.kind for e in outcome.events]


def test_dropped_pool_transfer_is_silent_without_zero_conf() -> None:
    """A pool transfer nobody was told about leaves silently (no zero-conf)."""
    assert _drop(frozenset()) == []


def test_dropped_pool_transfer_announced_confirmed_is_gone() -> None:
    """A transfer announced confirmed, put back in the pool by a reorg, then dropped: gone."""
    assert _drop(frozenset({(TX, 1)})) == [EventKind.GONE]


def test_dropped_pool_transfer_is_gone_with_zero_conf() -> None:
    """In zero-conf mode the loss of any pool transfer is announced."""
    assert _drop(frozenset(), zero_conf=True) == [EventKind.GONE]
