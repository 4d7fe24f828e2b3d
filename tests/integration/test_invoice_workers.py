"""Expiry with several gateway processes on one PostgreSQL (``--workers 2``): each
request's expiry is recorded and announced once, and its callback delivered once."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.integration.callback_support import db_scalar
from tests.integration.receiver import Receiver
from tests.integration.test_workers import worker_pids
from testsupport.gateway import SYNC_WAIT, Gateway, close_gateway, start_gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

REQUESTS = 8


@pytest.fixture(scope="module")
def gateway(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """Two worker processes behind one port, sharing one PostgreSQL database."""
    gw = start_gateway(
        devnet,
        "postgresql",
        tmp_path_factory.mktemp("invoice-workers"),
        ["--workers", "2", "--callback-allow", "127.0.0.1"],
    )
    try:
        yield gw
    finally:
        close_gateway(gw)


def test_each_expiry_announced_once_with_two_workers(gateway: Gateway, receiver: Receiver) -> None:
    """Eight requests expire: eight request.expired events, each delivered once."""
    assert len(worker_pids(gateway)) >= 2
    addresses = [
        gateway.receive(1000 + i, expires_in=2, callback_url=receiver.url)["address"]
        for i in range(REQUESTS)
    ]
    receiver.wait_for(
        lambda got: len(got) >= REQUESTS, timeout=SYNC_WAIT, what="a request.expired per request"
    )
    time.sleep(3)  # room for any duplicate to show up (waiting for an absence)
    delivered = receiver.delivered()
    assert Counter(r.json["address"] for r in delivered) == Counter(addresses)
    assert {r.json["event"] for r in delivered} == {"request.expired"}
    assert len({r.headers["x-xmrgate-event-id"] for r in delivered}) == REQUESTS
    stored = db_scalar(gateway, "SELECT count(*) FROM events WHERE kind = 'request.expired'")
    assert stored == REQUESTS
    feed = gateway.get("/events", params={"limit": 500}).json()["events"]
    assert sorted(e["address"] for e in feed) == sorted(addresses)
    for address in addresses:
        assert gateway.status(address)["status"] == "expired"
