"""Greenfield decimal strings (``xmrgate.domain.greenfield.amounts``; greenfield.md §0)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xmrgate.domain.greenfield.amounts import (
    currency_decimals,
    decimal_string,
    parse_amount,
    rounded_string,
    xmr_string,
    xmr_to_piconero,
)
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.money import MAX_AMOUNT, piconero_to_xmr

# Bounded: an unbounded exponent (1E+999999) only makes long strings and slow tests.
finite = st.decimals(min_value=-(10**30), max_value=10**30, places=20) | st.decimals(
    min_value=-1000, max_value=1000, places=2
)
# What parse_amount takes: non-negative, under 10^12, at most 12 decimals.
amounts = st.decimals(
    min_value=0, max_value=Decimal("999999999999.999999999999"), places=12
) | st.decimals(min_value=0, max_value=10**6, places=2)


@given(finite)
def test_decimal_string_is_plain_and_exact(value: Decimal) -> None:
    text = decimal_string(value)
    assert "e" not in text.lower()
    assert Decimal(text) == value
    assert Decimal(text).as_tuple().exponent == min(value.as_tuple().exponent, 0)  # scale kept
    assert not text.startswith("-0") or Decimal(text) != 0


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("1E-7"), "0.0000001"),  # str() would give "1E-7"
        (Decimal("12.50"), "12.50"),  # the scale it was given is kept, as .NET's decimal
        (Decimal("12.5"), "12.5"),
        (Decimal("1.2E+2"), "120"),
        (Decimal("-0.00"), "0.00"),
    ],
)
def test_decimal_string_examples(value: Decimal, text: str) -> None:
    assert decimal_string(value) == text


@pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity")])
def test_decimal_string_refuses_what_is_not_finite(value: Decimal) -> None:
    with pytest.raises(ValueError):
        decimal_string(value)


@given(st.integers(min_value=-MAX_AMOUNT, max_value=MAX_AMOUNT))
def test_xmr_string_is_exact_piconero(piconero: int) -> None:
    text = xmr_string(piconero)
    assert "e" not in text.lower()
    assert Decimal(text) * 10**12 == piconero
    if piconero >= 0:
        assert text == piconero_to_xmr(piconero)


def test_xmr_string_examples() -> None:
    assert xmr_string(1) == "0.000000000001"
    assert xmr_string(-1_500_000_000_000) == "-1.5"  # due when overpaid
    assert xmr_string(0) == "0"
    with pytest.raises(TypeError):
        xmr_string(True)


@pytest.mark.parametrize(
    ("value", "currency", "text"),
    [
        ("12.5", "EUR", "12.50"),
        ("12.5", "eur", "12.50"),
        ("0.125", "EUR", "0.12"),  # half-even, as .NET's Math.Round
        ("0.135", "EUR", "0.14"),
        ("1000.4", "JPY", "1000"),
        ("1.2345", "KWD", "1.234"),
        ("0.1", "XMR", "0.100000000000"),
    ],
)
def test_rounded_string_uses_the_currency_digits(value: str, currency: str, text: str) -> None:
    assert rounded_string(Decimal(value), currency) == text


def test_currency_decimals_refuses_an_unknown_currency() -> None:
    assert currency_decimals("xmr") == 12
    with pytest.raises(KeyError):
        currency_decimals("ZZZ")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("12.34", Decimal("12.34")),
        ("12.50", Decimal("12.50")),
        (" 7 ", Decimal(7)),
        (".5", Decimal("0.5")),
        ("12.", Decimal(12)),
        ("+3", Decimal(3)),
        (12.34, Decimal("12.34")),  # a JSON number read as a float: its shortest repr
        (1.5, Decimal("1.5")),
        (12, Decimal(12)),
        (0, Decimal(0)),
        ("-0", Decimal(0)),
        (Decimal("0.000000000001"), Decimal("0.000000000001")),
    ],
)
def test_parse_amount_takes_strings_and_numbers(value: object, expected: Decimal) -> None:
    parsed = parse_amount(value)
    assert parsed == expected
    assert decimal_string(parsed) == decimal_string(expected)


@pytest.mark.parametrize(
    "value",
    [
        "NaN",
        "nan",
        "Infinity",
        "-Infinity",
        float("nan"),
        float("inf"),
        "1e5",  # a string takes no exponent (.NET's decimal.Parse neither)
        "1,234.5",
        "12.3.4",
        "",
        " ",
        "-",
        ".",
        "abc",
        "١٢",  # Arabic-Indic digits: Decimal() would take them
        "-1",
        -1,
        -0.5,
        True,
        None,
        [],
        {"amount": 1},
        "1000000000000",  # 10^12: more than any price
        1e12,
        "0.0000000000001",  # 13 decimals: below a piconero
    ],
)
def test_parse_amount_refuses_with_the_path_and_the_value(value: object) -> None:
    with pytest.raises(FieldError) as caught:
        parse_amount(value, path="checkout.amount")
    assert caught.value.path == "checkout.amount"
    assert "checkout.amount" in caught.value.message
    assert caught.value.value is value or caught.value.value == value


@given(amounts)
def test_parse_amount_reads_back_what_decimal_string_writes(value: Decimal) -> None:
    assert parse_amount(decimal_string(value)) == value


def test_parse_amount_names_the_reason() -> None:
    with pytest.raises(FieldError, match="negative"):
        parse_amount("-1")
    with pytest.raises(FieldError, match="decimals"):
        parse_amount("0.0000000000001")
    with pytest.raises(FieldError, match="finite"):
        parse_amount(float("inf"))


@given(st.integers(min_value=0, max_value=MAX_AMOUNT))
def test_xmr_to_piconero_is_exact(piconero: int) -> None:
    assert xmr_to_piconero(parse_amount(xmr_string(piconero))) == piconero


def test_xmr_to_piconero_refuses_more_than_a_request_holds() -> None:
    assert xmr_to_piconero(Decimal(piconero_to_xmr(MAX_AMOUNT))) == MAX_AMOUNT
    with pytest.raises(FieldError) as caught:
        xmr_to_piconero(Decimal(piconero_to_xmr(MAX_AMOUNT + 1)))
    assert caught.value.path == "amount"
    with pytest.raises(FieldError):
        xmr_to_piconero(Decimal("0.0000000000005"))
