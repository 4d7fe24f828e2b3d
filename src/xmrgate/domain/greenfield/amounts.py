"""Greenfield decimal strings, both ways (as BTCPay writes and reads them).

BTCPay writes every decimal as a JSON *string* with ``decimal.ToString(InvariantCulture)``:
plain digits, a point, never an exponent, and the scale the value carries (a .NET decimal
keeps its trailing zeros: parsed from "12.50" it prints "12.50"). PHP clients read these
with strict ``string`` types, so a number or ``1E-7`` breaks them.

Output rules here:

- an amount the client gave (``amount``) is echoed with the scale it was sent with, as
  BTCPay's decimal does: "12.5" stays "12.5", "12.50" stays "12.50";
- an amount we compute in a fiat currency (``paidAmount``) is rounded to the currency's
  minor units and printed with all of them ("12.50"): §2.1 says "rounded to the currency's
  digits", and a fixed scale reads as money;
- XMR comes from piconero exactly, with trailing zeros trimmed (``money.piconero_to_xmr``):
  §2.3 says "up to 12 decimals", and a string of integer arithmetic can never be off by one.

Input: ``amount`` may be a JSON string, number or integer (§0 "Reading accepts ...").
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

from xmrgate.domain.fiat import CURRENCY_DECIMALS, MAX_INTEGER_DIGITS
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.money import DECIMALS, MAX_AMOUNT, PICONERO_PER_XMR, piconero_to_xmr

XMR = "XMR"
# A string amount is what PHPLIB's PreciseNumber writes: digits and at most one point.
# .NET's decimal.Parse takes no exponent in a string either, so none is taken here.
_DIGITS = frozenset("0123456789")


def decimal_string(value: Decimal) -> str:
    """``value`` as Greenfield writes a decimal: plain digits, its own scale, no exponent.

    ``Decimal("1E-7")`` -> ``"0.0000001"``, ``Decimal("12.50")`` -> ``"12.50"``,
    ``Decimal("-0")`` -> ``"0"`` (a negative zero is noise, not a sign). Raises
    ``ValueError`` for NaN or an infinity: nothing we serve may hold one.
    """
    if not value.is_finite():
        raise ValueError(f"{value} is not a finite decimal")
    if value.is_zero():
        value = abs(value)
    # format 'f' never uses an exponent, unlike str(Decimal), which gives "1E-7".
    return format(value, "f")


def xmr_string(piconero: int) -> str:
    """``piconero`` as an XMR decimal string; negative allowed (``due`` when overpaid, §2.3).

    ``1`` -> ``"0.000000000001"``, ``-1500000000000`` -> ``"-1.5"``, ``0`` -> ``"0"``.
    """
    if isinstance(piconero, bool) or not isinstance(piconero, int):
        raise TypeError(f"piconero must be an int, not {type(piconero).__name__}")
    text = piconero_to_xmr(abs(piconero))
    return f"-{text}" if piconero < 0 else text


def currency_decimals(currency: str) -> int:
    """The minor units of ``currency``: 12 for XMR, the ISO 4217 table of ``fiat`` else.

    Raises ``KeyError`` for a currency we cannot price (the web layer refuses it first).
    """
    return DECIMALS if currency.upper() == XMR else CURRENCY_DECIMALS[currency.upper()]


def rounded_string(value: Decimal, currency: str) -> str:
    """A computed amount of ``currency`` (``paidAmount``) rounded to its minor units.

    Half-even, as .NET's ``Math.Round`` rounds by default; every digit is printed,
    ``12.5`` EUR -> ``"12.50"``, 1000 JPY -> ``"1000"``.
    """
    exponent = Decimal(1).scaleb(-currency_decimals(currency))
    return decimal_string(value.quantize(exponent, rounding=ROUND_HALF_EVEN))


def _from_string(text: str, path: str) -> Decimal:
    stripped = text.strip()  # .NET's parser forgives surrounding blanks; so do we.
    sign, body = (stripped[0], stripped[1:]) if stripped[:1] in ("+", "-") else ("", stripped)
    whole, point, fraction = body.partition(".")
    if not (whole or fraction) or not set(whole + fraction) <= _DIGITS:
        raise FieldError(
            path,
            f'{path} must be a decimal number such as "12.34" (digits and one point, '
            "no exponent, no thousands separator)",
            text,
        )
    return Decimal(sign + (whole or "0") + point + fraction)


def parse_amount(value: object, path: str = "amount") -> Decimal:
    """An incoming amount (JSON string, number or integer) as a ``Decimal``.

    Refused with a ``FieldError`` at ``path``: anything but a string or a number (a
    boolean too), NaN and the infinities, a negative amount, more than
    ``fiat.MAX_INTEGER_DIGITS`` integer digits (under a trillion: more is a bug or an
    attack, never a price) and more than 12 decimals (a piconero is the smallest unit
    any amount here can come to). Zero is allowed: BTCPay takes ``amount >= 0`` (§2.1).
    A float is read through its shortest repr (``12.34`` -> ``Decimal("12.34")``), which
    is what the JSON said; parse JSON with ``parse_float=Decimal`` to skip that step.
    """
    if isinstance(value, bool):
        raise FieldError(path, f"{path} must be a number or a decimal string", value)
    if isinstance(value, str):
        amount = _from_string(value, path)
    elif isinstance(value, int):
        amount = Decimal(value)
    elif isinstance(value, float):
        amount = Decimal(repr(value))  # "nan" and "inf" parse too, and are refused below
    elif isinstance(value, Decimal):
        amount = value
    else:
        raise FieldError(path, f"{path} must be a number or a decimal string", value)
    if not amount.is_finite():
        raise FieldError(path, f"{path} must be a finite number", value)
    if amount < 0:
        raise FieldError(path, f"{path} must not be negative", value)
    exponent = amount.as_tuple().exponent
    assert isinstance(exponent, int)  # finite, checked above
    decimals = max(-exponent, 0)
    if decimals > DECIMALS:
        raise FieldError(path, f"{path} has more than {DECIMALS} decimals", value)
    if amount.adjusted() >= MAX_INTEGER_DIGITS:
        raise FieldError(path, f"{path} must be below 10^{MAX_INTEGER_DIGITS}", value)
    return abs(amount) if amount.is_zero() else amount


def xmr_to_piconero(amount: Decimal, path: str = "amount") -> int:
    """An XMR amount (already through ``parse_amount``) in piconero, exactly.

    Refused with a ``FieldError`` at ``path`` when it has a fraction of a piconero or
    is more than a request can hold (``money.MAX_AMOUNT``).
    """
    scaled = amount * PICONERO_PER_XMR
    if scaled != scaled.to_integral_value():
        raise FieldError(path, f"{path} in XMR takes at most {DECIMALS} decimals", str(amount))
    piconero = int(scaled)
    if piconero > MAX_AMOUNT:
        raise FieldError(path, f"{path} is more XMR than a payment request can hold", str(amount))
    return piconero
