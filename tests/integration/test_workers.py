"""Several gateway processes on one PostgreSQL (``--workers 2``): one sync at a time,
each callback created once and delivered by one worker."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.integration.receiver import Receiver
from testsupport.gateway import Gateway, close_gateway, count_rows, start_gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateway(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """Two worker processes behind one port, sharing one PostgreSQL database."""
    gw = start_gateway(
        devnet,
        "postgresql",
        tmp_path_factory.mktemp("workers"),
        ["--workers", "2", "--callback-allow", "127.0.0.1"],  # the receiver is on loopback
    )
    try:
        yield gw
    finally:
        close_gateway(gw)


def worker_pids(gateway: Gateway) -> list[int]:
    """PIDs of the uvicorn worker processes under the gateway's supervisor."""
    assert gateway.proc is not None
    out = subprocess.run(
        ["pgrep", "-P", str(gateway.proc.pid)], capture_output=True, text=True, check=False
    ).stdout
    return [int(p) for p in out.split()]


def test_two_workers_deliver_each_callback_once(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """Payments to 6 requests: 12 events in the outbox and 12 distinct deliveries, in order."""
    assert len(worker_pids(gateway)) >= 2
    addresses = [gateway.receive(1000 + i, callback_url=receiver.url)["address"] for i in range(6)]
    assert len(set(addresses)) == 6
    devnet.pay_many([(a, 1000 + i) for i, a in enumerate(addresses)], mine_blocks=1)
    devnet.mine(10)
    for address in addresses:
        gateway.wait_status(address, lambda s: s["complete"], timeout=45)
    receiver.wait_for(
        lambda got: len(got) >= 12, timeout=45, what="12 callbacks (confirmed, unlocked x 6)"
    )
    time.sleep(2)  # room for any duplicate to show up (waiting for an absence)
    delivered = receiver.delivered()
    ids = Counter(r.headers["x-xmrgate-event-id"] for r in delivered)
    assert len(ids) == 12 and max(ids.values()) == 1, ids
    assert count_rows(gateway, "events") == 12
    assert count_rows(gateway, "transfers") == 6
    for address in addresses:
        kinds = [r.json["event"] for r in delivered if r.json["address"] == address]
        assert kinds == ["transfer.confirmed", "transfer.unlocked"]
