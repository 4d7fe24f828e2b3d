"""Fiat prices: parsing them, converting them to piconero, and choosing the rate.

Pure: no clock, no I/O. ``core/rates.py`` keeps the sources' answers and asks
:func:`choose_rate` for the rate; docs/pricing.md tells the rules in prose.

Every number here is a ``Decimal`` or an ``int``, never a float: a float cannot hold
19.99 exactly, and a rounding error in the customer's disfavour must be impossible.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, localcontext
from urllib.parse import urlsplit

from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.money import MAX_AMOUNT, PICONERO_PER_XMR

# ISO 4217 minor units of the currencies the built-in sources price XMR in. A table, not
# babel: babel (CLDR) is not installed and weighs ~30 MB for these few lines, and ISO
# minor units change about once a decade. A currency missing here is refused, so a
# typo never becomes a price.
CURRENCY_DECIMALS: Mapping[str, int] = {
    **dict.fromkeys(("JPY", "KRW", "VND", "CLP", "ISK", "UGX", "PYG"), 0),
    **dict.fromkeys(("KWD", "BHD", "OMR", "JOD", "TND"), 3),
    **dict.fromkeys(
        (
            "USD", "EUR", "GBP", "CHF", "CAD", "AUD", "NZD", "CNY", "HKD", "SGD", "TWD",
            "SEK", "NOK", "DKK", "PLN", "CZK", "HUF", "RON", "TRY", "RUB", "UAH",
            "GEL", "KZT", "INR", "PKR", "BDT", "LKR", "IDR", "MYR", "PHP", "THB", "ILS",
            "AED", "SAR", "QAR", "EGP", "ZAR", "NGN", "KES", "BRL", "MXN", "ARS", "COP",
            "PEN", "UYU",
        ),
        2,
    ),
}  # fmt: skip
#: Integer digits of a price, at most: under a trillion of any currency.
MAX_INTEGER_DIGITS = 12
#: The built-in rate sources (``adapters/rate_sources.py``), named here so that the
#: settings can check ``--rate-sources`` without importing an adapter.
RATE_SOURCE_NAMES = ("coingecko", "kraken", "cryptocompare")

_AMOUNT = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_CODE = re.compile(r"[A-Za-z]{3}")
# Room for every exact sum and half of two rates (adapters refuse rates of over 40
# digits), so the medians below are exact.
_PRECISION = 100


@dataclass(frozen=True, slots=True)
class Price:
    """A positive amount of a known currency, within its minor units."""

    amount: Decimal
    currency: str


def parse_currency(code: object) -> str:
    """An ISO 4217 code of :data:`CURRENCY_DECIMALS`, upper-cased ("eur" is EUR).

    Raises ``InvalidInput`` naming the problem.
    """
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        raise InvalidInput("price currency must be a 3-letter ISO 4217 code such as EUR")
    upper = code.upper()
    if upper not in CURRENCY_DECIMALS:
        raise InvalidInput(f"unknown currency {upper}")
    return upper


def parse_price(amount: object, currency: object) -> Price:
    """The price ``{"amount": "19.99", "currency": "EUR"}`` as sent by a client.

    ``amount`` must be a JSON string of plain digits with at most one point (no sign,
    exponent or spaces), above zero, with at most the currency's minor units as written
    ("19.90" is fine for EUR, "19.990" is not; JPY takes no point at all) and at most
    :data:`MAX_INTEGER_DIGITS` integer digits. ``currency`` is case-insensitive and
    stored upper-case. Raises ``InvalidInput`` with a message a client can act on.
    """
    code = parse_currency(currency)
    if not isinstance(amount, str):
        raise InvalidInput('price amount must be a string of digits such as "19.99"')
    if not _AMOUNT.fullmatch(amount):
        raise InvalidInput(
            'price amount must be plain digits with at most one point, such as "19.99" '
            "(no sign, exponent or spaces)"
        )
    whole, _, fraction = amount.partition(".")
    if len(whole) > MAX_INTEGER_DIGITS:
        raise InvalidInput(f"price amount must have at most {MAX_INTEGER_DIGITS} integer digits")
    decimals = CURRENCY_DECIMALS[code]
    if len(fraction) > decimals:
        raise InvalidInput(f"price amount in {code} takes at most {decimals} decimals")
    value = Decimal(amount)
    if value <= 0:
        raise InvalidInput("price amount must be above zero")
    return Price(value, code)


def piconero_for(price: Price, rate: Decimal) -> int:
    """``price`` at ``rate`` (fiat per XMR) in piconero, rounded **up**.

    Exact: both decimals are taken as integer fractions, so the customer never pays
    less than the price and at most one piconero more. Raises ``InvalidInput`` when the
    result exceeds ``MAX_AMOUNT`` (a request could not store it) and ``ValueError`` for
    a rate that is not a finite positive number (a bug: rates are checked on arrival).
    """
    if not rate.is_finite() or rate <= 0:
        raise ValueError(f"rate must be a finite positive number, not {rate}")
    price_num, price_den = price.amount.as_integer_ratio()
    rate_num, rate_den = rate.as_integer_ratio()
    numerator = price_num * rate_den * PICONERO_PER_XMR
    denominator = price_den * rate_num
    piconero = -(-numerator // denominator)  # ceiling division
    if piconero > MAX_AMOUNT:
        raise InvalidInput(
            f"{plain(price.amount)} {price.currency} is more XMR than a request can hold"
        )
    return piconero


def plain(value: Decimal) -> str:
    """A decimal as plain digits, no exponent and no trailing zeros: ``1.2E+2`` -> ``120``."""
    with localcontext() as ctx:
        ctx.prec = _PRECISION  # normalize() rounds to the context's precision
        return format(value.normalize(), "f")


def _rfc3339(value: datetime) -> str:
    # domain.payloads.rfc3339's format; not imported from there because the payloads
    # show the quote, so they import this module.
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Quote:
    """What a fiat-priced request stores: the price, and the rate that made its amount."""

    amount: str
    currency: str
    rate: str
    sources: tuple[str, ...]
    rate_at: datetime

    def to_json(self) -> dict[str, object]:
        """The ``price`` object of the API, callbacks and event feed."""
        return {
            "amount": self.amount,
            "currency": self.currency,
            "rate": self.rate,
            "sources": list(self.sources),
            "rate_at": _rfc3339(self.rate_at),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Quote:
        """Read back :meth:`to_json`'s dict; raises ``ValueError`` for anything else."""
        amount, currency, rate = data.get("amount"), data.get("currency"), data.get("rate")
        sources, rate_at = data.get("sources"), data.get("rate_at")
        if not (isinstance(amount, str) and isinstance(currency, str) and isinstance(rate, str)):
            raise ValueError("a quote's amount, currency and rate are strings")
        if not isinstance(sources, list | tuple) or not all(isinstance(s, str) for s in sources):
            raise ValueError("a quote's sources are a list of names")
        if not isinstance(rate_at, str):
            raise ValueError("a quote's rate_at is an RFC 3339 string")
        at = datetime.fromisoformat(rate_at)
        if at.tzinfo is None:
            raise ValueError("a quote's rate_at must carry its time zone")
        return cls(amount, currency, rate, tuple(sources), at.astimezone(UTC))


@dataclass(frozen=True, slots=True)
class SourceAnswer:
    """What one source last told about one currency.

    ``value`` and ``at`` are its last good answer (None: none yet); ``error`` is why its
    latest try failed, None when the latest try gave ``value``.
    """

    source: str
    value: Decimal | None
    at: datetime | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RateChoice:
    """The outcome of :func:`choose_rate`.

    ``rate`` is None when there is no rate, and ``problem`` says why. ``used`` names the
    sources whose answers made the rate; ``rejected`` gives every other source the
    reason it was not used, and ``dropped`` names those of them that answered in time
    but too far from the median. ``at`` is the time of the oldest answer used (the
    rate is at least that fresh).
    """

    rate: Decimal | None
    at: datetime | None
    used: tuple[str, ...]
    rejected: Mapping[str, str]
    problem: str | None = None
    dropped: tuple[str, ...] = ()


def median(values: Sequence[Decimal]) -> Decimal:
    """The median, exactly: the mean of the two middle values of an even count."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    with localcontext() as ctx:
        ctx.prec = _PRECISION
        return (ordered[middle - 1] + ordered[middle]) / 2


def _off_by(value: Decimal, centre: Decimal) -> Decimal:
    """How far ``value`` is from ``centre``, as a fraction of ``centre``."""
    with localcontext() as ctx:
        ctx.prec = _PRECISION
        return abs(value - centre) / centre


def _percent(fraction: Decimal) -> str:
    with localcontext() as ctx:
        ctx.prec = _PRECISION
        return f"{(fraction * 100).quantize(Decimal('0.1'))} %"


def choose_rate(
    answers: Sequence[SourceAnswer],
    *,
    now: datetime,
    max_age: float,
    max_spread: float | Decimal,
    min_sources: int,
) -> RateChoice:
    """The rate from the sources' answers, or None with the reason.

    1. Fresh answers are those at most ``max_age`` seconds old at ``now``.
    2. Their median is taken; an answer more than ``max_spread`` (a fraction: 0.05 is
       5 %) away from it is dropped.
    3. With fewer than ``min_sources`` answers left there is no rate; else the rate is
       the median of those left.

    Two fresh answers further apart than about twice ``max_spread`` both lie more than
    ``max_spread`` from their mean (their median), so both are dropped and there is no
    rate, whatever ``min_sources`` says: with two sources there is no telling which one
    is wrong, and no price beats a wrong one. A third source settles it.
    """
    spread = Decimal(str(max_spread))
    rejected: dict[str, str] = {}
    fresh: list[SourceAnswer] = []
    for answer in answers:
        if answer.value is None or answer.at is None:
            rejected[answer.source] = (
                f"no answer: {answer.error}" if answer.error else "no answer yet"
            )
            continue
        if not answer.value.is_finite() or answer.value <= 0:  # never divide by it
            rejected[answer.source] = f"no answer: not a finite positive rate: {answer.value}"
            continue
        age = (now - answer.at).total_seconds()
        if age > max_age:
            why = f"stale: its last answer is {age:.0f} s old (at most {max_age:g} s)"
            rejected[answer.source] = f"{why}; latest try: {answer.error}" if answer.error else why
            continue
        fresh.append(answer)
    if not fresh:
        return RateChoice(None, None, (), rejected, f"no fresh answer ({_reasons(rejected)})")
    centre = median([a.value for a in fresh if a.value is not None])
    kept: list[SourceAnswer] = []
    dropped: list[str] = []
    for answer in fresh:
        assert answer.value is not None  # fresh answers have values
        off = _off_by(answer.value, centre)
        if off > spread:
            rejected[answer.source] = (
                f"off by {_percent(off)} from the median {plain(centre)} "
                f"(at most {_percent(spread)})"
            )
            dropped.append(answer.source)
        else:
            kept.append(answer)
    if len(kept) < min_sources:
        for answer in kept:
            rejected[answer.source] = "agrees, but too few sources do"
        problem = (
            f"{len(kept)} agreeing fresh answer(s), {min_sources} needed "
            f"(--rate-min-sources) ({_reasons(rejected)})"
        )
        return RateChoice(None, None, (), rejected, problem, tuple(dropped))
    rate = median([a.value for a in kept if a.value is not None])
    oldest = min(a.at for a in kept if a.at is not None)
    return RateChoice(rate, oldest, tuple(a.source for a in kept), rejected, None, tuple(dropped))


def _reasons(rejected: Mapping[str, str]) -> str:
    return "; ".join(f"{source}: {why}" for source, why in rejected.items()) or "no sources"


def source_base_url(text: str) -> str:
    """A rate source's base URL (``--rate-source-url NAME=BASE``), without a final slash.

    http(s) with a host, an optional port and path prefix; no query, fragment or
    credentials (they would end up in logs). Raises ``ValueError``.
    """
    try:
        parts = urlsplit(text.strip())
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError as exc:
        raise ValueError(f"invalid URL {text!r}: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{text!r} must be an http(s) URL with a host")
    if parts.query or parts.fragment or parts.username is not None:
        raise ValueError(f"{text!r} must not carry a query, fragment or credentials")
    return text.strip().rstrip("/")


def parse_source_urls(text: str) -> dict[str, str]:
    """``"kraken=http://127.0.0.1:8001,coingecko=https://mirror/cg"`` as name -> base.

    Each name must be a built-in source, at most once. Raises ``ValueError``.
    """
    bases: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, base = item.partition("=")
        name = name.strip().lower()
        if not sep:
            raise ValueError(f"{item!r} must be NAME=URL")
        if name not in RATE_SOURCE_NAMES:
            raise ValueError(
                f"unknown rate source {name!r} (known: {', '.join(RATE_SOURCE_NAMES)})"
            )
        if name in bases:
            raise ValueError(f"rate source {name!r} given twice")
        bases[name] = source_base_url(base)
    return bases
