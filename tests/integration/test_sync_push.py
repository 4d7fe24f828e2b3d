"""Sync sooner and cheaper with monerod's help: ``--daemon-zmq`` and ``--daemon-address``.

``--daemon-zmq``: with the poll at two minutes, a block mined after the gateway's first
tick still brings its ``transfer.confirmed`` callback within seconds, because monerod
announces the block; without the option the same gateway stays silent (the control
that shows the test can fail).

``--daemon-address``: the tick asks monerod whether anything changed before refreshing
the wallet; an idle gateway then leaves wallet-rpc's ``refresh`` alone (read from
``/metrics``), one without it refreshes on every poll, and a mined payment is still
called back within seconds. The same gateway shows the wallet's height against monerod's
(``/status``'s ``daemon``, ``xmrgate_daemon_height``); one without the option shows none.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.receiver import Received, Receiver
from testsupport.gateway import FAST_POLL, Gateway, close_gateway, start_gateway
from xmrgate.devnet import Devnet

AMOUNT = 1_000_000_000
LONG_POLL = "120s"
# Far shorter than the poll, far longer than a tick (ZMQ: ~0.2 s here).
SOON = 10.0
# The module's ``gateway`` (the control of the refresh count): polling every 0.5 s.
GATEWAY_ARGS = [*FAST_POLL]
METRIC = re.compile(
    r'^xmrgate_wallet_rpc_duration_seconds_count\{method="refresh"\} ([0-9.e+]+)$', re.M
)


def _gateway(
    devnet: Devnet, backend: str, tmp: Path, *args: str, push: bool = False
) -> Iterator[Gateway]:
    # Not woken by monerod unless a test says so (the tests' gateways are, by default).
    gw = start_gateway(devnet, backend, tmp, list(args), push=push)
    try:
        yield gw
    finally:
        close_gateway(gw)


@pytest.fixture(params=["sqlite", "postgresql"])
def pushed(
    request: pytest.FixtureRequest, devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """A gateway polling every two minutes, woken by monerod's ZMQ announcements."""
    assert devnet.zmq_pub_url, "the devnet's monerod publishes on ZMQ"
    tmp = tmp_path_factory.mktemp(f"zmq-{request.param}")
    args = ("--poll-frequency", LONG_POLL, "--daemon-zmq", devnet.zmq_pub_url)
    yield from _gateway(devnet, request.param, tmp, *args, push=True)


@pytest.fixture
def polled(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The same gateway without --daemon-zmq."""
    tmp = tmp_path_factory.mktemp("poll-only")
    yield from _gateway(devnet, "sqlite", tmp, "--poll-frequency", LONG_POLL)


def _paid_and_mined(gateway: Gateway, receiver: Receiver) -> tuple[str, float]:
    """A request paid in the pool, then mined; returns its address and when it was mined."""
    address = str(gateway.receive(AMOUNT, callback_url=receiver.url)["address"])
    gateway.devnet.pay(address, AMOUNT)
    gateway.devnet.mine(1)
    return address, time.monotonic()


def _confirmed(address: str) -> Callable[[list[Received]], bool]:
    def seen(delivered: list[Received]) -> bool:
        return any(
            r.json.get("address") == address and r.json.get("event") == "transfer.confirmed"
            for r in delivered
        )

    return seen


def test_announced_block_calls_back_before_the_poll(pushed: Gateway, receiver: Receiver) -> None:
    address, mined = _paid_and_mined(pushed, receiver)
    receiver.wait_for(_confirmed(address), timeout=SOON, what="transfer.confirmed via ZMQ")
    assert time.monotonic() - mined < SOON


def test_without_announcements_the_block_waits_for_the_poll(
    polled: Gateway, receiver: Receiver
) -> None:
    address, _mined = _paid_and_mined(polled, receiver)
    time.sleep(SOON)
    assert not _confirmed(address)(receiver.delivered())


DAEMON_HEIGHT = re.compile(r"^xmrgate_daemon_height ([0-9.e+]+)$", re.M)


def _refreshes(gateway: Gateway) -> float:
    match = METRIC.search(gateway.get("/metrics").text)
    return float(match.group(1)) if match else 0.0


@pytest.fixture(params=["sqlite", "postgresql"])
def gated(
    request: pytest.FixtureRequest, devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """A gateway at the default poll that asks monerod before refreshing its wallet."""
    tmp = tmp_path_factory.mktemp(f"gated-{request.param}")
    args = ("--poll-frequency", "5s", "--daemon-address", devnet.daemon_url)
    yield from _gateway(devnet, request.param, tmp, *args)


def test_idle_gateway_with_daemon_address_does_not_refresh(gated: Gateway) -> None:
    # Past the start-up refresh (it may come later than readiness on a loaded machine).
    gated.wait_for("the start-up refresh", lambda: _refreshes(gated), lambda n: n >= 1, 30)
    time.sleep(1.5)
    before = _refreshes(gated)
    time.sleep(4.0)  # four checks of the daemon, nothing new on the chain
    assert _refreshes(gated) == before
    # The wallet against the daemon, from the height those checks read: all caught up.
    top = gated.devnet.height()
    daemon = gated.get("/status").json()["daemon"]
    assert daemon == {"height": top, "wallet_behind": 0}, daemon
    metrics = gated.get("/metrics").text
    found = DAEMON_HEIGHT.search(metrics)
    assert found and float(found.group(1)) == top, metrics
    assert "xmrgate_daemon_up 1.0" in metrics


def test_idle_gateway_without_daemon_address_refreshes_every_poll(gateway: Gateway) -> None:
    """The control: the tests' gateway (poll 0.5 s) refreshes on every tick."""
    before = _refreshes(gateway)
    time.sleep(4.0)
    assert _refreshes(gateway) >= before + 3
    # Without --daemon-address nothing is said about a daemon.
    assert gateway.get("/status").json()["daemon"] is None
    assert "xmrgate_daemon" not in gateway.get("/metrics").text


def test_gated_gateway_calls_back_a_mined_payment_soon(gated: Gateway, receiver: Receiver) -> None:
    address, mined = _paid_and_mined(gated, receiver)
    receiver.wait_for(_confirmed(address), timeout=SOON, what="transfer.confirmed")
    assert time.monotonic() - mined < SOON
