"""The rate book (core/rates.py) over the real sources and fake providers on loopback:
which answers make the rate, when there is none, the quote, the refresh loop, the logs
and the metrics. The clock is injected: answers age without sleeping."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from testsupport.fake_rates import (
    PROVIDERS,
    Answer,
    FakeRates,
    literal,
    malformed,
    oversized,
    redirect,
    slow,
    unknown,
)
from xmrgate.adapters.rate_metrics import register
from xmrgate.adapters.rate_sources import build_sources, rate_client
from xmrgate.core.rates import RateBook
from xmrgate.domain.errors import InvalidInput, RatesUnavailable
from xmrgate.domain.fiat import parse_price

#: The timeout of the tests about slow sources; every other call gets PATIENT, so that a
#: loaded machine (``make unit`` runs two workers beside Chromium and PostgreSQL) cannot
#: turn a loopback answer into a timeout.
TIMEOUT = 0.5
PATIENT = 5.0
MAX_AGE = 300.0


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def servers() -> Iterator[FakeRates]:
    with FakeRates() as fake:
        yield fake


@pytest.fixture
def fake(servers: FakeRates) -> FakeRates:
    servers.reset()
    return servers


Clients = tuple[asyncio.Runner, httpx.AsyncClient, httpx.AsyncClient]


@pytest.fixture(scope="module")
def loop_and_clients() -> Iterator[Clients]:
    """One event loop and two clients (patient, hasty) for the module: a client costs
    ~45 ms to make."""
    with asyncio.Runner() as runner:
        patient, hasty = rate_client(None, PATIENT), rate_client(None, TIMEOUT)
        yield runner, patient, hasty
        runner.run(patient.aclose())
        runner.run(hasty.aclose())


@pytest.fixture
def runner(loop_and_clients: Clients) -> asyncio.Runner:
    return loop_and_clients[0]


@pytest.fixture
def hasty(loop_and_clients: Clients) -> httpx.AsyncClient:
    """A client with the short TIMEOUT."""
    return loop_and_clients[2]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_book(loop_and_clients: Clients, fake: FakeRates, clock: Clock) -> BookMaker:
    return BookMaker(loop_and_clients[1], fake, clock)


class BookMaker:
    def __init__(self, client: httpx.AsyncClient, fake: FakeRates, clock: Clock) -> None:
        self.client, self.fake, self.clock = client, fake, clock

    def __call__(
        self,
        currencies: Sequence[str] = ("EUR", "USD"),
        *,
        min_sources: int = 1,
        timeout: float | None = None,
        client: httpx.AsyncClient | None = None,
        refresh: float = 60.0,
    ) -> RateBook:
        sources = build_sources(PROVIDERS, self.fake.bases, client=client or self.client)
        return RateBook(
            sources,
            currencies,
            refresh=refresh,
            max_age=MAX_AGE,
            max_spread=0.05,
            min_sources=min_sources,
            timeout=timeout,
            now=self.clock,
        )


def answer_all(fake: FakeRates, currency: str, *values: str) -> None:
    for provider, value in zip(PROVIDERS, values, strict=True):
        fake.set(provider, currency, value)


def sources_of(book: RateBook, currency: str = "EUR") -> dict[str, dict[str, object]]:
    snapshot = book.snapshot(currency)
    listed = snapshot["sources"]
    assert isinstance(listed, list)
    return {str(entry["name"]): entry for entry in listed}


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for ``condition`` (about the fake server's threads: no event to await)."""
    for _ in range(int(timeout / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition did not come true in time")


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def unavailable(book: RateBook, currency: str = "EUR") -> str:
    with pytest.raises(RatesUnavailable) as caught:
        book.current(currency)
    return caught.value.message


def test_agreeing_sources_give_their_median(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner, clock: Clock
) -> None:
    answer_all(fake, "EUR", "150", "151", "152")
    answer_all(fake, "USD", "160", "160", "160")
    book = make_book()
    runner.run(book.refresh_once())
    locked = book.current("EUR")
    assert locked.rate == Decimal("151")
    assert locked.sources == ("coingecko", "kraken", "cryptocompare")
    assert locked.at == clock.now
    assert book.current("usd").rate == Decimal("160")
    clock.advance(30)
    snapshot = book.snapshot("EUR")
    assert snapshot == {
        "currency": "EUR",
        "rate": "151",
        "rate_at": "2026-05-01T12:00:00.000000Z",
        "age_seconds": 30.0,
        "reason": None,
        "sources": [
            {
                "name": name,
                "rate": value,
                "at": "2026-05-01T12:00:00.000000Z",
                "used": True,
                "reason": None,
                "last_error": None,
            }
            for name, value in zip(PROVIDERS, ("150", "151", "152"), strict=True)
        ],
    }
    assert book.age("EUR") == 30.0
    assert book.misses == {"coingecko": 0, "kraken": 0, "cryptocompare": 0}


def test_nothing_is_fetched_before_the_first_refresh(make_book: BookMaker) -> None:
    book = make_book()
    assert unavailable(book).startswith(
        "no fresh exchange rate for EUR: no fresh answer (coingecko: no answer yet; "
    )
    assert book.age("EUR") is None


def test_the_quote_rounds_up_at_the_current_rate(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner, clock: Clock
) -> None:
    answer_all(fake, "EUR", "150", "150", "150")
    book = make_book(("EUR",))
    runner.run(book.refresh_once())
    piconero, quote = book.quote(parse_price("19.99", "EUR"))
    assert piconero == 133_266_666_667  # 0.13326666... XMR, the last piconero up
    assert quote.to_json() == {
        "amount": "19.99",
        "currency": "EUR",
        "rate": "150",
        "sources": ["coingecko", "kraken", "cryptocompare"],
        "rate_at": "2026-05-01T12:00:00.000000Z",
    }
    with pytest.raises(InvalidInput, match="more XMR than a request can hold"):
        book.quote(parse_price("999999999999", "EUR"))
    clock.advance(MAX_AGE + 1)
    with pytest.raises(RatesUnavailable):
        book.quote(parse_price("19.99", "EUR"))


def test_one_source_down(make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner) -> None:
    answer_all(fake, "EUR", "150", "150", "153")
    fake.down("kraken")
    book = make_book()
    runner.run(book.refresh_once())
    locked = book.current("EUR")
    assert locked.rate == Decimal("151.5")
    assert locked.sources == ("coingecko", "cryptocompare")
    kraken = sources_of(book)["kraken"]
    assert kraken["used"] is False and kraken["rate"] is None
    assert str(kraken["reason"]).startswith("no answer: cannot connect")
    assert book.misses["kraken"] == 2  # EUR and USD


def test_a_stale_source_counts_until_max_age(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner, clock: Clock
) -> None:
    answer_all(fake, "EUR", "150", "151", "152")
    book = make_book(("EUR",))
    runner.run(book.refresh_once())
    fake.down("kraken")
    clock.advance(MAX_AGE - 100)
    runner.run(book.refresh_once())
    # Its answer of 200 s ago still counts; the failed try shows beside it.
    kraken = sources_of(book)["kraken"]
    assert kraken["used"] is True and kraken["rate"] == "151"
    assert str(kraken["last_error"]).startswith("cannot connect")
    clock.advance(101)
    runner.run(book.refresh_once())
    kraken = sources_of(book)["kraken"]
    assert kraken["used"] is False and kraken["rate"] == "151"
    assert str(kraken["reason"]).startswith("stale: its last answer is 301 s old (at most 300 s)")
    assert book.current("EUR").rate == Decimal("151")  # the median of 150 and 152
    assert book.current("EUR").sources == ("coingecko", "cryptocompare")


def test_a_source_40_percent_off_is_dropped(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner
) -> None:
    answer_all(fake, "EUR", "100", "140", "101")
    book = make_book(("EUR",))
    runner.run(book.refresh_once())
    assert book.current("EUR").rate == Decimal("100.5")
    assert book.current("EUR").sources == ("coingecko", "cryptocompare")
    kraken = sources_of(book)["kraken"]
    assert kraken["used"] is False and kraken["rate"] == "140"
    assert str(kraken["reason"]).startswith("off by 38.6 % from the median 101")


def test_all_down_is_rates_unavailable(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner
) -> None:
    for provider in PROVIDERS:
        fake.down(provider)
    book = make_book()
    runner.run(book.refresh_once())
    message = unavailable(book)
    assert message.startswith("no fresh exchange rate for EUR: no fresh answer (coingecko: ")
    assert message.count("cannot connect") == 3
    assert book.snapshot("EUR")["rate"] is None
    assert book.snapshot("EUR")["reason"] == message.removeprefix(
        "no fresh exchange rate for EUR: "
    )


def test_malformed_oversized_and_redirected_answers_are_not_prices(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner
) -> None:
    fake.set("coingecko", "EUR", malformed())
    fake.set("kraken", "EUR", oversized())
    fake.set("cryptocompare", "EUR", "150")
    book = make_book(("EUR",))
    runner.run(book.refresh_once())
    assert book.current("EUR").sources == ("cryptocompare",)
    reasons = {name: entry["reason"] for name, entry in sources_of(book).items()}
    assert str(reasons["coingecko"]).startswith("no answer: malformed JSON")
    assert reasons["kraken"] == "no answer: answer over 65536 bytes"
    fake.set("cryptocompare", "EUR", redirect("http://127.0.0.2:8/data/price"))
    runner.run(book.refresh_once())
    reason = sources_of(book)["cryptocompare"]["reason"]
    assert reason is None  # its earlier answer is still fresh ...
    assert str(sources_of(book)["cryptocompare"]["last_error"]).startswith("redirect (302)")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (literal("NaN"), "not a finite number: NaN"),
        (literal("-150"), "not a positive rate: -150"),
        (literal("0"), "not a positive rate: 0"),
    ],
    ids=["NaN", "negative", "zero"],
)
def test_absurd_values_are_not_prices(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner, value: Answer, reason: str
) -> None:
    fake.set("coingecko", "EUR", value)
    fake.set("kraken", "EUR", "150")
    fake.set("cryptocompare", "EUR", "150")
    book = make_book(("EUR",))
    runner.run(book.refresh_once())
    assert book.current("EUR").sources == ("kraken", "cryptocompare")
    assert sources_of(book)["coingecko"]["reason"] == f"no answer: {reason}"


def test_a_currency_one_source_lacks(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner
) -> None:
    fake.set("coingecko", "JPY", "25000")
    fake.set("kraken", "JPY", unknown())
    fake.set("cryptocompare", "JPY", "25100")
    book = make_book(("JPY",))
    runner.run(book.refresh_once())
    assert book.current("JPY").rate == Decimal("25050")
    assert sources_of(book, "JPY")["kraken"]["reason"] == (
        'no answer: kraken: ["EQuery:Unknown asset pair"]'
    )


def test_a_slow_source_does_not_hold_the_others(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner, hasty: httpx.AsyncClient
) -> None:
    answer_all(fake, "EUR", "150", "151", "152")
    fake.set("cryptocompare", "EUR", slow(5, "152"))
    book = make_book(("EUR",), client=hasty)
    started = time.monotonic()
    runner.run(book.refresh_once())
    assert time.monotonic() - started < TIMEOUT + 0.5
    assert book.current("EUR").sources == ("coingecko", "kraken")


def test_the_books_own_timeout_bounds_a_source(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner
) -> None:
    """A client with a long timeout: the book's deadline still ends the call."""
    answer_all(fake, "EUR", "150", "151", "152")
    fake.set("kraken", "EUR", slow(5, "151"))
    book = make_book(("EUR",), timeout=TIMEOUT)
    started = time.monotonic()
    runner.run(book.refresh_once())
    assert time.monotonic() - started < TIMEOUT + 0.5
    assert sources_of(book)["kraken"]["reason"] == f"no answer: no answer within {TIMEOUT:g} s"


def test_a_proxy_that_points_nowhere_gives_no_rate(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner
) -> None:
    answer_all(fake, "EUR", "150", "151", "152")
    proxied = rate_client(f"socks5://127.0.0.1:{closed_port()}", TIMEOUT)
    try:
        book = make_book(("EUR",), client=proxied)
        runner.run(book.refresh_once())
    finally:
        runner.run(proxied.aclose())
    assert unavailable(book).startswith("no fresh exchange rate for EUR")
    assert all(fake.hits(provider) == 0 for provider in PROVIDERS)


def test_too_few_agreeing_sources(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner
) -> None:
    answer_all(fake, "EUR", "150", "151", "152")
    fake.down("cryptocompare")
    book = make_book(("EUR",), min_sources=3)
    runner.run(book.refresh_once())
    assert "2 agreeing fresh answer(s), 3 needed" in unavailable(book)


def test_a_currency_not_configured_is_the_clients_error(make_book: BookMaker) -> None:
    book = make_book(("USD", "EUR"))
    expected = "prices in GBP are not accepted here; configured currencies: USD, EUR"
    for call in (book.current, book.snapshot, book.age):
        with pytest.raises(InvalidInput, match=expected):
            call("GBP")
    with pytest.raises(InvalidInput, match="fiat prices are turned off"):
        make_book(()).current("EUR")


def test_run_refreshes_at_once_then_periodically_until_stopped(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner
) -> None:
    answer_all(fake, "EUR", "150", "151", "152")
    book = make_book(("EUR",), refresh=0.05)

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(book.run(stop))
        await until(lambda: fake.hits("kraken", "EUR") >= 3)
        stop.set()
        await asyncio.wait_for(task, 1)

    runner.run(scenario())
    assert fake.hits("kraken", "EUR") >= 3
    assert book.current("EUR").rate == Decimal("151")


def test_run_stops_while_a_refresh_waits(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner
) -> None:
    """Shutting down does not wait for a slow source's timeout."""
    fake.set_all("EUR", slow(5, "150"))

    async def scenario() -> float:
        book = make_book(("EUR",))
        stop = asyncio.Event()
        task = asyncio.create_task(book.run(stop))
        await until(lambda: fake.hits("kraken", "EUR") > 0)
        started = time.monotonic()
        stop.set()
        await asyncio.wait_for(task, 2)
        return time.monotonic() - started

    assert runner.run(scenario()) < 0.5


def test_a_miss_is_logged_once_per_state_change(
    make_book: BookMaker,
    fake: FakeRates,
    runner: asyncio.Runner,
    caplog: pytest.LogCaptureFixture,
) -> None:
    answer_all(fake, "EUR", "150", "151", "152")
    fake.down("kraken")
    book = make_book(("EUR",))
    with caplog.at_level(logging.INFO, logger="xmrgate.core.rates"):
        for _ in range(3):
            runner.run(book.refresh_once())
        fake.up("kraken")
        runner.run(book.refresh_once())
        runner.run(book.refresh_once())
    kraken = [r for r in caplog.records if "rate source kraken" in r.getMessage()]
    assert [(r.levelname, r.getMessage()[:38]) for r in kraken] == [
        ("WARNING", "rate source kraken: no EUR rate: canno"),
        ("INFO", "rate source kraken answers for EUR aga"),
    ]
    choices = [r.getMessage() for r in caplog.records if r.getMessage().startswith("EUR rate")]
    assert choices == [
        "EUR rate 151 from coingecko, cryptocompare",
        "EUR rate 151 from coingecko, kraken, cryptocompare",
    ]
    assert book.misses["kraken"] == 3


def test_a_dropped_source_is_logged_as_a_warning(
    make_book: BookMaker,
    fake: FakeRates,
    runner: asyncio.Runner,
    caplog: pytest.LogCaptureFixture,
) -> None:
    answer_all(fake, "EUR", "100", "140", "101")
    book = make_book(("EUR",))
    with caplog.at_level(logging.INFO, logger="xmrgate.core.rates"):
        runner.run(book.refresh_once())
        runner.run(book.refresh_once())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "EUR rate from coingecko, cryptocompare; dropped kraken: off by 38.6 % from the "
        "median 101 (at most 5.0 %)"
    ]


def test_the_metrics_read_the_book(
    make_book: BookMaker, fake: FakeRates, runner: asyncio.Runner, clock: Clock
) -> None:
    answer_all(fake, "EUR", "150", "151", "152")
    fake.down("kraken")
    book = make_book(("EUR", "USD"))
    registry = CollectorRegistry()
    register(registry, book)
    runner.run(book.refresh_once())
    clock.advance(42)
    text = generate_latest(registry).decode()
    assert 'xmrgate_rate_age_seconds{currency="EUR"} 42.0' in text
    assert 'xmrgate_rate_age_seconds{currency="USD"}' not in text  # no USD rate
    assert 'xmrgate_rate_available{currency="EUR"} 1.0' in text
    assert 'xmrgate_rate_available{currency="USD"} 0.0' in text
    assert 'xmrgate_rate_source_misses_total{source="kraken"} 2.0' in text
    assert 'xmrgate_rate_source_misses_total{source="coingecko"} 1.0' in text  # USD unknown
    assert "# TYPE xmrgate_rate_source_misses_total counter" in text
