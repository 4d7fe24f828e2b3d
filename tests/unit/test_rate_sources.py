"""The built-in rate sources (adapters/rate_sources.py) against fake providers on
loopback (testsupport/fake_rates.py) that answer in the providers' real shapes: every
hostile answer is a ``RateSourceMiss`` with its reason, never a price."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from decimal import Decimal

import httpx
import pytest

from testsupport.fake_rates import (
    PROVIDERS,
    Answer,
    FakeRates,
    drop,
    literal,
    malformed,
    oversized,
    redirect,
    slow,
    status,
    unknown,
)
from xmrgate.adapters.rate_sources import (
    MAX_BODY_BYTES,
    SOURCES,
    CoinGecko,
    HttpRateSource,
    Kraken,
    build_sources,
    checked_rate,
    rate_client,
)
from xmrgate.core.rates import RateSourceMiss
from xmrgate.domain.fiat import RATE_SOURCE_NAMES, parse_source_urls, source_base_url

#: The timeout of the tests about slow sources; every other call gets PATIENT, so that a
#: loaded machine (``make unit`` runs two workers beside Chromium and PostgreSQL) cannot
#: turn a loopback answer into a timeout.
TIMEOUT = 0.5
PATIENT = 5.0

Clients = tuple[asyncio.Runner, httpx.AsyncClient, httpx.AsyncClient]


@pytest.fixture(scope="module")
def servers() -> Iterator[FakeRates]:
    with FakeRates() as fake:
        yield fake


@pytest.fixture
def fake(servers: FakeRates) -> FakeRates:
    servers.reset()
    return servers


class Fetcher:
    """Fetches on one event loop through two clients (patient, hasty) for the module: an
    httpx client costs ~45 ms to make (its TLS context)."""

    def __init__(self, clients: Clients, fake: FakeRates) -> None:
        self.runner, self.patient, self.hasty = clients
        self.fake = fake

    def value(
        self, provider: str, currency: str = "EUR", base: str | None = None, hasty: bool = False
    ) -> Decimal:
        bases = self.fake.bases if base is None else {provider: base}
        client = self.hasty if hasty else self.patient
        (source,) = build_sources([provider], bases, client=client)
        return self.runner.run(source.fetch(currency))

    def miss(self, provider: str, currency: str = "EUR", hasty: bool = False) -> str:
        """The reason of the miss ``provider`` gives (the test fails if it gives a rate)."""
        with pytest.raises(RateSourceMiss) as caught:
            self.value(provider, currency, hasty=hasty)
        return caught.value.message


@pytest.fixture(scope="module")
def loop_and_clients() -> Iterator[Clients]:
    with asyncio.Runner() as runner:
        patient, hasty = rate_client(None, PATIENT), rate_client(None, TIMEOUT)
        yield runner, patient, hasty
        runner.run(patient.aclose())
        runner.run(hasty.aclose())


@pytest.fixture
def sources(loop_and_clients: Clients, fake: FakeRates) -> Fetcher:
    return Fetcher(loop_and_clients, fake)


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_price_is_read_exactly(sources: Fetcher, fake: FakeRates, provider: str) -> None:
    """No float on the way: every digit of the answer arrives."""
    fake.set(provider, "EUR", "153.123456")
    fake.set(provider, "USD", "0.1")
    assert sources.value(provider, "EUR") == Decimal("153.123456")
    assert sources.value(provider, "USD") == Decimal("0.1")


def test_a_json_float_keeps_all_its_digits(sources: Fetcher, fake: FakeRates) -> None:
    fake.set("coingecko", "EUR", literal("0.1000000000000000055511151231257827"))
    value = sources.value("coingecko")
    assert value == Decimal("0.1000000000000000055511151231257827")


@pytest.mark.parametrize(
    ("provider", "target"),
    [
        ("coingecko", "/api/v3/simple/price?ids=monero&vs_currencies=eur"),
        ("kraken", "/0/public/Ticker?pair=XMREUR"),
        ("cryptocompare", "/data/price?fsym=XMR&tsyms=EUR"),
    ],
)
def test_the_providers_paths(sources: Fetcher, fake: FakeRates, provider: str, target: str) -> None:
    fake.set(provider, "EUR", "100")
    sources.value(provider)
    assert fake.targets(provider) == [target]


def test_a_base_url_keeps_its_path_prefix(sources: Fetcher, fake: FakeRates) -> None:
    fake.set("kraken", "EUR", "100")
    assert sources.value("kraken", base=fake.base("kraken") + "/mirror/") == Decimal("100")
    assert fake.targets("kraken") == ["/mirror/0/public/Ticker?pair=XMREUR"]


# What each provider answers, and the reason it must give: everything hostile is a miss.
HOSTILE: list[tuple[str, Answer, str]] = [
    ("NaN", literal("NaN"), "not a finite number: NaN"),
    ("Infinity", literal("Infinity"), "not a finite number: Infinity"),
    ("-Infinity", literal("-Infinity"), "not a finite number: -Infinity"),
    ("negative", literal("-1.5"), "not a positive rate: -1.5"),
    ("zero", literal("0"), "not a positive rate: 0"),
    ("zero float", literal("0.0"), "not a positive rate: 0.0"),
    ("text", literal('"abc"'), 'not a number: "abc"'),
    ("bool", literal("true"), "not a number: true"),
    ("null", literal("null"), "not a number: null"),
    ("object", literal('{"v": 1}'), "not a number"),
    ("huge", literal("1e30"), "absurd rate: 1E+30"),
    ("tiny", literal("1e-30"), "absurd rate: 1E-30"),
    ("digits", literal("1." + "1" * 60), "over 40 digits"),
    ("HTTP 500", status(500), "HTTP 500"),
    ("HTTP 429", status(429), "HTTP 429"),
    ("HTTP 404", status(404), "HTTP 404"),
    ("malformed", malformed(), "malformed JSON"),
    ("oversized", oversized(MAX_BODY_BYTES + 1), f"answer over {MAX_BODY_BYTES} bytes"),
    (
        "oversized, no length",
        oversized(4 * MAX_BODY_BYTES, declare_length=False),
        f"answer over {MAX_BODY_BYTES} bytes",
    ),
    ("redirect", redirect("http://127.0.0.2:1/elsewhere"), "redirect (302) to"),
    ("dropped", drop(), "RemoteProtocolError"),
]
# Kraken sends its prices as JSON strings: the same cases in its shape.
KRAKEN_TEXT = {
    "NaN": literal('"NaN"'),
    "Infinity": literal('"Infinity"'),
    "-Infinity": literal('"-Infinity"'),
    "negative": literal('"-1.5"'),
    "zero": literal('"0"'),
    "zero float": literal('"0.0"'),
    "huge": literal('"1e30"'),
    "tiny": literal('"0.0000000000000000000000000001"'),
    "digits": literal('"1.' + "1" * 60 + '"'),
}
KRAKEN_REASON = {
    "NaN": 'not a number: "NaN"',
    "Infinity": 'not a number: "Infinity"',
    "-Infinity": 'not a number: "-Infinity"',
    "negative": 'not a number: "-1.5"',
    "zero": "not a positive rate: 0",
    "zero float": "not a positive rate: 0.0",
    "huge": 'not a number: "1e30"',
    "tiny": "absurd rate",
    "digits": 'not a number: "1.111',
    "bool": "not a string: true",
    "null": "not a string: null",
    "object": "not a string",
}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("case", "answer", "reason"), HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_answers_are_misses(
    sources: Fetcher, fake: FakeRates, provider: str, case: str, answer: Answer, reason: str
) -> None:
    if provider == "kraken":
        answer = KRAKEN_TEXT.get(case, answer)
        reason = KRAKEN_REASON.get(case, reason)
    fake.set(provider, "EUR", answer)
    assert reason in sources.miss(provider)


@pytest.mark.parametrize(
    ("provider", "reason"),
    [
        ("coingecko", "coingecko has no XYZ price"),
        ("kraken", 'kraken: ["EQuery:Unknown asset pair"]'),
        ("cryptocompare", 'cryptocompare: "cccagg_or_exchange market does not exist'),
    ],
)
def test_a_currency_the_source_lacks_is_a_miss(
    sources: Fetcher, fake: FakeRates, provider: str, reason: str
) -> None:
    fake.set(provider, "XYZ", unknown())
    assert reason in sources.miss(provider, "XYZ")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_source_that_is_down_is_a_miss(sources: Fetcher, fake: FakeRates, provider: str) -> None:
    fake.set(provider, "EUR", "100")
    fake.down(provider)
    assert sources.miss(provider).startswith("cannot connect")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_slow_source_is_a_miss_within_the_timeout(
    sources: Fetcher, fake: FakeRates, provider: str
) -> None:
    fake.set(provider, "EUR", slow(5, "100"))
    started = time.monotonic()
    reason = sources.miss(provider, hasty=True)
    elapsed = time.monotonic() - started
    assert "timeout" in reason or f"no complete answer within {TIMEOUT:g} s" in reason
    assert elapsed < TIMEOUT + 0.5


@pytest.mark.parametrize("scheme", ["socks5", "socks5h", "http"])
def test_a_proxy_that_points_nowhere_is_a_miss(fake: FakeRates, scheme: str) -> None:
    """The answer is there, but not through the proxy: a miss, not a direct call."""
    fake.set("kraken", "EUR", "100")

    async def through_proxy() -> Decimal:
        async with rate_client(f"{scheme}://127.0.0.1:{closed_port()}", TIMEOUT) as client:
            (source,) = build_sources(["kraken"], fake.bases, client=client)
            return await source.fetch("EUR")

    with pytest.raises(RateSourceMiss) as caught:
        asyncio.run(through_proxy())
    reason = caught.value.message
    assert reason.startswith(("cannot connect", "proxy failed"))
    assert fake.hits("kraken") == 0


def test_kraken_takes_the_single_pair_whatever_its_name(sources: Fetcher, fake: FakeRates) -> None:
    """Kraken answers XMRGBP as ``XXMRZGBP``; a pair it names otherwise is read too."""
    fake.set("kraken", "GBP", "120.5")
    fake.set("kraken", "CHF", "130.25")
    assert sources.value("kraken", "GBP") == Decimal("120.5")
    assert sources.value("kraken", "CHF") == Decimal("130.25")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (Decimal("123.45"), Decimal("123.45")),
        (150, Decimal(150)),
        ("123.45000000", Decimal("123.45")),
        (Decimal("0.000001"), Decimal("0.000001")),
        (Decimal("1000000000"), Decimal("1000000000")),
    ],
)
def test_checked_rate_takes_numbers_and_plain_decimal_strings(
    raw: object, expected: Decimal
) -> None:
    assert checked_rate(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        True,
        False,
        None,
        "1e3",
        " 1",
        "-1",
        "",
        1.5,  # a float never gets here (parse_float=Decimal); if one does, it is refused
        [Decimal(1)],
        Decimal("0.0000009"),
        Decimal("1000000000.1"),
        -5,
        0,
        Decimal("sNaN"),
    ],
)
def test_checked_rate_refuses(raw: object) -> None:
    with pytest.raises(RateSourceMiss):
        checked_rate(raw)


def test_build_sources_knows_the_three_sources() -> None:
    async def go() -> None:
        async with rate_client(None, TIMEOUT) as client:
            built = build_sources(["kraken", "coingecko"], {}, client=client)
            assert [s.name for s in built] == ["kraken", "coingecko"]
            assert [(type(s), s.base) for s in built if isinstance(s, HttpRateSource)] == [
                (Kraken, "https://api.kraken.com"),
                (CoinGecko, "https://api.coingecko.com"),
            ]
            with pytest.raises(
                ValueError, match=r"'binance'.*known: coingecko, kraken, cryptocompare"
            ):
                build_sources(["binance"], {}, client=client)
            with pytest.raises(ValueError, match="'bitstamp'"):
                build_sources(["kraken"], {"bitstamp": "http://x"}, client=client)
            with pytest.raises(ValueError, match="http"):
                build_sources(["kraken"], {"kraken": "ftp://x"}, client=client)

    asyncio.run(go())
    assert tuple(SOURCES) == RATE_SOURCE_NAMES


@pytest.mark.parametrize(
    ("text", "base"),
    [
        ("http://127.0.0.1:8001", "http://127.0.0.1:8001"),
        ("https://mirror.example/cg/", "https://mirror.example/cg"),
        ("http://[::1]:80/x", "http://[::1]:80/x"),
    ],
)
def test_good_base_urls(text: str, base: str) -> None:
    assert source_base_url(text) == base


@pytest.mark.parametrize(
    "text",
    [
        "ftp://mirror",
        "mirror.example",
        "http://",
        "http:///path",
        "http://host:port",
        "http://host/?q=1",
        "http://host/#f",
        "http://user:pw@host",
        "",
    ],
)
def test_bad_base_urls(text: str) -> None:
    with pytest.raises(ValueError):
        source_base_url(text)


def test_rate_source_url_option() -> None:
    text = "kraken=http://127.0.0.1:8001, coingecko=https://mirror/cg/"
    assert parse_source_urls(text) == {
        "kraken": "http://127.0.0.1:8001",
        "coingecko": "https://mirror/cg",
    }
    assert parse_source_urls("") == {}
    with pytest.raises(ValueError, match="unknown rate source 'binance'"):
        parse_source_urls("binance=http://x")
    with pytest.raises(ValueError, match="twice"):
        parse_source_urls("kraken=http://a,kraken=http://b")
    with pytest.raises(ValueError, match="NAME=URL"):
        parse_source_urls("http://a")
