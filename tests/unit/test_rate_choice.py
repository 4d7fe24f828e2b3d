"""Choosing the rate from the sources' answers (domain/fiat.py ``choose_rate``): the
median of the fresh answers, those far from it dropped, too few left is no rate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from xmrgate.domain.fiat import RateChoice, SourceAnswer, choose_rate, median

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
MAX_AGE = 300.0


def answer(
    source: str, value: str | None, age: float = 10.0, error: str | None = None
) -> SourceAnswer:
    """``source``'s answer ``value`` given ``age`` seconds before NOW."""
    if value is None:
        return SourceAnswer(source, None, None, error)
    return SourceAnswer(source, Decimal(value), NOW - timedelta(seconds=age), error)


def choose(*answers: SourceAnswer, spread: float = 0.05, min_sources: int = 1) -> RateChoice:
    return choose_rate(
        answers, now=NOW, max_age=MAX_AGE, max_spread=spread, min_sources=min_sources
    )


def test_the_rate_is_the_median() -> None:
    choice = choose(answer("a", "100"), answer("b", "102"), answer("c", "101"))
    assert choice.rate == Decimal("101")
    assert choice.used == ("a", "b", "c")
    assert choice.rejected == {} and choice.dropped == () and choice.problem is None


def test_an_even_count_takes_the_mean_of_the_middle_two_exactly() -> None:
    choice = choose(answer("a", "100.01"), answer("b", "100.02"))
    assert choice.rate == Decimal("100.015")
    assert median([Decimal("1"), Decimal("2"), Decimal("4"), Decimal("100")]) == Decimal("3")


def test_one_answer_40_percent_off_is_dropped() -> None:
    choice = choose(answer("a", "100"), answer("b", "101"), answer("c", "141.4"))
    # The median of the three is 101; 141.4 is 40 % above it. The rate is then the
    # median of the two left.
    assert choice.rate == Decimal("100.5")
    assert choice.used == ("a", "b")
    assert choice.dropped == ("c",)
    assert choice.rejected["c"] == "off by 40.0 % from the median 101 (at most 5.0 %)"


def test_a_stale_answer_is_not_used() -> None:
    choice = choose(answer("a", "100", age=301), answer("b", "120", age=10))
    assert choice.rate == Decimal("120")
    assert choice.used == ("b",)
    assert choice.rejected["a"].startswith("stale: its last answer is 301 s old (at most 300 s)")


def test_an_answer_exactly_max_age_old_still_counts() -> None:
    assert choose(answer("a", "100", age=MAX_AGE)).used == ("a",)


def test_a_fresh_answer_counts_although_the_latest_try_failed() -> None:
    """A source answered 2 minutes ago and failed just now: its answer is still fresh."""
    choice = choose(answer("a", "100", age=120, error="HTTP 500"), answer("b", "100"))
    assert choice.used == ("a", "b")


def test_a_stale_answer_says_why_the_source_has_nothing_newer() -> None:
    choice = choose(answer("a", "100", age=400, error="cannot connect"), answer("b", "100"))
    assert choice.rejected["a"].endswith("; latest try: cannot connect")


def test_all_down_is_no_rate_with_every_reason() -> None:
    choice = choose(
        answer("a", None, error="HTTP 500"),
        answer("b", None, error="cannot connect: refused"),
        answer("c", None),
    )
    assert choice.rate is None and choice.at is None and choice.used == ()
    assert choice.rejected == {
        "a": "no answer: HTTP 500",
        "b": "no answer: cannot connect: refused",
        "c": "no answer yet",
    }
    assert choice.problem is not None
    assert choice.problem.startswith("no fresh answer (a: no answer: HTTP 500; b: ")


def test_no_sources_at_all_is_no_rate() -> None:
    choice = choose()
    assert choice.rate is None and choice.problem == "no fresh answer (no sources)"


def test_two_sources_far_apart_give_no_rate_whatever_min_sources() -> None:
    """100 and 120: their median is 110 and each is 9.1 % from it; neither is believed."""
    choice = choose(answer("a", "100"), answer("b", "120"), min_sources=1)
    assert choice.rate is None
    assert choice.dropped == ("a", "b")
    assert choice.rejected["a"].startswith("off by 9.1 % from the median 110")
    assert choice.problem is not None and "0 agreeing fresh answer(s), 1 needed" in choice.problem


def test_two_sources_close_together_give_their_mean() -> None:
    """100 and 109.9 are each under 5 % from 104.95: both count."""
    choice = choose(answer("a", "100"), answer("b", "109.9"))
    assert choice.rate == Decimal("104.95") and choice.used == ("a", "b")


def test_an_answer_exactly_at_the_spread_is_kept() -> None:
    choice = choose(answer("a", "95"), answer("b", "100"), answer("c", "105"))
    assert choice.used == ("a", "b", "c")


def test_min_sources_not_met_is_no_rate() -> None:
    choice = choose(
        answer("a", "100"), answer("b", "100.5"), answer("c", None, error="HTTP 500"), min_sources=3
    )
    assert choice.rate is None and choice.used == ()
    assert choice.rejected["a"] == choice.rejected["b"] == "agrees, but too few sources do"
    assert choice.problem is not None
    assert choice.problem.startswith("2 agreeing fresh answer(s), 3 needed (--rate-min-sources)")


def test_min_sources_met_is_a_rate() -> None:
    choice = choose(answer("a", "100"), answer("b", "100.5"), min_sources=2)
    assert choice.rate == Decimal("100.25")


def test_the_rate_is_as_old_as_its_oldest_answer() -> None:
    choice = choose(
        answer("a", "100", age=30), answer("b", "100", age=200), answer("c", "500", age=1)
    )
    assert choice.at == NOW - timedelta(seconds=200)


def test_a_clock_behind_a_source_still_counts_its_answer() -> None:
    """An answer stamped in the future (the clock stepped back) is fresh, not refused."""
    assert choose(answer("a", "100", age=-30)).used == ("a",)


def test_the_spread_may_be_a_decimal() -> None:
    choice = choose(
        answer("a", "100"), answer("b", "101"), answer("c", "103"), spread=Decimal("0.01")
    )
    assert choice.used == ("a", "b")


rates = st.decimals(min_value=Decimal("0.000001"), max_value=Decimal("1000000000"), places=6)


@given(values=st.lists(rates, min_size=1, max_size=7), spread=st.sampled_from([0.01, 0.05, 0.2]))
def test_a_rate_lies_within_the_used_answers_each_near_the_first_median(
    values: list[Decimal], spread: float
) -> None:
    answers = [answer(f"s{i}", str(v)) for i, v in enumerate(values)]
    choice = choose(*answers, spread=spread)
    centre = median(values)
    used = [a.value for a in answers if a.source in choice.used and a.value is not None]
    assert set(choice.used) | set(choice.rejected) == {a.source for a in answers}
    assert not set(choice.used) & set(choice.rejected)
    for value in used:
        assert abs(value - centre) <= Decimal(str(spread)) * centre
    if choice.rate is not None:
        assert min(used) <= choice.rate <= max(used)
    else:
        assert used == []


def test_a_value_that_is_not_a_positive_rate_is_never_divided_by() -> None:
    """The sources refuse such values on arrival; the rule refuses them again."""
    choice = choose(answer("a", "0"), answer("b", "-1"), answer("c", "NaN"), answer("d", "100"))
    assert choice.rate == Decimal("100") and choice.used == ("d",)
    assert choice.rejected["a"] == "no answer: not a finite positive rate: 0"
