"""``PaymentRequests.create`` with a fiat price, over in-memory fakes: the
conversion, the rate lock as the expiry, and refusals that create nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tests.unit.fakes import AllowAll, FakeOutbox, FakePaymentStore, FakeWallet
from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests, StoreDefaults
from xmrgate.domain.errors import InvalidInput, RatesUnavailable
from xmrgate.domain.fiat import Price, Quote, piconero_for

RATE = Decimal("150")
LOCK = 900
NO_DEFAULTS = StoreDefaults()


class FixedRate:
    """A rate book with one EUR rate, or none (``down``)."""

    def __init__(self, *, down: bool = False) -> None:
        self.down = down
        self.asked: list[Price] = []

    def quote(self, price: Price) -> tuple[int, Quote]:
        self.asked.append(price)
        if self.down:
            raise RatesUnavailable("no fresh exchange rate for EUR: every source is down")
        at = datetime(2026, 11, 25, tzinfo=UTC)
        quote = Quote(str(price.amount), price.currency, str(RATE), ("kraken",), at)
        return piconero_for(price, RATE), quote


def _requests(
    pricing: FixedRate | None, defaults: StoreDefaults = NO_DEFAULTS
) -> tuple[PaymentRequests, FakePaymentStore, FakeWallet]:
    store, wallet = FakePaymentStore(), FakeWallet()
    requests = PaymentRequests(
        wallet,
        store,
        FakeOutbox(),
        AllowAll(),
        defaults=lambda: defaults,
        pricing=pricing,
        rate_lock=LOCK,
    )
    return requests, store, wallet


def _priced(amount: str = "19.99", **fields: object) -> NewPaymentRequest:
    return NewPaymentRequest(amount=0, price=Price(Decimal(amount), "EUR"), **fields)  # type: ignore[arg-type]


def _expires_in(created_at: datetime, expires_at: datetime | None) -> float:
    assert expires_at is not None
    return (expires_at - datetime.now(UTC)).total_seconds()


def test_the_price_is_converted_rounded_up_and_the_quote_kept() -> None:
    requests, store, _wallet = _requests(FixedRate())
    made = asyncio.run(requests.create(_priced("19.99")))
    assert made.amount == 133_266_666_667  # 19.99 / 150 XMR, up to the piconero
    assert made.price is not None and made.price.amount == "19.99" and made.price.rate == "150"
    assert store.requests[made.address].price == made.price


def test_the_rate_lock_is_the_default_expiry_and_caps_the_stores_default() -> None:
    """No expires_in: the lock (15 min); a store default longer than the lock is capped
    (it was set for piconero prices), a shorter one kept."""
    for default, wanted in ((None, LOCK), (3600, LOCK), (120, 120)):
        requests, _store, _wallet = _requests(FixedRate(), StoreDefaults(expires_in=default))
        made = asyncio.run(requests.create(_priced()))
        assert abs(_expires_in(made.created_at, made.expires_at) - wanted) < 5, default


def test_an_expiry_past_the_lock_is_refused_before_anything_is_asked() -> None:
    pricing = FixedRate()
    requests, store, wallet = _requests(pricing)
    with pytest.raises(InvalidInput, match="rate lock"):
        asyncio.run(requests.create(_priced(expires_in=LOCK + 1)))
    assert pricing.asked == [] and store.requests == {} and wallet.next_index == 1
    made = asyncio.run(requests.create(_priced(expires_in=LOCK)))
    assert made.expires_at is not None and made.expires_at < datetime.now(UTC) + timedelta(
        seconds=LOCK + 5
    )


def test_no_fresh_rate_creates_nothing() -> None:
    """RatesUnavailable (503) before a subaddress is spent or a row written."""
    requests, store, wallet = _requests(FixedRate(down=True))
    with pytest.raises(RatesUnavailable):
        asyncio.run(requests.create(_priced()))
    assert store.requests == {} and wallet.next_index == 1


def test_fiat_turned_off_is_a_400() -> None:
    requests, store, _wallet = _requests(None)
    with pytest.raises(InvalidInput, match="turned off"):
        asyncio.run(requests.create(_priced()))
    assert store.requests == {}


def test_an_explicit_tolerance_above_the_converted_amount_is_refused() -> None:
    """The tolerance is checked against the converted amount (known only then)."""
    requests, store, _wallet = _requests(FixedRate())
    with pytest.raises(InvalidInput, match="underpay_tolerance"):
        asyncio.run(requests.create(_priced("1", underpay_tolerance=10**13)))
    assert store.requests == {}
