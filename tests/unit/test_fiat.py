"""Fiat prices (domain/fiat.py): what a client may send, the conversion to piconero
(always rounded up, exactly), and the quote stored with a request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.fiat import (
    CURRENCY_DECIMALS,
    Price,
    Quote,
    parse_currency,
    parse_price,
    piconero_for,
    plain,
)
from xmrgate.domain.money import MAX_AMOUNT, PICONERO_PER_XMR


@pytest.mark.parametrize(
    ("amount", "currency", "expected"),
    [
        ("19.99", "EUR", Price(Decimal("19.99"), "EUR")),
        ("19.9", "eur", Price(Decimal("19.9"), "EUR")),
        ("19", "USD", Price(Decimal("19"), "USD")),
        ("0.01", "USD", Price(Decimal("0.01"), "USD")),
        ("1000", "JPY", Price(Decimal("1000"), "JPY")),
        ("0.125", "KWD", Price(Decimal("0.125"), "KWD")),
        ("007.50", "CHF", Price(Decimal("7.50"), "CHF")),
        ("999999999999.99", "USD", Price(Decimal("999999999999.99"), "USD")),
    ],
)
def test_good_prices(amount: str, currency: str, expected: Price) -> None:
    assert parse_price(amount, currency) == expected


def test_the_amount_keeps_its_written_decimals() -> None:
    """19.90 stays 19.90 in the quote: the merchant's price as written."""
    assert format(parse_price("19.90", "EUR").amount, "f") == "19.90"


@pytest.mark.parametrize(
    ("amount", "currency", "message"),
    [
        ("1e3", "EUR", "plain digits"),
        ("1E3", "EUR", "plain digits"),
        ("-1", "EUR", "plain digits"),
        ("+1", "EUR", "plain digits"),
        (" 1", "EUR", "plain digits"),
        ("1 ", "EUR", "plain digits"),
        ("1\n", "EUR", "plain digits"),
        ("1.", "EUR", "plain digits"),
        (".5", "EUR", "plain digits"),
        ("1,50", "EUR", "plain digits"),
        ("1.2.3", "EUR", "plain digits"),
        ("", "EUR", "plain digits"),
        ("NaN", "EUR", "plain digits"),
        ("Infinity", "EUR", "plain digits"),
        ("\u0661\u0662", "EUR", "plain digits"),  # Arabic-Indic digits: \d would take them
        ("0x10", "EUR", "plain digits"),
        ("1.999", "EUR", "at most 2 decimals"),
        ("19.990", "EUR", "at most 2 decimals"),
        ("10.5", "JPY", "at most 0 decimals"),
        ("10.0", "JPY", "at most 0 decimals"),
        ("0.1255", "KWD", "at most 3 decimals"),
        ("0", "EUR", "above zero"),
        ("0.00", "EUR", "above zero"),
        ("000", "JPY", "above zero"),
        ("1000000000000", "USD", "at most 12 integer digits"),
        ("9" * 400, "USD", "at most 12 integer digits"),
    ],
)
def test_bad_amounts(amount: str, currency: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_price(amount, currency)


@pytest.mark.parametrize("amount", [19.99, 20, True, None, ["19.99"], {"value": "19.99"}])
def test_the_amount_must_be_a_string(amount: object) -> None:
    """A JSON number would be a float to most clients: 19.99 is not 19.99 there."""
    with pytest.raises(InvalidInput, match="must be a string"):
        parse_price(amount, "EUR")


@pytest.mark.parametrize("currency", ["EURO", "EU", "", "E1R", "€UR", " EUR", 978, None, True])
def test_a_currency_is_three_letters(currency: object) -> None:
    with pytest.raises(InvalidInput, match="3-letter ISO 4217 code"):
        parse_price("1", currency)


@pytest.mark.parametrize("currency", ["XYZ", "BTC", "XMR", "ABC"])
def test_an_unknown_currency_is_refused(currency: str) -> None:
    with pytest.raises(InvalidInput, match=f"unknown currency {currency}"):
        parse_price("1", currency)


def test_currency_decimals_are_iso_minor_units() -> None:
    assert CURRENCY_DECIMALS["EUR"] == CURRENCY_DECIMALS["USD"] == 2
    assert CURRENCY_DECIMALS["JPY"] == CURRENCY_DECIMALS["KRW"] == 0
    assert CURRENCY_DECIMALS["KWD"] == 3
    assert parse_currency("usd") == "USD"
    assert all(len(code) == 3 and code.isupper() for code in CURRENCY_DECIMALS)


@pytest.mark.parametrize(
    ("amount", "currency", "rate", "piconero"),
    [
        # 19.99 / 150 = 0.13326666... XMR: the last piconero is rounded up.
        ("19.99", "EUR", "150", 133_266_666_667),
        ("1000", "JPY", "25000", 40_000_000_000),  # exact: nothing to round
        ("10.10", "EUR", "101", 100_000_000_000),
        ("0.01", "USD", "999999999", 11),  # 1.00000000100e-11 XMR: 10.0000001 -> 11
        ("1", "USD", "3", 333_333_333_334),
        ("1", "USD", "123.45678901234567890123", 8_100_000_073),  # 8100000072.9000...
    ],
)
def test_piconero_rounds_up(amount: str, currency: str, rate: str, piconero: int) -> None:
    assert piconero_for(parse_price(amount, currency), Decimal(rate)) == piconero


def test_more_than_a_request_can_hold_is_refused() -> None:
    with pytest.raises(InvalidInput, match="more XMR than a request can hold"):
        piconero_for(parse_price("999999999999", "USD"), Decimal("0.000001"))


def test_the_largest_amount_is_the_limit() -> None:
    """MAX_AMOUNT is 9223372.036854775807 XMR: at 1 USD per XMR a price of 9223372.03
    USD fits, 9223372.04 USD does not."""
    assert piconero_for(parse_price("9223372.03", "USD"), Decimal(1)) == 9_223_372_030 * 10**9
    with pytest.raises(InvalidInput):
        piconero_for(parse_price("9223372.04", "USD"), Decimal(1))


@pytest.mark.parametrize("rate", ["0", "-1", "NaN", "Infinity"])
def test_a_rate_that_is_not_positive_is_a_bug(rate: str) -> None:
    with pytest.raises(ValueError, match="finite positive"):
        piconero_for(parse_price("1", "EUR"), Decimal(rate))


@given(
    amount=st.decimals(min_value=Decimal("0.01"), max_value=Decimal("999999999999.99"), places=2),
    rate=st.decimals(min_value=Decimal("0.000001"), max_value=Decimal("1000000000"), places=8),
)
def test_the_customer_never_pays_less_and_at_most_one_piconero_more(
    amount: Decimal, rate: Decimal
) -> None:
    price = Price(amount, "EUR")
    exact = Fraction(amount) / Fraction(rate) * PICONERO_PER_XMR
    if exact > MAX_AMOUNT:
        with pytest.raises(InvalidInput):
            piconero_for(price, rate)
        return
    piconero = piconero_for(price, rate)
    # piconero * rate / 1e12 >= price and (piconero - 1) * rate / 1e12 < price, exactly.
    assert Fraction(piconero) * Fraction(rate) / PICONERO_PER_XMR >= Fraction(amount)
    assert Fraction(piconero - 1) * Fraction(rate) / PICONERO_PER_XMR < Fraction(amount)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("123.45000000", "123.45"),
        ("1.5E+2", "150"),
        ("1E-7", "0.0000001"),
        ("100", "100"),
        ("0.1000000000000000055511151231257827021181583404541015625", None),
    ],
)
def test_plain_decimals_have_no_exponent(value: str, text: str | None) -> None:
    rendered = plain(Decimal(value))
    assert "E" not in rendered and "e" not in rendered
    assert Decimal(rendered) == Decimal(value)  # nothing rounded away
    if text is not None:
        assert rendered == text


def test_a_quote_reads_back_what_it_wrote() -> None:
    at = datetime(2026, 11, 21, 8, 18, 0, 123456, tzinfo=UTC)
    quote = Quote("19.99", "EUR", "150.25", ("coingecko", "kraken"), at)
    data = quote.to_json()
    assert data == {
        "amount": "19.99",
        "currency": "EUR",
        "rate": "150.25",
        "sources": ["coingecko", "kraken"],
        "rate_at": "2026-11-21T08:18:00.123456Z",
    }
    assert Quote.from_json(data) == quote


def test_a_quote_time_is_written_in_utc() -> None:
    at = datetime(2026, 1, 1, 10, 0, tzinfo=timezone(timedelta(hours=2)))
    assert Quote("1", "EUR", "1", (), at).to_json()["rate_at"] == "2026-01-01T08:00:00.000000Z"


GOOD = {
    "amount": "1",
    "currency": "EUR",
    "rate": "1",
    "sources": [],
    "rate_at": "2026-01-01T00:00:00Z",
}


def test_the_good_shape_reads() -> None:
    """The cases below each change one field of this one, which reads."""
    assert Quote.from_json(GOOD).rate_at == datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "change",
    [
        {"amount": 1},
        {"currency": None},
        {"rate": Decimal(1)},
        {"sources": "kraken"},
        {"sources": [1]},
        {"rate_at": "yesterday"},
        {"rate_at": "2026-01-01T00:00:00"},  # no time zone
        {"rate_at": 1767225600},
    ],
)
def test_a_quote_refuses_another_shape(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Quote.from_json({**GOOD, **change})
    with pytest.raises(ValueError):
        Quote.from_json({})
