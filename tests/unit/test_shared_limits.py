"""The public pages' limits counted by a shared counter (``web/limits.py``).

With ``app.state.flood_counter`` set (PostgreSQL: ``runtime/app.py``), "Pay" on a link
and the refund claim count their limits there, so two apps on one counter (two worker
processes on one database) share each client's and each link's budget. A counter that
fails refuses the post (503 with ``Retry-After``, fail closed) and makes nothing; a
request already made is answered even when counting it afterwards fails. The counter
here is an in-memory stand-in with the database's rules; the SQL one is
``tests/db/test_flood_windows.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.unit.test_link_page import XMR, Shop, assert_plain, assert_safe, build_shop
from tests.unit.test_refund_page import build_shop as build_refund_shop
from testsupport.fake_links import FakeLinkStore
from xmrgate.domain.errors import DatabaseUnavailable
from xmrgate.domain.refunds import RefundStatus
from xmrgate.web.link_page.routes import CLIENT_LIMIT, LINK_LIMIT


class SharedCounter:
    """Fixed windows per (limiter, key), as ``SqlFloodWindows`` counts them; ``down``
    names the limiters whose counting fails (the database is gone)."""

    def __init__(self) -> None:
        self.windows: dict[tuple[str, str], tuple[datetime, int]] = {}
        self.down: set[str] = set()
        self.asked: list[tuple[str, str]] = []

    async def hit(self, limiter: str, key: str, limit: int, window: float) -> int:
        self.asked.append((limiter, key))
        if limiter in self.down:
            raise DatabaseUnavailable("database unavailable")
        now = datetime.now(UTC)
        ends, hits = self.windows.get((limiter, key), (now, 0))
        if ends <= now:
            ends, hits = now + timedelta(seconds=window), 0
        hits = min(hits + 1, limit + 1)
        self.windows[(limiter, key)] = (ends, hits)
        return 0 if hits <= limit else max(1, int((ends - now).total_seconds()))


@pytest.fixture
def counter() -> SharedCounter:
    return SharedCounter()


@pytest.fixture
def two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counter: SharedCounter
) -> Iterator[tuple[Shop, Shop]]:
    """Two apps (two worker processes) whose limits share ``counter``."""
    monkeypatch.chdir(tmp_path)  # Settings' default database path: never the repository's
    shops = (build_shop(), build_shop())
    for shop in shops:
        shop.app.state.flood_counter = counter
    yield shops
    for shop in shops:
        shop.client.close()


def test_two_processes_share_one_clients_limit(two: tuple[Shop, Shop]) -> None:
    first, second = two
    answers = []
    for n in range(CLIENT_LIMIT + 1):
        shop = (first, second)[n % 2]  # the client's posts reach either process
        shop.link(f"link-{n:02d}", amount=XMR)
        answers.append(shop.pay(f"link-{n:02d}"))
    assert [a.status_code for a in answers] == [303] * CLIENT_LIMIT + [429]
    refused = answers[-1]
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert_safe(refused)
    assert_plain(refused)
    # Neither process makes more for that client; another client is not held up.
    assert first.pay("link-00").status_code == 429
    elsewhere = first.browser_client("192.0.2.44")
    assert first.pay("link-00", client=elsewhere).status_code == 303


def test_a_links_limit_spent_by_another_process_is_429_here(
    two: tuple[Shop, Shop], counter: SharedCounter
) -> None:
    first, _second = two
    link = first.link("coffee", amount=XMR)
    # Another process of the cluster made LINK_LIMIT requests of this link this minute.
    counter.windows[("link", link.id)] = (
        datetime.now(UTC) + timedelta(seconds=30),
        LINK_LIMIT,
    )
    answer = first.pay("coffee")
    assert answer.status_code == 429 and 1 <= int(answer.headers["retry-after"]) <= 30
    assert not first.made(link)
    assert ("link_client", "198.51.100.7") in counter.asked


@pytest.mark.parametrize("failing", ["link_client", "link"])
def test_a_counter_that_fails_refuses_pay_with_503(
    two: tuple[Shop, Shop], counter: SharedCounter, failing: str
) -> None:
    first, _second = two
    link = first.link("coffee", amount=XMR)
    counter.down = {failing}
    answer = first.pay("coffee")
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"] == "30"
    assert "Nothing was made" in answer.text
    assert_safe(answer)
    assert_plain(answer)
    assert not first.made(link)
    counter.down = set()
    assert first.pay("coffee").status_code == 303


def test_a_request_made_is_answered_when_counting_it_afterwards_fails(
    two: tuple[Shop, Shop], counter: SharedCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The browser's request was open when the page looked, and paid when ``pay`` did: a
    new request is made and counted after it was made. That count failing must not hide
    the request (nor its cookie)."""
    first, _second = two
    link = first.link("coffee", amount=XMR)
    assert first.pay("coffee").status_code == 303
    answers = iter([True, False])  # open for the page, no longer for the use case

    async def open_then_paid(*_args: object) -> bool:
        return next(answers)

    monkeypatch.setattr(FakeLinkStore, "open_request", open_then_paid)
    counter.down = {"link"}
    again = first.pay("coffee")
    assert again.status_code == 303, again.text
    assert len(first.made(link)) == 2
    assert f"xg_link_{link.id}" in again.headers["set-cookie"]
    assert next(answers, None) is None, "both reads of the open request happened"


def test_a_counter_that_fails_refuses_a_refund_claim_with_503(tmp_path: Path) -> None:
    shop = build_refund_shop(tmp_path)
    counter = SharedCounter()
    app = shop.client.app
    app.state.flood_counter = counter  # type: ignore[attr-defined]
    token, refund_id = shop.make()
    for failing in ("refund_client", "refund_token"):
        counter.down = {failing}
        answer = shop.claim(token)
        assert answer.status_code == 503 and answer.headers["retry-after"] == "30"
        assert "Nothing was claimed" in answer.text
        assert shop.status(refund_id) is RefundStatus.OPEN
    counter.down = set()
    assert shop.claim(token).status_code == 200
    assert shop.status(refund_id) is RefundStatus.CLAIMED
    # Both limits were the shared counter's: the client's, then the token's.
    assert [limiter for limiter, _key in counter.asked[-2:]] == ["refund_client", "refund_token"]
    shop.client.close()
