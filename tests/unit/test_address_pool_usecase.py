"""The address pool with fakes: refill, taking, labels later, empty pool, lookahead."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable

import pytest

from tests.unit.fakes import (
    AllowAll,
    FakeOutbox,
    FakePaymentStore,
    FakePoolStore,
    FakePoolWallet,
    FakeWallet,
)
from xmrgate.core import payment_requests
from xmrgate.core.address_pool import SILENCE, AddressPool, Labeler, ensure_lookahead
from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests
from xmrgate.domain.errors import AddressPoolEmpty, WalletUnavailable
from xmrgate.domain.records import PaymentRequest


def test_refill_tops_up_in_batches_of_64_and_saves_before_offering() -> None:
    wallet, store = FakePoolWallet(), FakePoolStore()
    pool = AddressPool(wallet, store, size=150, low_water=30)
    assert asyncio.run(pool.refill()) == 150
    assert wallet.calls == [64, 64, 22]
    assert wallet.saved_up_to == 150 and sorted(store.pool) == list(range(1, 151))
    assert asyncio.run(pool.refill()) == 0  # above the low-water mark: nothing to do
    for index in list(store.pool)[:120]:
        del store.pool[index]
    assert asyncio.run(pool.refill()) == 120


def test_refill_skips_indices_the_wallet_forgot() -> None:
    wallet, store = FakePoolWallet(), FakePoolStore()
    pool = AddressPool(wallet, store, size=10, low_water=2)
    asyncio.run(pool.refill())
    store.pool.clear()
    store.pool[10] = "still offered"
    wallet.next_index = 4  # wallet-rpc killed before saving: it reuses 4..
    asyncio.run(pool.refill())
    assert min(i for i in store.pool if i != 10) > 10
    assert len(store.pool) == 10


class NoWallet(FakeWallet):
    """With a pool, requests never ask the wallet for a subaddress themselves."""

    async def create_address(self, label: str = "") -> tuple[str, int]:
        raise AssertionError("the wallet was asked")


def _use_case(
    store: FakePoolStore,
    labels: Labeler | None = None,
    pool: AddressPool | None = None,
    *,
    starting: bool = False,
) -> PaymentRequests:
    return PaymentRequests(
        NoWallet(),
        FakePaymentStore(),
        FakeOutbox(),
        AllowAll(),
        pool=store,
        pool_used=pool.wake if pool else lambda: None,
        pool_refilled=pool.next_round if pool else _never,
        label_later=labels.label_later if labels else lambda _i, _l: None,
        starting=lambda: starting,
    )


async def _never(_deadline: float) -> None:
    raise AddressPoolEmpty("no refill runs")


class LabelWallet(FakePoolWallet):
    """A pool wallet that tells when it applied a label (``labelled``)."""

    def __init__(self) -> None:
        super().__init__()
        self.labelled = asyncio.Event()

    async def label_address(self, index: int, label: str) -> None:
        await super().label_address(index, label)
        self.labelled.set()


def test_create_takes_from_the_pool_without_asking_the_wallet() -> None:
    pool_wallet, store = LabelWallet(), FakePoolStore()
    asyncio.run(AddressPool(pool_wallet, store, size=3, low_water=1).refill())
    labels = Labeler(pool_wallet)
    use_case = _use_case(store, labels)
    made = asyncio.run(use_case.create(NewPaymentRequest(amount=7, description="order 9")))
    assert (made.subaddr_index, made.amount, made.description) == (1, 7, "order 9")
    assert 1 not in store.pool and pool_wallet.labels == {}  # the label comes later

    async def drain() -> None:
        # Stopped as soon as the label is applied (within the 0.05 s it had before).
        stop = asyncio.Event()
        task = asyncio.create_task(labels.run(stop))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(pool_wallet.labelled.wait(), 0.05)
        stop.set()
        await task

    asyncio.run(drain())
    assert pool_wallet.labels == {1: "order 9"}


def test_the_labeler_stops_at_once_while_it_waits_for_a_label() -> None:
    """A gateway's shutdown waits for its labeler: one waiting on an empty queue ends at
    once (it looked at ``stop`` once a second), leaving no get behind to lose a label."""
    pool_wallet = LabelWallet()
    labels = Labeler(pool_wallet)

    async def stop_while_waiting() -> tuple[float, int]:
        stop = asyncio.Event()
        task = asyncio.create_task(labels.run(stop))
        labels.label_later(4, "first")
        await asyncio.wait_for(pool_wallet.labelled.wait(), 5)
        await asyncio.sleep(0.05)  # past its LABEL_GAP: waiting on the empty queue
        stopped = time.monotonic()
        stop.set()
        await asyncio.wait_for(task, 5)
        took = time.monotonic() - stopped
        labels.label_later(5, "after the stop")  # no get of the labeler left to take it
        await asyncio.sleep(0.01)
        return took, labels._queue.qsize()

    took, queued = asyncio.run(stop_while_waiting())
    assert took < 0.1 and queued == 1
    assert pool_wallet.labels == {4: "first"}


class SlowPoolWallet(FakePoolWallet):
    """After the first batch (the pool before the requests), each takes ``delay`` seconds,
    ``hang`` makes each hang, ``down`` refuses each; ``busy_every`` makes every n-th save take
    ``busy`` seconds (a sync tick's refresh or a large wallet file's ``store`` ahead of it)."""

    def __init__(
        self,
        delay: float = 0.0,
        *,
        hang: bool = False,
        down: bool = False,
        busy: float = 0.0,
        busy_every: int = 0,
    ) -> None:
        super().__init__()
        self.delay, self.hang, self.down = delay, hang, down
        self.busy, self.busy_every, self.saves = busy, busy_every, 0

    async def create_addresses(self, count: int) -> list[tuple[str, int]]:
        if self.calls and self.down:
            raise WalletUnavailable("wallet-rpc refused the connection", request_sent=False)
        if self.calls and self.hang:
            await asyncio.Event().wait()
        if self.calls:
            await asyncio.sleep(self.delay)
        return await super().create_addresses(count)

    async def save(self) -> None:
        self.saves += 1
        if self.busy_every and self.saves % self.busy_every == 0:
            await asyncio.sleep(self.busy)
        await super().save()


Outcome = tuple[list[PaymentRequest | BaseException], float]


async def _with_refill_loop(
    wallet: FakePoolWallet,
    size: int,
    requests: int,
    *,
    sequential: bool = False,
    start_loop_after: float = 0.0,
    wallet_down: str | None = None,
    starting: bool = False,
    silence: float = SILENCE,
) -> Outcome:
    """Fill a pool, run its refill loop, make ``requests`` concurrent (or sequential)
    requests; ``start_loop_after`` delays the loop as the start-up's first check does."""
    store = FakePoolStore()

    async def down(_deadline: float) -> str | None:
        return wallet_down

    pool = AddressPool(wallet, store, size=size, low_water=0, wallet_down=down, silence=silence)
    if not start_loop_after:
        await pool.refill()
    stop = asyncio.Event()

    async def run_loop() -> None:
        await asyncio.sleep(start_loop_after)
        await pool.run(stop, every=60)

    loop = asyncio.create_task(run_loop())
    await asyncio.sleep(0)
    use_case = _use_case(store, pool=pool, starting=starting)
    started = time.monotonic()
    made: list[PaymentRequest | BaseException] = []
    try:
        if sequential:
            for _ in range(requests):
                try:
                    made.append(await use_case.create(NewPaymentRequest(amount=1)))
                except AddressPoolEmpty as exc:
                    made.append(exc)
        else:
            made = await asyncio.gather(
                *(use_case.create(NewPaymentRequest(amount=1)) for _ in range(requests)),
                return_exceptions=True,
            )
    finally:
        stop.set()
        loop.cancel()  # a hung wallet call never returns by itself
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    return made, time.monotonic() - started


async def _together(*runs: Awaitable[Outcome]) -> list[Outcome]:
    """Scenarios, each on a pool of its own, run at once: their waits overlap."""
    return list(await asyncio.gather(*runs))


def _all_made(made: list[PaymentRequest | BaseException], count: int) -> None:
    refused = [m for m in made if not isinstance(m, PaymentRequest)]
    assert not refused, refused[:3]
    assert len({m.subaddr_index for m in made if isinstance(m, PaymentRequest)}) == count


def test_requests_on_an_empty_pool_wait_for_the_refill_not_the_wallet() -> None:
    # Each batch takes 0.3 s, 3 per batch for 20 requests: about 2 s of refills, and no
    # request asks the wallet itself (NoWallet would raise).
    made, _ = asyncio.run(_with_refill_loop(SlowPoolWallet(delay=0.3), size=3, requests=20))
    _all_made(made, 20)


def test_refill_for_waiting_requests_comes_in_small_batches() -> None:
    # A batch of 64 can take wallet-rpc a second on a loaded host; waiters get 16s.
    wallet = SlowPoolWallet(delay=0.01)
    made, _ = asyncio.run(_with_refill_loop(wallet, size=64, requests=80))
    _all_made(made, 80)
    assert wallet.calls[0] == 64 and wallet.calls[1] == 16, wallet.calls


def test_a_busy_wallet_is_waited_for_not_refused() -> None:
    """A wallet that is busy for 1.5 s now and then (a sync tick's refresh, the
    ``store`` of a large wallet file) is not a dead one. The old rule (a step older than
    0.75 s means hung) refused every waiting request at once: 30 of a 260-request burst."""
    one_by_one = SlowPoolWallet(delay=0.01, busy=1.0, busy_every=3)
    burst = SlowPoolWallet(delay=0.01, busy=1.0, busy_every=2)
    (made_one_by_one, _), (made_in_a_burst, _) = asyncio.run(
        _together(
            _with_refill_loop(one_by_one, size=10, requests=30, sequential=True),
            _with_refill_loop(burst, size=10, requests=30),
        )
    )
    _all_made(made_one_by_one, 30)
    assert one_by_one.saves >= 3, "the wallet was never busy: the test proves nothing"
    _all_made(made_in_a_burst, 30)
    assert burst.saves >= 2, "the wallet was never busy: the test proves nothing"


def test_empty_pool_with_a_hung_wallet_is_503_after_a_silence() -> None:
    """A stopped wallet-rpc: nothing answers, so the waiting requests get 503 saying so
    once the refill's call has gone unanswered for SILENCE seconds (0.3 here), within the
    budget: not before the silence, and not long after it."""
    assert SILENCE < payment_requests.WALLET_WAIT
    made, elapsed = asyncio.run(
        _with_refill_loop(SlowPoolWallet(hang=True), size=2, requests=4, silence=0.3)
    )
    assert [type(m) for m in made[:2]] == [PaymentRequest, PaymentRequest]
    assert all(isinstance(m, AddressPoolEmpty) for m in made[2:]), made
    assert "has not answered for 0.3 s" in str(made[2])
    assert 0.3 <= elapsed < 0.8


def test_the_silence_said_is_a_gateways() -> None:
    """The 503 of a gateway's pool names its SILENCE in whole seconds."""
    pool = AddressPool(FakePoolWallet(), FakePoolStore(), size=1, low_water=0)
    pool._running, pool._step_since = True, time.monotonic() - SILENCE - 0.01  # a silent call
    with pytest.raises(AddressPoolEmpty, match=rf"not answered for {SILENCE:.0f} s \(stopped"):
        asyncio.run(pool.next_round(time.monotonic() + 1))


def test_empty_pool_with_the_wallet_down_is_503_at_once() -> None:
    made, elapsed = asyncio.run(_with_refill_loop(SlowPoolWallet(down=True), size=1, requests=3))
    assert isinstance(made[0], PaymentRequest)
    assert all(isinstance(m, AddressPoolEmpty) for m in made[1:]), made
    assert "refused the connection" in str(made[1])
    assert elapsed < 0.5


def test_a_slow_wallet_is_waited_for_up_to_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wallet that answers, but slower than the requests need, is waited for until the
    budget is spent; the 503 then says it answers but made none in time."""
    monkeypatch.setattr(payment_requests, "WALLET_WAIT", 1.0)
    made, _ = asyncio.run(_with_refill_loop(SlowPoolWallet(delay=0.7), size=1, requests=4))
    refused = [m for m in made if isinstance(m, AddressPoolEmpty)]
    assert refused and "answers but made none within 1 s" in str(refused[0])
    made_count = sum(isinstance(m, PaymentRequest) for m in made)
    assert made_count == 2, "a 0.7 s refill was not waited for"


def test_requests_at_start_wait_for_the_first_fill() -> None:
    """Right after start the pool is empty and its loop not yet running (the
    supervisor checks the wallet first); a request waits for it (0.4 s) instead of a 503."""
    made, elapsed = asyncio.run(
        _with_refill_loop(FakePoolWallet(), size=5, requests=3, start_loop_after=0.4)
    )
    _all_made(made, 3)
    assert elapsed >= 0.4


def test_at_start_a_wallet_slow_to_open_is_waited_for_past_the_wallet_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before the first check and fill (opening or creating the wallet takes wallet-rpc
    1-5 s), a request waits up to OPEN_WAIT, not WALLET_WAIT; once the gateway is
    ready, the shorter budget applies again (a regression seen in CI)."""
    monkeypatch.setattr(payment_requests, "WALLET_WAIT", 0.3)
    monkeypatch.setattr(payment_requests, "OPEN_WAIT", 2.0)
    (made, elapsed), (made_ready, _) = asyncio.run(
        _together(  # starting, and ready
            _with_refill_loop(
                FakePoolWallet(), size=5, requests=2, start_loop_after=0.8, starting=True
            ),
            _with_refill_loop(FakePoolWallet(), size=5, requests=2, start_loop_after=0.8),
        )
    )
    _all_made(made, 2)
    assert 0.8 <= elapsed < 2.0
    assert all(isinstance(m, AddressPoolEmpty) for m in made_ready), made_ready
    assert "within 0 s" in str(made_ready[0])


def test_requests_at_start_fail_fast_when_the_wallet_is_known_down() -> None:
    made, elapsed = asyncio.run(
        _with_refill_loop(
            FakePoolWallet(),
            size=5,
            requests=2,
            start_loop_after=3.0,
            wallet_down="wallet-rpc is not usable yet (connection refused)",
        )
    )
    assert all(isinstance(m, AddressPoolEmpty) for m in made), made
    assert "connection refused" in str(made[0]) and elapsed < 0.5


def test_empty_pool_without_a_refill_loop_is_503() -> None:
    with pytest.raises(AddressPoolEmpty):
        asyncio.run(_use_case(FakePoolStore()).create(NewPaymentRequest(amount=1)))


def test_lookahead_extends_the_table_rescans_and_rewinds() -> None:
    wallet, store = FakePoolWallet(next_index=1, table_size=1), FakePoolStore()
    store.pool[260] = "handed out before the wallet was restored"
    rewound: list[bool] = []

    async def rewind() -> None:
        rewound.append(True)

    assert asyncio.run(ensure_lookahead(wallet, store, rewind)) is True
    assert asyncio.run(wallet.has_subaddress(260)) and wallet.saved_up_to >= 260
    assert wallet.rescans == 1 and rewound == [True]
    assert asyncio.run(ensure_lookahead(wallet, store, rewind)) is False
    assert wallet.rescans == 1


def test_lookahead_rewinds_before_the_rescan_so_a_failed_rescan_loses_nothing() -> None:
    """The rescan can outlast its timeout; the table is extended by then and the next
    check finds nothing to do, so the sync must already have been rewound."""

    class SlowRescan(FakePoolWallet):
        async def rescan(self) -> None:
            raise WalletUnavailable("rescan_blockchain timed out", request_sent=True)

    wallet, store = SlowRescan(next_index=1, table_size=1), FakePoolStore()
    store.pool[260] = "handed out before the wallet was restored"
    rewound: list[bool] = []

    async def rewind() -> None:
        rewound.append(True)

    with pytest.raises(WalletUnavailable):
        asyncio.run(ensure_lookahead(wallet, store, rewind))
    assert rewound == [True], "the rescan failed before the sync was rewound"
    assert asyncio.run(ensure_lookahead(wallet, store, rewind)) is False
