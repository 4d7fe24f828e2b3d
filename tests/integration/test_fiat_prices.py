"""Fiat-priced payment requests against fake rate providers on loopback (the
providers' real answer shapes), the real regtest wallet and both databases."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.integration.callback_support import wait_kinds
from tests.integration.conftest import BACKENDS
from tests.integration.receiver import Receiver
from testsupport.fake_rates import FakeRates
from testsupport.gateway import Gateway, close_gateway, count_rows, start_gateway
from testsupport.processes import wait_until
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

RATE_LOCK = 600  # --rate-lock 10m: fiat requests expire with it by default
EUR_RATES = {"coingecko": "150.00", "kraken": "150.30", "cryptocompare": "149.90"}


@pytest.fixture(scope="module")
def rates() -> Iterator[FakeRates]:
    """The three providers, agreeing on EUR (median 150.00) and JPY."""
    with FakeRates() as fake:
        for source, value in EUR_RATES.items():
            fake.set(source, "EUR", value)
            fake.set(source, "JPY", "23000")
        yield fake


@pytest.fixture(scope="module", params=BACKENDS)
def gateway(
    request: pytest.FixtureRequest,
    devnet: Devnet,
    rates: FakeRates,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Gateway]:
    """A gateway pricing EUR and JPY from the fake providers, refreshed every second."""
    args = [
        "--callback-allow",
        "127.0.0.1",
        "--rate-currencies",
        "EUR,JPY",
        "--rate-source-url",
        rates.option(),
        "--rate-refresh",
        "1s",
        "--rate-timeout",
        "1s",
        "--rate-max-age",
        "4s",
        "--rate-lock",
        f"{RATE_LOCK}s",
    ]
    workdir: Path = tmp_path_factory.mktemp(f"fiat-{request.param}")
    gw = start_gateway(devnet, request.param, workdir, args)
    try:
        wait_for_rate(gw, "EUR", "150.00")
        yield gw
    finally:
        close_gateway(gw)


def wait_for_rate(gw: Gateway, currency: str, rate: str | None) -> dict[str, Any]:
    """GET /rates until ``currency``'s rate is ``rate`` (None: no rate)."""

    def probe() -> tuple[bool, dict[str, Any]]:
        body: dict[str, Any] = gw.get("/rates", params={"currency": currency}).json()
        got = body.get("rate")
        if rate is None or got is None:
            return got is rate, body
        return Decimal(got) == Decimal(rate), body

    result: dict[str, Any] = wait_until(
        f"the {currency} rate to be {rate}", probe, timeout=20, log=gw.log_path, proc=gw.proc
    )
    return result


def when(value: str) -> datetime:
    """An RFC 3339 timestamp of the API."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def piconero(amount: str, rate: str) -> int:
    """The amount the gateway must ask: the price over the rate, rounded UP."""
    exact = Decimal(amount) * 10**12 / Decimal(rate)
    return math.ceil(exact)


def test_a_fiat_priced_request_is_paid_and_its_callbacks_carry_the_price(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """19.99 EUR at the median 150.00 is 133266666667 piconero (rounded up); the quote is
    kept on the request and carried by the answer, the status, the list, the callback and
    the event feed; the request expires with the rate lock."""
    body = {"price": {"amount": "19.99", "currency": "eur"}, "callback_url": receiver.url}
    answer = gateway.post("/receive", json=body)
    assert answer.status_code == 200, answer.text
    created = answer.json()
    expected = piconero("19.99", "150.00")
    assert expected == 133266666667
    assert created["amount"] == expected and type(created["amount"]) is int
    price = created["price"]
    assert price["amount"] == "19.99" and price["currency"] == "EUR"
    assert Decimal(price["rate"]) == Decimal("150.00")
    assert sorted(price["sources"]) == sorted(EUR_RATES)
    lock = when(created["expires_at"]) - when(created["created_at"])
    assert abs(lock.total_seconds() - RATE_LOCK) < 2, created
    assert when(price["rate_at"]) <= when(created["created_at"])

    address = created["address"]
    assert gateway.get(f"/receive/{address}").json()["price"] == price
    listed = gateway.get("/receive", params={"limit": 100}).json()
    [entry] = [r for r in listed["requests"] if r["address"] == address]
    assert entry["price"] == price

    tx_hash = devnet.pay(address, expected, mine_blocks=1)
    [confirmed] = wait_kinds(receiver, address, ["transfer.confirmed"])
    assert confirmed.json["price"] == price
    assert confirmed.json["transaction"]["tx_hash"] == tx_hash
    assert confirmed.json["amount"]["due"] == 0 and confirmed.json["status"] == "paid"
    feed = gateway.get("/events", params={"limit": 200}).json()
    mine = [e for e in feed["events"] if e["address"] == address]
    assert mine and all(e["payload"]["price"] == price for e in mine)


def test_a_request_in_piconero_has_no_price(gateway: Gateway) -> None:
    """Plain amounts are untouched: no price key anywhere (MoneroPay's shape)."""
    created = gateway.receive(12345)
    assert "price" not in created and created["amount"] == 12345
    assert "price" not in gateway.get(f"/receive/{created['address']}").json()


def test_yen_take_no_decimals_and_a_shorter_expiry_is_kept(gateway: Gateway) -> None:
    """JPY has no minor unit: "1000" is priced at 23000 JPY/XMR; expires_in below the
    lock is kept as asked."""
    answer = gateway.post(
        "/receive", json={"price": {"amount": "1000", "currency": "JPY"}, "expires_in": 60}
    )
    assert answer.status_code == 200, answer.text
    created = answer.json()
    assert created["amount"] == piconero("1000", "23000")
    lock = when(created["expires_at"]) - when(created["created_at"])
    assert abs(lock.total_seconds() - 60) < 2


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"price": {"amount": "10.5", "currency": "JPY"}}, "at most 0 decimals"),
        ({"price": {"amount": "19.999", "currency": "EUR"}}, "at most 2 decimals"),
        ({"price": {"amount": "1e3", "currency": "EUR"}}, "price"),
        ({"price": {"amount": "-1", "currency": "EUR"}}, "price"),
        ({"price": {"amount": "0", "currency": "EUR"}}, "above zero"),
        ({"price": {"amount": "5", "currency": "USD"}}, "EUR"),  # not configured: names them
        ({"price": {"amount": "5", "currency": "EUR"}, "amount": 5}, "exactly one"),
        ({"description": "neither"}, "exactly one"),
        ({"price": {"amount": "5", "currency": "EUR"}, "expires_in": RATE_LOCK + 1}, "rate lock"),
        ({"price": {"amount": 5, "currency": "EUR"}}, "price"),
    ],
)
def test_bad_prices_are_refused_and_nothing_is_created(
    gateway: Gateway, body: dict[str, Any], says: str
) -> None:
    """Each gets a 400 JSON error saying what is wrong; no request row is written."""
    before = count_rows(gateway, "payment_requests")
    answer = gateway.post("/receive", json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()
    assert error["status"] == 400 and says in error["message"], error
    assert count_rows(gateway, "payment_requests") == before


def test_an_outlier_is_dropped_and_shown_why(gateway: Gateway, rates: FakeRates) -> None:
    """Kraken 40 % off: the rate is the median of the two that agree; GET /rates tells
    which source was dropped and why."""
    rates.set("kraken", "EUR", "210.00")
    try:
        snapshot = wait_for_rate(gateway, "EUR", "149.95")
        used = {s["name"]: s for s in snapshot["sources"]}
        assert used["kraken"]["used"] is False and "%" in used["kraken"]["reason"]
        assert used["coingecko"]["used"] and used["cryptocompare"]["used"]
        created = gateway.post("/receive", json={"price": {"amount": "3", "currency": "EUR"}})
        assert created.status_code == 200, created.text
        assert sorted(created.json()["price"]["sources"]) == ["coingecko", "cryptocompare"]
        assert created.json()["amount"] == piconero("3", "149.95")
    finally:
        rates.set("kraken", "EUR", EUR_RATES["kraken"])
        wait_for_rate(gateway, "EUR", "150.00")


def test_no_fresh_rate_refuses_fiat_with_503_and_amounts_still_work(
    gateway: Gateway, rates: FakeRates
) -> None:
    """Every provider down: once the last answers are older than --rate-max-age, a fiat
    price is refused (503, nothing created) while plain amounts are served; the rate is
    back as soon as one provider answers again."""
    for source in EUR_RATES:
        rates.down(source)
    try:
        snapshot = wait_for_rate(gateway, "EUR", None)
        assert snapshot["reason"]
        before = count_rows(gateway, "payment_requests")
        refused = gateway.post("/receive", json={"price": {"amount": "5", "currency": "EUR"}})
        assert refused.status_code == 503, refused.text
        assert "no fresh exchange rate" in refused.json()["message"]
        assert count_rows(gateway, "payment_requests") == before
        assert gateway.receive(777)["amount"] == 777
        metrics = gateway.get("/metrics").text
        assert 'xmrgate_rate_available{currency="EUR"} 0.0' in metrics
    finally:
        for source in EUR_RATES:
            rates.up(source)
    wait_for_rate(gateway, "EUR", "150.00")
    metrics = gateway.get("/metrics").text
    assert 'xmrgate_rate_available{currency="EUR"} 1.0' in metrics


def test_rates_of_a_currency_not_priced_is_a_400(gateway: Gateway) -> None:
    """GET /rates names the configured currencies; another one is a clear 400."""
    listed = gateway.get("/rates").json()
    assert [c["currency"] for c in listed["currencies"]] == ["EUR", "JPY"]
    refused = gateway.get("/rates", params={"currency": "XXX"})
    assert refused.status_code == 400 and "EUR" in refused.json()["message"], refused.text
