"""A store's invoice defaults (``PATCH /stores``) on requests that name none."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from tests.unit.fakes import FakeOutbox, FakePaymentStore, FakeWallet
from xmrgate.core.payment_requests import (
    NewPaymentRequest,
    PaymentRequests,
    StoreDefaults,
    with_defaults,
)
from xmrgate.domain.errors import InvalidInput


class AllowAll:
    async def check(self, url: str, field: str) -> None:
        return None


def test_defaults_fill_only_what_the_request_leaves_out() -> None:
    defaults = StoreDefaults(expires_in=900, underpay_tolerance=10)
    plain = with_defaults(NewPaymentRequest(amount=100), defaults)
    assert (plain.expires_in, plain.underpay_tolerance) == (900, 10)
    named = with_defaults(
        NewPaymentRequest(amount=100, expires_in=60, underpay_tolerance=0), defaults
    )
    assert (named.expires_in, named.underpay_tolerance) == (60, 0)


def test_a_default_tolerance_above_the_amount_is_capped_an_explicit_one_refused() -> None:
    defaults = StoreDefaults(underpay_tolerance=50)
    assert with_defaults(NewPaymentRequest(amount=20), defaults).underpay_tolerance == 20
    use_case = PaymentRequests(
        FakeWallet(), FakePaymentStore(), FakeOutbox(), AllowAll(), defaults=lambda: defaults
    )  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="underpay_tolerance"):
        asyncio.run(use_case.create(NewPaymentRequest(amount=20, underpay_tolerance=21)))


def test_created_requests_carry_the_stores_defaults() -> None:
    store = FakePaymentStore()
    use_case = PaymentRequests(
        FakeWallet(),
        store,
        FakeOutbox(),
        AllowAll(),
        defaults=lambda: StoreDefaults(expires_in=600, underpay_tolerance=5),
    )  # type: ignore[arg-type]
    before = datetime.now(UTC)
    made = asyncio.run(use_case.create(NewPaymentRequest(amount=100)))
    assert made.underpay_tolerance == 5
    assert made.expires_at is not None  # the fake store's created_at is a fixed date
    assert 599 <= (made.expires_at - before).total_seconds() <= 605
