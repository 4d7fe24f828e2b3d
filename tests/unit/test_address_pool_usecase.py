"""The address pool with fakes: refill, taking, labels later, empty pool, lookahead."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.unit.fakes import (
    AllowAll,
    FakeOutbox,
    FakePaymentStore,
    FakePoolStore,
    FakePoolWallet,
    FakeWallet,
)
from xmrgate.core.address_pool import AddressPool, Labeler, ensure_lookahead
from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests
from xmrgate.domain.errors import AddressPoolEmpty, WalletTimeout, WalletUnavailable


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


def _use_case(
    wallet: FakeWallet, store: FakePoolStore | None, labels: Labeler | None = None
) -> PaymentRequests:
    return PaymentRequests(
        wallet,
        FakePaymentStore(),
        FakeOutbox(),
        AllowAll(),
        pool=store,
        label_later=labels.label_later if labels else lambda _i, _l: None,
        direct_timeout=0.5,
    )


def test_create_takes_from_the_pool_without_asking_the_wallet() -> None:
    class NoWallet(FakeWallet):
        async def create_address(
            self, label: str = "", *, timeout: float | None = None
        ) -> tuple[str, int]:
            raise AssertionError("the wallet was asked")

    pool_wallet, store = FakePoolWallet(), FakePoolStore()
    asyncio.run(AddressPool(pool_wallet, store, size=3, low_water=1).refill())
    labels = Labeler(pool_wallet)
    use_case = _use_case(NoWallet(), store, labels)
    made = asyncio.run(use_case.create(NewPaymentRequest(amount=7, description="order 9")))
    assert (made.subaddr_index, made.amount, made.description) == (1, 7, "order 9")
    assert 1 not in store.pool and pool_wallet.labels == {}  # the label comes later

    async def drain() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(labels.run(stop))
        await asyncio.sleep(0.05)
        stop.set()
        await task

    asyncio.run(drain())
    assert pool_wallet.labels == {1: "order 9"}


def test_empty_pool_falls_back_to_the_wallet() -> None:
    wallet = FakeWallet(next_index=40)
    made = asyncio.run(_use_case(wallet, FakePoolStore()).create(NewPaymentRequest(amount=1)))
    assert made.subaddr_index == 40


@pytest.mark.parametrize(
    "failure", [WalletTimeout("hung"), WalletUnavailable("down", request_sent=False)]
)
def test_empty_pool_and_no_wallet_is_503_quickly(failure: Exception) -> None:
    class DeadWallet(FakeWallet):
        async def create_address(
            self, label: str = "", *, timeout: float | None = None
        ) -> tuple[str, int]:
            assert timeout is not None and timeout < 1
            raise failure

    started = time.monotonic()
    with pytest.raises(AddressPoolEmpty):
        asyncio.run(_use_case(DeadWallet(), FakePoolStore()).create(NewPaymentRequest(amount=1)))
    assert time.monotonic() - started < 1


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
