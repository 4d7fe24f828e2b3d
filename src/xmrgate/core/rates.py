"""The exchange rates in use: every source's last answer, refreshed in the background.

``RateBook.run`` asks every source (``adapters/rate_sources.py``) for every configured
currency at once, then every ``refresh`` seconds; a request never waits on a source.
With shared answers (``core/rate_sharing.py``) only the cluster's leader asks and stores
what it got; the other processes read the stored answers instead. :meth:`RateBook.current`
decides at the moment it is asked, from the answers held, with
``domain.fiat.choose_rate``: an answer that has grown stale since the last refresh no
longer counts, even when the refresh loop itself is stuck. docs/pricing.md has the rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Protocol

from xmrgate.core.rate_sharing import AnswerSharing, RateAnswers, SharedAnswer
from xmrgate.domain.errors import InvalidInput, RatesUnavailable, XmrgateError
from xmrgate.domain.fiat import (
    Price,
    Quote,
    RateChoice,
    SourceAnswer,
    choose_rate,
    piconero_for,
    plain,
)
from xmrgate.domain.payloads import rfc3339

log = logging.getLogger(__name__)

#: A follower reads again this long (at most a tenth of the refresh) after the leader's
#: next answers are due, and as often while they are overdue (the leader still asking, a
#: start-up, a leader gone: each read also tries to take the lead). Short, because the
#: processes quote differently from the leader's store until the followers' next read.
FOLLOW_STEP = 0.25


class RateSourceMiss(XmrgateError):
    """A rate source gave no usable answer (down, timeout, refused or absurd content).

    Never reaches a client: the book records the message as the source's reason.
    """


class RateSource(Protocol):
    """One provider of XMR prices (``adapters/rate_sources.py``)."""

    @property
    def name(self) -> str:
        """The source's name, as ``--rate-sources`` spells it."""
        ...

    async def fetch(self, currency: str) -> Decimal:
        """The price of one XMR in ``currency``; raises ``RateSourceMiss`` otherwise."""
        ...


@dataclass(frozen=True, slots=True)
class LockedRate:
    """The rate a quote is made with: fiat per XMR, its sources, its oldest answer's time."""

    rate: Decimal
    sources: tuple[str, ...]
    at: datetime


@dataclass(slots=True)
class _Slot:
    """One source's last good answer for one currency, its latest failure, when it was
    last tried, and how many of its tries missed."""

    value: Decimal | None = None
    at: datetime | None = None
    error: str | None = None
    checked: datetime | None = None
    misses: int = 0


def utc_now() -> datetime:
    """The wall clock, in UTC (the book's default clock)."""
    return datetime.now(UTC)


_UNSEEN = "(not tried yet)"


class RateBook:
    """The last answer of each (source, currency), and the rate they give."""

    def __init__(
        self,
        sources: Sequence[RateSource],
        currencies: Sequence[str],
        *,
        refresh: float,
        max_age: float,
        max_spread: float,
        min_sources: int,
        timeout: float | None = None,
        now: Callable[[], datetime] = utc_now,
        shared: RateAnswers | None = None,
    ) -> None:
        """``timeout`` (seconds), when given, bounds each fetch here too: a source that
        ignores its own deadline cannot hold up a refresh. ``shared``: the cluster's
        stored answers (None: this book asks the sources and keeps the answers alone)."""
        names = [source.name for source in sources]
        if len(set(names)) != len(names):
            raise ValueError(f"rate sources named twice: {', '.join(names)}")
        self._sources = tuple(sources)
        self._currencies = tuple(currencies)
        self._refresh = refresh
        self._max_age = max_age
        self._max_spread = max_spread
        self._min_sources = min_sources
        self._timeout = timeout
        self._now = now
        self._slots = {(s.name, c): _Slot() for s in self._sources for c in self._currencies}
        self._sharing = None if shared is None else AnswerSharing(shared)
        self._leading = False  # whether the last refresh asked the sources
        # What was last logged, so that a state is logged when it begins, not every refresh.
        self._logged_slot: dict[tuple[str, str], str | None] = {}
        self._logged_choice: dict[str, object] = {}

    @property
    def currencies(self) -> tuple[str, ...]:
        """The configured currencies (``--rate-currencies``)."""
        return self._currencies

    @property
    def misses(self) -> Mapping[str, int]:
        """Failed fetches per source (every currency, every refresh): since start, or
        with shared answers since the cluster's first, as stored."""
        totals = dict.fromkeys((source.name for source in self._sources), 0)
        for (name, _currency), slot in self._slots.items():
            totals[name] += slot.misses
        return totals

    @property
    def leading(self) -> bool:
        """True when the last refresh asked the sources (every one, without shared answers)."""
        return self._leading

    async def refresh_once(self) -> None:
        """One refresh: the leader asks every source for every currency, all at once,
        and records (then stores) the answers; a follower reads the stored answers.

        The calls run at once, each bounded by the timeout, and their answers are
        recorded together when the last one is in: the leader's quotes change once per
        refresh, as the followers' do. A process that takes the lead reads the stored
        answers first, so that it carries on from the last leader's (its good answers,
        its counts of misses).
        """
        sharing = self._sharing
        leading = True if sharing is None else await sharing.lead()
        if sharing is not None and not (leading and self._leading):
            self._adopt(await sharing.load())
        self._leading = leading
        if leading:
            pairs = [
                (source, currency) for source in self._sources for currency in self._currencies
            ]
            readings = await asyncio.gather(*(self._fetch(s, c) for s, c in pairs))
            # All at once, with no await between: a quote made meanwhile sees the last
            # refresh's answers or this one's, never a mix (which a follower, reading the
            # stored answers in one transaction, would never quote).
            for (source, currency), reading in zip(pairs, readings, strict=True):
                self._record(source.name, currency, *reading)
            if sharing is not None:
                await sharing.store(self._stored())
        for currency in self._currencies:
            self._log_choice(currency)

    async def run(self, stop: asyncio.Event) -> None:
        """Refresh now (the first fiat request finds a rate), then every ``refresh``
        seconds (a follower: see :meth:`next_refresh`) until ``stop`` is set; a refresh
        under way is then abandoned, and the lead given up."""
        try:
            while not stop.is_set():
                await _unless_stopped(self.refresh_once(), stop)
                with contextlib.suppress(TimeoutError):  # the refresh period is over
                    await asyncio.wait_for(stop.wait(), self.next_refresh())
        finally:
            if self._sharing is not None:
                await self._sharing.release()

    def next_refresh(self) -> float:
        """Seconds until the next refresh: ``refresh`` for the leader. A follower's next
        read falls one step after the leader's next answers are due (the newest stored
        try plus ``refresh``), so that it quotes the new answers soon after the leader;
        while they are overdue it reads every step, each time trying to take the lead."""
        if self._sharing is None or self._leading:
            return self._refresh
        step = min(self._refresh / 10, FOLLOW_STEP)
        newest = max((s.checked for s in self._slots.values() if s.checked), default=None)
        if newest is None:
            return step
        since = (self._now() - newest).total_seconds()
        if since >= self._refresh:
            return step
        return min(self._refresh, self._refresh - since + step)

    def current(self, currency: str) -> LockedRate:
        """The rate to price in ``currency`` now.

        Raises ``InvalidInput`` for a currency not configured (naming those that are)
        and ``RatesUnavailable`` when no fresh, agreeing rate is at hand (saying why).
        """
        code = self._configured(currency)
        choice = self._choose(code)
        if choice.rate is None or choice.at is None:
            raise RatesUnavailable(f"no fresh exchange rate for {code}: {choice.problem}")
        return LockedRate(choice.rate, choice.used, choice.at)

    def quote(self, price: Price) -> tuple[int, Quote]:
        """``price`` in piconero (rounded up) at the current rate, and the quote to store.

        Raises like :meth:`current`, and ``InvalidInput`` when the amount is too large.
        """
        locked = self.current(price.currency)
        piconero = piconero_for(price, locked.rate)
        quote = Quote(
            amount=format(price.amount, "f"),
            currency=price.currency,
            rate=plain(locked.rate),
            sources=locked.sources,
            rate_at=locked.at,
        )
        return piconero, quote

    def snapshot(self, currency: str) -> dict[str, object]:
        """``GET /rates?currency=EUR``: the rate in use (or why none) and every source's
        last answer, whether it was used and why not."""
        code = self._configured(currency)
        choice = self._choose(code)
        now = self._now()
        sources: list[dict[str, object]] = []
        for source in self._sources:
            slot = self._slots[(source.name, code)]
            sources.append(
                {
                    "name": source.name,
                    "rate": None if slot.value is None else plain(slot.value),
                    "at": None if slot.at is None else rfc3339(slot.at),
                    "used": source.name in choice.used,
                    "reason": choice.rejected.get(source.name),
                    "last_error": slot.error,
                }
            )
        return {
            "currency": code,
            "rate": None if choice.rate is None else plain(choice.rate),
            "rate_at": None if choice.at is None else rfc3339(choice.at),
            "age_seconds": None if choice.at is None else _age(now, choice.at),
            "reason": choice.problem,
            "sources": sources,
        }

    def age(self, currency: str) -> float | None:
        """Seconds since the oldest answer behind ``currency``'s rate; None: no rate."""
        choice = self._choose(self._configured(currency))
        return None if choice.at is None else _age(self._now(), choice.at)

    # -- internals -------------------------------------------------------------------

    def _adopt(self, answers: Sequence[SharedAnswer] | None) -> None:
        """Take the stored answers as this book's own (None: unreadable, keep ours)."""
        for answer in answers or ():
            slot = self._slots.get((answer.source, answer.currency))
            if slot is not None:  # another configuration's pair is not ours to quote
                slot.value, slot.at, slot.error = answer.value, answer.at, answer.error
                slot.checked, slot.misses = answer.checked_at, answer.misses

    def _stored(self) -> list[SharedAnswer]:
        """What this book holds, as the cluster stores it (pairs tried at least once)."""
        return [
            SharedAnswer(name, currency, s.value, s.at, s.error, s.checked, s.misses)
            for (name, currency), s in self._slots.items()
            if s.checked is not None
        ]

    def _configured(self, currency: str) -> str:
        code = currency.upper()
        if code not in self._currencies:
            if not self._currencies:
                raise InvalidInput("fiat prices are turned off here (--rate-currencies is empty)")
            raise InvalidInput(
                f"prices in {code} are not accepted here; configured currencies: "
                f"{', '.join(self._currencies)}"
            )
        return code

    def _choose(self, currency: str) -> RateChoice:
        answers = [
            SourceAnswer(source.name, slot.value, slot.at, slot.error)
            for source in self._sources
            for slot in (self._slots[(source.name, currency)],)
        ]
        return choose_rate(
            answers,
            now=self._now(),
            max_age=self._max_age,
            max_spread=self._max_spread,
            min_sources=self._min_sources,
        )

    async def _fetch(
        self, source: RateSource, currency: str
    ) -> tuple[Decimal | None, str | None, datetime]:
        """One source's answer for one currency: the rate or why there is none, and
        when the call ended."""
        reason: str | None = None
        value: Decimal | None = None
        try:
            if self._timeout is None:
                value = await source.fetch(currency)
            else:
                async with asyncio.timeout(self._timeout):
                    value = await source.fetch(currency)
        except RateSourceMiss as exc:
            reason = exc.message
        except TimeoutError:
            reason = f"no answer within {self._timeout:g} s"
        except Exception as exc:  # a bug in a source must not stop the others
            reason = f"unexpected error: {type(exc).__name__}: {exc}"
            if self._logged_slot.get((source.name, currency), _UNSEEN) != reason:
                log.error("rate source %s failed for %s", source.name, currency, exc_info=True)
        else:
            if not isinstance(value, Decimal) or not value.is_finite() or value <= 0:
                reason, value = f"not a finite positive rate: {value!r}", None
        return value, reason, self._now()

    def _record(
        self, source: str, currency: str, value: Decimal | None, reason: str | None, at: datetime
    ) -> None:
        slot = self._slots[(source, currency)]
        slot.checked = at
        if reason is None and value is not None:
            slot.value, slot.at, slot.error = value, at, None
        else:
            slot.error = reason
            slot.misses += 1
        self._log_slot(source, currency, reason)

    def _log_slot(self, source: str, currency: str, reason: str | None) -> None:
        previous = self._logged_slot.get((source, currency), _UNSEEN)
        if reason == previous:
            return
        self._logged_slot[(source, currency)] = reason
        if reason is not None:
            log.warning("rate source %s: no %s rate: %s", source, currency, reason)
        elif previous is not _UNSEEN:
            log.info("rate source %s answers for %s again", source, currency)

    def _log_choice(self, currency: str) -> None:
        choice = self._choose(currency)
        state = (choice.rate is None, choice.used, choice.dropped)
        if self._logged_choice.get(currency) == state:
            return
        self._logged_choice[currency] = state
        if choice.rate is None:
            log.warning("no fresh exchange rate for %s: %s", currency, choice.problem)
            return
        used = ", ".join(choice.used)
        if choice.dropped:
            dropped = "; ".join(f"{name}: {choice.rejected[name]}" for name in choice.dropped)
            log.warning("%s rate from %s; dropped %s", currency, used, dropped)
        else:
            log.info("%s rate %s from %s", currency, plain(choice.rate), used)


async def _unless_stopped(work: Awaitable[None], stop: asyncio.Event) -> None:
    """Await ``work`` unless ``stop`` is set first, then cancel it."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        task.cancel()
        waiter.cancel()
        await asyncio.gather(task, waiter, return_exceptions=True)
    if not task.cancelled() and task.exception() is not None:
        log.error("rate refresh failed", exc_info=task.exception())


def _age(now: datetime, at: datetime) -> float:
    return max((now - at).total_seconds(), 0.0)
