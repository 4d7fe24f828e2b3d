"""One exchange rate for the cluster: several rate books (one per process)
sharing their answers through an in-memory fake of the database. The leader asks the
sources and stores; followers quote the stored answers; a database failure never stops
quoting; a follower takes over from a leader that died and carries on its answers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from xmrgate.core.rate_sharing import SharedAnswer
from xmrgate.core.rates import FOLLOW_STEP, RateBook, RateSourceMiss
from xmrgate.domain.errors import DatabaseUnavailable, RatesUnavailable
from xmrgate.domain.fiat import parse_price
from xmrgate.domain.payloads import rfc3339

REFRESH = 60.0
MAX_AGE = 300.0


class Clock:
    """The clock every process reads (one machine); the test moves it."""

    def __init__(self) -> None:
        self.now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Provider:
    """A rate source shared by every process: its price, whether it is down, its calls."""

    def __init__(self, name: str, value: str) -> None:
        self.name = name
        self.value = Decimal(value)
        self.down = False
        self.calls = 0

    async def fetch(self, currency: str) -> Decimal:
        self.calls += 1
        if self.down:
            raise RateSourceMiss("cannot connect: refused")
        return self.value


class Cluster:
    """The database of the processes: who holds the lock, and the stored answers."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, str], SharedAnswer] = {}
        self.holder: Answers | None = None
        self.unreachable = False  # every call fails
        self.writes_fail = False  # stores fail (the lock and reads work)
        self.reads_fail = False
        self.stores = 0

    def process(self) -> Answers:
        return Answers(self)


class Answers:
    """One process's ``RateAnswers`` on the cluster's fake database."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def _reach(self) -> None:
        if self.cluster.unreachable:
            raise DatabaseUnavailable("database unavailable")

    async def lead(self) -> bool:
        self._reach()
        if self.cluster.holder is None:
            self.cluster.holder = self
        return self.cluster.holder is self

    async def store(self, answers: Sequence[SharedAnswer]) -> None:
        self._reach()
        if self.cluster.writes_fail or self.cluster.holder is not self:
            raise DatabaseUnavailable("database unavailable")
        self.cluster.stores += 1
        for answer in answers:
            self.cluster.stored[(answer.source, answer.currency)] = answer

    async def load(self) -> list[SharedAnswer]:
        self._reach()
        if self.cluster.reads_fail:
            raise DatabaseUnavailable("database unavailable")
        return list(self.cluster.stored.values())

    async def release(self) -> None:
        if self.cluster.holder is self:
            self.cluster.holder = None

    def die(self) -> None:
        """The process is killed: its connection ends and the lock is free."""
        if self.cluster.holder is self:
            self.cluster.holder = None


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def providers() -> list[Provider]:
    return [
        Provider("coingecko", "150"),
        Provider("kraken", "151"),
        Provider("cryptocompare", "152"),
    ]


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


def book(providers: list[Provider], clock: Clock, answers: Answers | None) -> RateBook:
    return RateBook(
        providers,
        ("EUR",),
        refresh=REFRESH,
        max_age=MAX_AGE,
        max_spread=0.05,
        min_sources=1,
        now=clock,
        shared=answers,
    )


def sources_of(book: RateBook) -> dict[str, dict[str, object]]:
    """``GET /rates``' sources of EUR, by name."""
    listed = book.snapshot("EUR")["sources"]
    assert isinstance(listed, list)
    return {str(entry["name"]): entry for entry in listed}


def calls(providers: list[Provider]) -> int:
    return sum(p.calls for p in providers)


def test_a_follower_quotes_the_stored_answers(
    providers: list[Provider], clock: Clock, cluster: Cluster
) -> None:
    leader = book(providers, clock, cluster.process())
    follower = book(providers, clock, cluster.process())
    asyncio.run(leader.refresh_once())
    assert leader.leading and calls(providers) == 3
    with pytest.raises(RatesUnavailable):  # nothing read yet
        follower.current("EUR")
    clock.advance(5)
    asyncio.run(follower.refresh_once())
    assert not follower.leading and calls(providers) == 3  # it asked nobody
    assert follower.current("EUR") == leader.current("EUR")
    assert follower.snapshot("EUR") == leader.snapshot("EUR")
    assert follower.age("EUR") == leader.age("EUR") == 5.0  # the stored answers' age
    price = parse_price("19.99", "EUR")
    assert follower.quote(price) == leader.quote(price)

    # The leader's next answers reach the follower at its next read, not before.
    providers[1].value = Decimal("151.5")
    providers[2].down = True
    clock.advance(REFRESH)
    asyncio.run(leader.refresh_once())
    assert leader.current("EUR").rate == Decimal("151.5")  # median of 150, 151.5, 152
    assert follower.current("EUR").rate == Decimal("151")
    asyncio.run(follower.refresh_once())
    assert follower.current("EUR") == leader.current("EUR")
    assert follower.snapshot("EUR") == leader.snapshot("EUR")
    assert follower.misses == leader.misses == {"coingecko": 0, "kraken": 0, "cryptocompare": 1}
    assert sources_of(follower)["cryptocompare"]["last_error"] == "cannot connect: refused"
    assert calls(providers) == 6


def test_the_sources_are_asked_once_per_refresh_for_the_cluster(
    providers: list[Provider], clock: Clock, cluster: Cluster
) -> None:
    books = [book(providers, clock, cluster.process()) for _ in range(4)]
    for _ in range(5):
        for each in books:
            asyncio.run(each.refresh_once())
        clock.advance(REFRESH)
    assert calls(providers) == 5 * 3
    assert [each.leading for each in books] == [True, False, False, False]
    rates = {each.current("EUR") for each in books}
    assert len(rates) == 1


def test_without_shared_answers_every_book_asks(providers: list[Provider], clock: Clock) -> None:
    """A book built without ``shared``: every process asks the sources itself."""
    books = [book(providers, clock, None) for _ in range(4)]
    for each in books:
        asyncio.run(each.refresh_once())
    assert calls(providers) == 4 * 3


def test_a_leaders_database_failure_does_not_stop_quoting(
    providers: list[Provider],
    clock: Clock,
    cluster: Cluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    leader = book(providers, clock, cluster.process())
    follower = book(providers, clock, cluster.process())
    cluster.writes_fail = True
    with caplog.at_level(logging.INFO, logger="xmrgate.core.rate_sharing"):
        for _ in range(3):
            asyncio.run(leader.refresh_once())
            asyncio.run(follower.refresh_once())
        assert leader.current("EUR").rate == Decimal("151")  # quotes what it fetched
        assert leader.leading  # and keeps the lead: it tries again next refresh
        with pytest.raises(RatesUnavailable):  # nothing stored for the follower
            follower.current("EUR")
        cluster.writes_fail = False
        asyncio.run(leader.refresh_once())
        asyncio.run(follower.refresh_once())
    assert follower.current("EUR") == leader.current("EUR")
    assert cluster.stores == 1
    messages = [r.getMessage() for r in caplog.records if "cluster's answers" in r.getMessage()]
    assert messages == [
        "exchange rates: cannot store the cluster's answers (retried at the next refresh): "
        "database unavailable",
        "exchange rates: can store the cluster's answers again",
    ]


def test_a_followers_read_failure_keeps_its_answers(
    providers: list[Provider], clock: Clock, cluster: Cluster
) -> None:
    leader = book(providers, clock, cluster.process())
    follower = book(providers, clock, cluster.process())
    asyncio.run(leader.refresh_once())
    asyncio.run(follower.refresh_once())
    cluster.reads_fail = True
    clock.advance(REFRESH)
    asyncio.run(follower.refresh_once())
    assert follower.current("EUR").rate == Decimal("151")  # its last read, still fresh
    clock.advance(MAX_AGE)
    with pytest.raises(RatesUnavailable, match="stale"):  # then it ages like any answer
        follower.current("EUR")


def test_a_database_that_cannot_say_who_leads(
    providers: list[Provider],
    clock: Clock,
    cluster: Cluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nobody could store what it asked, so nobody asks; what was held still quotes."""
    only = book(providers, clock, cluster.process())
    asyncio.run(only.refresh_once())
    cluster.unreachable = True
    with caplog.at_level(logging.WARNING, logger="xmrgate.core.rate_sharing"):
        asyncio.run(only.refresh_once())
    assert not only.leading and calls(providers) == 3
    assert only.current("EUR").rate == Decimal("151")
    assert "cannot take the lead for the cluster's answers" in caplog.text
    cluster.unreachable = False
    asyncio.run(only.refresh_once())
    assert only.leading and calls(providers) == 6


def test_a_follower_takes_over_from_a_dead_leader_and_carries_on(
    providers: list[Provider], clock: Clock, cluster: Cluster
) -> None:
    """The new leader reads the stored answers before asking: a source down since keeps
    its last good answer, and the count of its misses goes on from the stored one."""
    first_answers = cluster.process()
    first = book(providers, clock, first_answers)
    second = book(providers, clock, cluster.process())
    asyncio.run(first.refresh_once())
    answered_at = clock.now
    providers[1].down = True
    clock.advance(REFRESH)
    asyncio.run(first.refresh_once())
    # The follower read long ago; the leader dies before it reads again.
    first_answers.die()
    clock.advance(REFRESH)
    asyncio.run(second.refresh_once())
    assert second.leading and calls(providers) == 9
    kraken = sources_of(second)["kraken"]
    assert kraken["rate"] == "151" and kraken["at"] == rfc3339(answered_at)
    assert second.misses["kraken"] == 2  # one under each leader
    assert cluster.stored[("kraken", "EUR")].misses == 2
    assert second.current("EUR").sources == ("coingecko", "kraken", "cryptocompare")


def test_a_leader_that_lost_the_lead_follows(
    providers: list[Provider], clock: Clock, cluster: Cluster
) -> None:
    first_answers = cluster.process()
    first = book(providers, clock, first_answers)
    second = book(providers, clock, cluster.process())
    asyncio.run(first.refresh_once())
    first_answers.die()  # its connection dropped, the process lives on
    asyncio.run(second.refresh_once())
    asyncio.run(first.refresh_once())
    assert second.leading and not first.leading
    assert calls(providers) == 6  # the first asked once, the second once: not again


def test_a_followers_next_read_falls_just_after_the_leaders_next_store(
    providers: list[Provider], clock: Clock, cluster: Cluster
) -> None:
    """Alone or leading: every refresh. Following: one step after the leader's next
    answers are due, and every step while they are overdue (or none are stored yet)."""
    step = min(REFRESH / 10, FOLLOW_STEP)
    assert book(providers, clock, None).next_refresh() == REFRESH
    leader_answers = cluster.process()
    cluster.holder = leader_answers  # the leader is asking the sources for the first time
    leader = book(providers, clock, leader_answers)
    follower = book(providers, clock, cluster.process())
    asyncio.run(follower.refresh_once())
    assert follower.next_refresh() == step
    asyncio.run(leader.refresh_once())
    assert leader.next_refresh() == REFRESH
    clock.advance(10)
    asyncio.run(follower.refresh_once())
    assert follower.next_refresh() == REFRESH - 10 + step
    clock.advance(REFRESH - 10)
    assert follower.next_refresh() == step  # due now: read again soon, and try the lead
    clock.advance(-2 * REFRESH)  # the leader's clock is ahead of this one
    assert follower.next_refresh() == REFRESH


async def until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "not in time"
        await asyncio.sleep(0.01)


def test_run_gives_up_the_lead_on_stop_and_a_follower_takes_it_within_a_refresh(
    providers: list[Provider], cluster: Cluster
) -> None:
    refresh = 0.2

    def running_book() -> RateBook:
        return RateBook(
            providers,
            ("EUR",),
            refresh=refresh,
            max_age=5.0,
            max_spread=0.05,
            min_sources=1,
            shared=cluster.process(),
        )

    async def scenario() -> None:
        first, second = running_book(), running_book()
        stop_first, stop_second = asyncio.Event(), asyncio.Event()
        running_first = asyncio.create_task(first.run(stop_first))
        await until(lambda: cluster.stores > 0, timeout=2)
        running_second = asyncio.create_task(second.run(stop_second))
        await asyncio.sleep(3 * refresh)
        assert first.leading and not second.leading
        assert second.current("EUR").rate == first.current("EUR").rate
        stop_first.set()
        await asyncio.wait_for(running_first, 2)
        assert cluster.holder is None  # given up at once, not at the process's exit
        await until(lambda: second.leading, timeout=refresh * 1.5)
        stop_second.set()
        await asyncio.wait_for(running_second, 2)
        assert cluster.holder is None

    asyncio.run(scenario())
