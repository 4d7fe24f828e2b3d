"""GET /receive answered from memory stays true: after a payment arrives and is mined,
every answer of every process shows it (the cache is emptied by the database's NOTIFY).

Each status is read many times first, so that every process has cached the answer
without the payment; a cache that missed the announcement would keep serving it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from testsupport.gateway import Gateway, close_gateway, start_gateway
from xmrgate.devnet import Devnet

AMOUNT = 2_000_000_000
READS = 40  # spread over the processes by the kernel's accept queue


@pytest.fixture(scope="module")
def workers(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """Two gateway processes on one PostgreSQL database."""
    gw = start_gateway(
        devnet, "postgresql", tmp_path_factory.mktemp("read-cache"), ["--workers", "2"]
    )
    try:
        yield gw
    finally:
        close_gateway(gw)


def _answers(gateway: Gateway, address: str) -> list[dict[str, Any]]:
    # A new connection per read, so that both processes answer some of them.
    answers = []
    for _ in range(READS):
        r = gateway.get(f"/receive/{address}", headers={"Connection": "close"})
        assert r.status_code == 200, r.text
        answers.append(r.json())
    return answers


def _check(gateway: Gateway) -> None:
    address = str(gateway.receive(AMOUNT)["address"])
    assert all(not a["transactions"] for a in _answers(gateway, address))
    gateway.devnet.pay(address, AMOUNT)
    gateway.wait_status(address, lambda s: len(s["transactions"]) == 1)
    assert all(len(a["transactions"]) == 1 for a in _answers(gateway, address))
    gateway.devnet.mine(1)
    gateway.wait_status(address, lambda s: s["transactions"][0]["confirmations"] >= 1)
    seen = [a["transactions"][0]["confirmations"] for a in _answers(gateway, address)]
    assert min(seen) >= 1, seen


def test_every_process_sees_the_payment(workers: Gateway) -> None:
    _check(workers)


def test_one_process_sees_the_payment(gateway: Gateway) -> None:
    _check(gateway)
