"""One exchange rate for the cluster: a gateway of 4 worker processes on
PostgreSQL, fake rate providers on loopback. The providers are asked as often as one
process would ask them, every worker quotes the same rate, and a killed leader is
replaced within about one refresh.

The providers' price moves every few milliseconds, so that two processes asking at
different moments would get (and quote) different rates.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.integration.test_workers import worker_pids
from testsupport.fake_rates import PROVIDERS, FakeRates
from testsupport.gateway import Gateway, close_gateway, start_gateway
from testsupport.processes import wait_until
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

WORKERS = 4
# The rate refresh of the gateway under test. 2 s, not 1: a burst must take under half
# a refresh to tell one quote from two, and on a loaded 2-core machine (the whole suite
# beside it) 12 requests to 4 workers took longer than 0.5 s ("too few bursts").
REFRESH = 2.0
WINDOW = 6.0  # seconds of counting calls
BURST = 12  # fiat-priced requests sent at once
LEADS = re.compile(r"exchange rates: this process \(pid (\d+)\) leads")


class MovingPrice:
    """Every provider's EUR price, a cent higher every few milliseconds (all three agree,
    far within the spread)."""

    def __init__(self, fake: FakeRates) -> None:
        self._fake = fake
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._move, daemon=True)

    def __enter__(self) -> MovingPrice:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _move(self) -> None:
        step = 0
        while not self._stop.wait(0.005):
            self._fake.set_all("EUR", Decimal(150) + Decimal(step % 1000) / 100)
            step += 1


@pytest.fixture(scope="module")
def rates() -> Iterator[FakeRates]:
    with FakeRates() as fake, MovingPrice(fake):
        yield fake


@pytest.fixture(scope="module")
def gateway(
    devnet: Devnet, rates: FakeRates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """Four workers pricing EUR from the fake providers, refreshed every second."""
    args = [
        "--workers",
        str(WORKERS),
        "--rate-currencies",
        "EUR",
        "--rate-source-url",
        rates.option(),
        "--rate-refresh",
        f"{REFRESH:g}s",
        "--rate-timeout",
        "1s",
        "--rate-max-age",
        "10s",
    ]
    gw = start_gateway(devnet, "postgresql", tmp_path_factory.mktemp("rates-cluster"), args)
    try:
        assert len(worker_pids(gw)) >= WORKERS  # and multiprocessing's resource tracker
        wait_until("a EUR rate", lambda: (rate_now(gw)["rate"] is not None, None), timeout=20)
        yield gw
    finally:
        close_gateway(gw)


def rate_now(gw: Gateway) -> dict[str, Any]:
    """GET /rates?currency=EUR on a new connection (any worker may answer)."""
    answer = httpx.get(
        gw.url + "/rates", params={"currency": "EUR"}, headers={"Connection": "close"}
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def hits(rates: FakeRates) -> dict[str, int]:
    return {provider: rates.hits(provider, "EUR") for provider in PROVIDERS}


def leaders(gw: Gateway) -> list[int]:
    """The PIDs that took the lead, in order, from the gateway's log."""
    return [int(pid) for pid in LEADS.findall(gw.log_path.read_text(errors="replace"))]


def test_the_providers_are_asked_as_by_one_process(gateway: Gateway, rates: FakeRates) -> None:
    """Over a window, each provider gets one call per refresh (not one per worker)."""
    before = hits(rates)
    time.sleep(WINDOW)
    after = hits(rates)
    calls = {provider: after[provider] - before[provider] for provider in PROVIDERS}
    one_process = WINDOW / REFRESH
    for provider, count in calls.items():
        assert one_process - 2 <= count <= one_process + 1, (provider, calls)


def quote_once(url: str) -> tuple[str, str]:
    """POST /receive of 19.99 EUR on a new connection: the quote's (rate, rate_at)."""
    body = {"price": {"amount": "19.99", "currency": "EUR"}}
    answer = httpx.post(url + "/receive", json=body, headers={"Connection": "close"}, timeout=30)
    assert answer.status_code == 200, answer.text
    price = answer.json()["price"]
    return price["rate"], price["rate_at"]


def test_every_worker_quotes_the_same_rate(gateway: Gateway) -> None:
    """Bursts of fiat-priced requests, all at once on new connections (the kernel spreads
    them over the workers). A burst shorter than half a refresh sees one quote, or two
    when it meets the moment the leader has stored new answers and a follower has not
    read them yet; each worker asking on its own would give up to four."""
    short: list[set[tuple[str, str]]] = []
    with ThreadPoolExecutor(BURST) as pool:
        for _ in range(12):
            started = time.monotonic()
            quotes = set(pool.map(quote_once, [gateway.url] * BURST))
            took = time.monotonic() - started
            rates_at: dict[str, set[str]] = {}
            for rate, at in quotes:
                rates_at.setdefault(at, set()).add(rate)
            assert all(len(rates) == 1 for rates in rates_at.values()), quotes
            if took < REFRESH / 2:  # a slower burst (a loaded machine) may span two stores
                assert len(quotes) <= 2, f"more than the leader's last two answers: {quotes}"
                short.append(quotes)
                if len(short) == 4:
                    break
            time.sleep(0.2)
    assert len(short) >= 2, "too few bursts were short enough to tell"
    assert any(len(quotes) == 1 for quotes in short), short


def test_a_killed_leader_is_replaced_within_a_refresh(gateway: Gateway, rates: FakeRates) -> None:
    """SIGKILL the leading worker: its connection ends, PostgreSQL frees the lock, and
    another worker (a surviving one, or the one uvicorn starts in its place) leads at
    its next try; the stored answers never grow old."""
    pids = worker_pids(gateway)
    leader = leaders(gateway)[-1]
    assert leader in pids, (leader, pids)
    os.kill(leader, signal.SIGKILL)
    killed_at = time.monotonic()
    ages: list[float] = []
    while time.monotonic() - killed_at < 4 * REFRESH:
        snapshot = rate_now(gateway)
        assert snapshot["rate"] is not None, snapshot
        ages.append(float(snapshot["age_seconds"]))
        time.sleep(0.05)
    [successor] = [pid for pid in leaders(gateway) if pid != leader][-1:]
    # uvicorn's supervisor starts a new worker in place of the killed one, and that one
    # tries the lock as it starts: it may lead before a surviving worker's next try.
    # Either way the successor is a live worker of this gateway, never the killed one.
    assert successor != leader and successor in worker_pids(gateway), (successor, pids)
    # A follower's answers are at most a refresh and a step old; about one refresh more
    # while the lead changes hands (without a new leader they would reach 4 refreshes).
    assert max(ages) < 3 * REFRESH, ages
    before = hits(rates)
    time.sleep(2 * REFRESH)
    assert all(hits(rates)[p] > before[p] for p in PROVIDERS), "nobody asks any more"
