"""The built-in rate sources: CoinGecko, Kraken and CryptoCompare over HTTP.

Every answer is hostile until proven otherwise. Whatever goes wrong (no connection, a
timeout, a status other than 200, any redirect, a body over :data:`MAX_BODY_BYTES`, a
compressed body, JSON that does not parse or has the wrong shape, a currency the source
does not price, a value that is not a finite positive number within
:data:`MIN_RATE`..:data:`MAX_RATE`) becomes one ``RateSourceMiss`` with the reason;
nothing of httpx or json leaves this module.

``--rate-source-url NAME=BASE`` replaces a source's scheme, host, port and an optional
path prefix; the paths after it stay the provider's own.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import ClassVar

import httpx

from xmrgate.adapters.playground_rate import PlaygroundRateSource
from xmrgate.adapters.tls import httpx_context
from xmrgate.core.rates import RateSource, RateSourceMiss
from xmrgate.domain.fiat import RATE_SOURCE_NAMES, source_base_url
from xmrgate.domain.playground_rate import PLAYGROUND_RATE_SOURCE

#: Largest answer read (bytes); a price answer is a few hundred.
MAX_BODY_BYTES = 64 * 1024
#: Rates outside these bounds (fiat per XMR) are garbage in any currency of
#: ``domain.fiat``: wide enough for an XMR worth millions of VND or IDR, narrow enough to
#: refuse a 1e-30 or a 1e30. A plausible but wrong rate is the spread check's job.
MIN_RATE = Decimal("0.000001")
MAX_RATE = Decimal("1000000000")
#: Significant digits a rate may have: real ones have under 20; the bound keeps the
#: exact arithmetic of ``domain.fiat`` small.
MAX_DIGITS = 40

_PLAIN_NUMBER = re.compile(r"[0-9]{1,20}(?:\.[0-9]{1,30})?")


def rate_client(proxy: str | None, timeout: float) -> httpx.AsyncClient:
    """The one HTTP client of the rate sources.

    ``timeout`` bounds each call as a whole (connect to last byte); ``proxy`` is e.g.
    ``socks5://127.0.0.1:9050`` (Tor) or ``http://proxy:3128``. The environment's proxy
    variables are ignored (``trust_env=False``): the operator's option says where rate
    calls go. Redirects are not followed: a source that moved is a miss to look at.
    """
    return httpx.AsyncClient(
        proxy=proxy,
        timeout=httpx.Timeout(timeout),
        trust_env=False,
        follow_redirects=False,
        verify=httpx_context(trust_env=False),  # httpx's own, made once (adapters/tls.py)
        # identity: a compressed body could expand far beyond the size cap.
        headers={"Accept": "application/json", "Accept-Encoding": "identity"},
    )


class HttpRateSource:
    """A provider's JSON price endpoint; subclasses say where it is and how to read it."""

    name: ClassVar[str]
    default_base: ClassVar[str]

    def __init__(self, client: httpx.AsyncClient, base: str | None = None) -> None:
        self._client = client
        self.base = source_base_url(base) if base is not None else self.default_base
        # The client's timeout applies per network operation; the whole call gets it too,
        # so a server that drips a byte at a time cannot hold a refresh.
        timeouts = client.timeout
        self._deadline = max(
            (t for t in (timeouts.connect, timeouts.read, timeouts.write, timeouts.pool) if t),
            default=None,
        )

    def request(self, currency: str) -> tuple[str, dict[str, str]]:
        """The path (after the base) and query of ``currency``'s price."""
        raise NotImplementedError

    def read(self, document: object, currency: str) -> object:
        """The price out of the parsed answer; raises ``RateSourceMiss``."""
        raise NotImplementedError

    async def fetch(self, currency: str) -> Decimal:
        """The price of one XMR in ``currency``; raises ``RateSourceMiss`` for anything else."""
        path, params = self.request(currency)
        try:
            async with asyncio.timeout(self._deadline):
                body = await self._get(self.base + path, params)
        except TimeoutError as exc:
            raise RateSourceMiss(f"no complete answer within {self._deadline:g} s") from exc
        try:
            document = json.loads(body, parse_float=Decimal, parse_constant=Decimal)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nests
            raise RateSourceMiss(f"malformed JSON: {str(exc)[:100]}") from exc
        return checked_rate(self.read(document, currency))

    async def _get(self, url: str, params: Mapping[str, str]) -> bytes:
        try:
            async with self._client.stream("GET", url, params=params) as response:
                if response.is_redirect:
                    where = response.headers.get("location", "")[:200]
                    raise RateSourceMiss(f"redirect ({response.status_code}) to {where!r} refused")
                if response.status_code != 200:
                    raise RateSourceMiss(f"HTTP {response.status_code}")
                encoding = response.headers.get("content-encoding", "identity").lower()
                if encoding != "identity":
                    raise RateSourceMiss(f"compressed answer ({encoding}) refused")
                return await _capped_body(response)
        except httpx.TimeoutException as exc:
            raise RateSourceMiss(f"timeout ({type(exc).__name__})") from exc
        except httpx.ProxyError as exc:
            raise RateSourceMiss(f"proxy failed: {exc}") from exc
        except httpx.ConnectError as exc:
            raise RateSourceMiss(f"cannot connect: {exc}") from exc
        except httpx.HTTPError as exc:  # protocol errors, a dropped connection, ...
            raise RateSourceMiss(f"{type(exc).__name__}: {exc}") from exc


async def _capped_body(response: httpx.Response) -> bytes:
    """The body, refused once it exceeds :data:`MAX_BODY_BYTES` (declared or read)."""
    declared = response.headers.get("content-length", "0")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise RateSourceMiss(f"answer over {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise RateSourceMiss(f"answer over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def checked_rate(raw: object) -> Decimal:
    """A rate read from JSON (a number, or a plain decimal string for Kraken) that is
    finite, positive and within :data:`MIN_RATE`..:data:`MAX_RATE`."""
    if isinstance(raw, bool):  # before int: True is an int in Python
        raise RateSourceMiss(f"not a number: {str(raw).lower()}")
    if isinstance(raw, int):
        value = Decimal(raw)
    elif isinstance(raw, Decimal):
        value = raw
    elif isinstance(raw, str) and _PLAIN_NUMBER.fullmatch(raw):
        value = Decimal(raw)
    else:
        raise RateSourceMiss(f"not a number: {_short(raw)}")
    if not value.is_finite():
        raise RateSourceMiss(f"not a finite number: {value}")
    if value <= 0:
        raise RateSourceMiss(f"not a positive rate: {value}")
    if len(value.as_tuple().digits) > MAX_DIGITS:
        raise RateSourceMiss(f"a rate of over {MAX_DIGITS} digits")
    if not MIN_RATE <= value <= MAX_RATE:
        raise RateSourceMiss(f"absurd rate: {value}")
    return value


def _short(value: object) -> str:
    return json.dumps(value, default=str)[:120]


def _member(document: object, key: str, what: str) -> object:
    """``document[key]`` of a JSON object, or a miss naming what was missing."""
    if not isinstance(document, dict):
        raise RateSourceMiss(f"unexpected answer: {what} is not a JSON object")
    if key not in document:
        raise RateSourceMiss(f"no {key!r} in {what}")
    value: object = document[key]
    return value


class CoinGecko(HttpRateSource):
    """``/api/v3/simple/price?ids=monero&vs_currencies=eur`` -> ``{"monero": {"eur": 123.45}}``.

    A currency it does not price is simply absent: ``{"monero": {}}``.
    """

    name = "coingecko"
    default_base = "https://api.coingecko.com"

    def request(self, currency: str) -> tuple[str, dict[str, str]]:
        return "/api/v3/simple/price", {"ids": "monero", "vs_currencies": currency.lower()}

    def read(self, document: object, currency: str) -> object:
        prices = _member(document, "monero", "the answer")
        if isinstance(prices, dict) and currency.lower() not in prices:
            raise RateSourceMiss(f"coingecko has no {currency} price")
        return _member(prices, currency.lower(), "the monero entry")


class Kraken(HttpRateSource):
    """``/0/public/Ticker?pair=XMREUR`` -> ``{"error": [], "result": {"XXMRZEUR":
    {"c": ["123.45000000", "0.5"], ...}}}``: the last trade's price is ``c[0]``, a string.

    The result's key is Kraken's own name of the pair (not the one asked), so the single
    entry is taken. An unknown pair answers ``{"error": ["EQuery:Unknown asset pair"]}``.
    """

    name = "kraken"
    default_base = "https://api.kraken.com"

    def request(self, currency: str) -> tuple[str, dict[str, str]]:
        return "/0/public/Ticker", {"pair": f"XMR{currency}"}

    def read(self, document: object, currency: str) -> object:
        errors = _member(document, "error", "the answer")
        if errors:
            raise RateSourceMiss(f"kraken: {_short(errors)}")
        result = _member(document, "result", "the answer")
        if not isinstance(result, dict) or len(result) != 1:
            raise RateSourceMiss(f"kraken: expected one pair for XMR{currency}")
        (ticker,) = result.values()
        last = _member(ticker, "c", "the ticker")
        if not isinstance(last, list) or not last:
            raise RateSourceMiss("kraken: the last trade 'c' is not a list")
        price: object = last[0]
        if not isinstance(price, str):  # Kraken sends decimal strings; anything else is off
            raise RateSourceMiss(f"kraken: the last trade price is not a string: {_short(price)}")
        return price


class CryptoCompare(HttpRateSource):
    """``/data/price?fsym=XMR&tsyms=EUR`` -> ``{"EUR": 123.45}``; failures (an unknown
    currency among them) answer 200 with ``{"Response": "Error", "Message": "..."}``."""

    name = "cryptocompare"
    default_base = "https://min-api.cryptocompare.com"

    def request(self, currency: str) -> tuple[str, dict[str, str]]:
        return "/data/price", {"fsym": "XMR", "tsyms": currency}

    def read(self, document: object, currency: str) -> object:
        if isinstance(document, dict) and document.get("Response") == "Error":
            raise RateSourceMiss(f"cryptocompare: {_short(document.get('Message'))}")
        return _member(document, currency, "the answer")


SOURCES: Mapping[str, type[HttpRateSource]] = {
    cls.name: cls for cls in (CoinGecko, Kraken, CryptoCompare)
}
assert tuple(SOURCES) == RATE_SOURCE_NAMES, "domain.fiat names the same sources"


def build_sources(
    names: Sequence[str], base_urls: Mapping[str, str], *, client: httpx.AsyncClient
) -> list[RateSource]:
    """The sources ``names`` (``--rate-sources``) on ``client``, each at its base in
    ``base_urls`` (``--rate-source-url``) or its provider's.

    Raises ``ValueError`` for an unknown name (naming the known ones) or a bad base URL.
    """
    # The fixed playground rate (``xmrgate dev``) is named, never given a URL: it has none.
    unknown = [n for n in names if n not in SOURCES and n != PLAYGROUND_RATE_SOURCE]
    unknown += [n for n in base_urls if n not in SOURCES]
    if unknown:
        raise ValueError(
            f"unknown rate source {', '.join(map(repr, unknown))} (known: {', '.join(SOURCES)})"
        )
    return [
        PlaygroundRateSource()
        if name == PLAYGROUND_RATE_SOURCE
        else SOURCES[name](client, base_urls.get(name))
        for name in names
    ]
