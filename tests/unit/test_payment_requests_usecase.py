"""Payment requests with fakes: the wallet-forgot-subaddresses recovery, guards, delete."""

from __future__ import annotations

import asyncio

import pytest

from tests.unit.fakes import AllowAll, FakeOutbox, FakePaymentStore, FakeWallet, address_of
from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    RequestHasFunds,
    SubaddressTaken,
    WalletUnavailable,
)


def _use_case(wallet: FakeWallet, store: FakePaymentStore, **kwargs: object) -> PaymentRequests:
    return PaymentRequests(wallet, store, FakeOutbox(), AllowAll(), **kwargs)  # type: ignore[arg-type]


def test_create_records_what_the_wallet_handed_out() -> None:
    wallet, store = FakeWallet(next_index=7), FakePaymentStore()
    made = asyncio.run(
        _use_case(wallet, store).create(NewPaymentRequest(amount=5, description="x"))
    )
    assert (made.address, made.subaddr_index, made.amount) == (address_of(7), 7, 5)
    assert store.requests[made.address] == made


def test_wallet_that_forgot_its_subaddresses_is_moved_past_every_used_index() -> None:
    wallet, store = FakeWallet(next_index=1), FakePaymentStore()
    use_case = _use_case(wallet, store)
    for _ in range(5):
        asyncio.run(use_case.create(NewPaymentRequest(amount=1)))
    wallet.next_index = 3  # wallet-rpc was SIGKILLed and reloaded an old cache
    made = asyncio.run(use_case.create(NewPaymentRequest(amount=1)))
    assert made.subaddr_index == 6
    assert wallet.skipped == [2]  # 4 and 5 created and skipped: the next one is 6
    assert len({r.subaddr_index for r in store.requests.values()}) == 6


def test_recovery_gives_up_after_one_skip() -> None:
    class StuckWallet(FakeWallet):
        async def create_address(self, label: str = "") -> tuple[str, int]:
            return address_of(1), 1  # always the same, used index

    wallet, store = StuckWallet(next_index=1), FakePaymentStore()
    use_case = _use_case(wallet, store)
    asyncio.run(use_case.create(NewPaymentRequest(amount=1)))
    wallet.next_index = 1
    with pytest.raises(SubaddressTaken):
        asyncio.run(use_case.create(NewPaymentRequest(amount=1)))
    assert len(store.requests) == 1


def test_refused_url_creates_nothing() -> None:
    class RefuseAll:
        async def check(self, url: str, field: str) -> None:
            raise InvalidInput(f"{field} refused")

    wallet, store = FakeWallet(), FakePaymentStore()
    use_case = PaymentRequests(wallet, store, FakeOutbox(), RefuseAll())
    with pytest.raises(InvalidInput, match="return_url"):
        asyncio.run(use_case.create(NewPaymentRequest(amount=1, return_url="http://x/")))
    assert store.requests == {} and wallet.next_index == 1


def test_wrong_wallet_refuses_creation_before_the_wallet_is_asked() -> None:
    identity = WalletIdentity(mismatch="wallet-rpc has wallet B open; the database belongs to A")
    wallet, store = FakeWallet(), FakePaymentStore()
    use_case = _use_case(wallet, store, require_wallet=identity.require_usable)
    with pytest.raises(WalletUnavailable, match="wallet B"):
        asyncio.run(use_case.create(NewPaymentRequest(amount=1)))
    assert wallet.next_index == 1 and store.requests == {}


def test_delete_is_refused_once_funds_arrived() -> None:
    wallet, store = FakeWallet(), FakePaymentStore()
    use_case = _use_case(wallet, store)
    paid = asyncio.run(use_case.create(NewPaymentRequest(amount=1)))
    unpaid = asyncio.run(use_case.create(NewPaymentRequest(amount=1)))
    store.transfers[paid.address] = ["a transfer"]
    with pytest.raises(Conflict, match="received funds") as refused:
        asyncio.run(use_case.delete(paid.address))
    assert refused.value.message == (
        "this payment request has received funds and cannot be deleted; its history is kept"
    )
    assert paid.address in store.requests
    asyncio.run(use_case.delete(unpaid.address))
    assert unpaid.address not in store.requests
    with pytest.raises(NotFound):
        asyncio.run(use_case.delete(unpaid.address))


def test_delete_leaves_the_decision_to_one_store_call() -> None:
    """No read first: a transfer recorded between a check and the delete would be lost."""
    calls: list[str] = []

    class DeleteOnlyStore(FakePaymentStore):
        async def status(self, address: str) -> None:  # type: ignore[override]
            raise AssertionError("delete read the request before deleting it")

        async def get(self, address: str) -> None:  # type: ignore[override]
            raise AssertionError("delete read the request before deleting it")

        async def delete(self, address: str) -> bool:
            calls.append(address)
            return await super().delete(address)

    store = DeleteOnlyStore()
    use_case = _use_case(FakeWallet(), store)
    paid = asyncio.run(use_case.create(NewPaymentRequest(amount=1)))
    unpaid = asyncio.run(use_case.create(NewPaymentRequest(amount=1)))
    store.transfers[paid.address] = ["a transfer"]
    with pytest.raises(RequestHasFunds):
        asyncio.run(use_case.delete(paid.address))
    asyncio.run(use_case.delete(unpaid.address))
    with pytest.raises(NotFound, match="no payment request for this address"):
        asyncio.run(use_case.delete(unpaid.address))
    with pytest.raises(NotFound):
        asyncio.run(use_case.delete("0OIl"))  # not an address: the store is not asked
    assert calls == [paid.address, unpaid.address, unpaid.address]
    assert set(store.requests) == {paid.address}


def test_lookups_of_impossible_addresses_skip_the_store() -> None:
    class ExplodingStore(FakePaymentStore):
        async def status(self, address: str) -> None:  # type: ignore[override]
            raise AssertionError("the store was asked")

    use_case = _use_case(FakeWallet(), ExplodingStore())
    for bad in ["", "0OIl", "x" * 200, "abc\x00"]:
        with pytest.raises(NotFound):
            asyncio.run(use_case.status(bad))
