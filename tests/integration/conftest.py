"""Fixtures: one regtest network per test session, a gateway per module and backend."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.integration.receiver import Receiver, start_receiver
from testsupport.gateway import Gateway, close_gateway, start_gateway
from xmrgate.devnet import Devnet

BACKENDS = ["sqlite", "postgresql"]
#: The blocks the session's network mines at its start, when set (else ``Devnet.start``'s
#: default: 80, then more until decoys are safe, about 13 CPU-s). A run whose tests only
#: need the processes to exist sets 0 (``interrupted_run.py``: 2.6 s to start, not 12).
DEVNET_BLOCKS_ENV = "XMRGATE_TEST_DEVNET_BLOCKS"


@pytest.fixture(scope="session")
def devnet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Devnet]:
    """A regtest monerod plus a funded funder wallet, stopped by PID at the end."""
    net = Devnet(tmp_path_factory.mktemp("devnet"))
    blocks = os.environ.get(DEVNET_BLOCKS_ENV)
    if blocks is None:
        net.start()
    else:
        net.start(initial_blocks=int(blocks))
    try:
        yield net
    finally:
        net.stop()


@pytest.fixture(scope="module", params=BACKENDS)
def gateway(
    request: pytest.FixtureRequest, devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """The gateway on a fresh wallet and a fresh database, once per backend."""
    extra = getattr(request.module, "GATEWAY_ARGS", [])
    gw = start_gateway(devnet, request.param, tmp_path_factory.mktemp(request.param), extra)
    try:
        yield gw
    finally:
        close_gateway(gw)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A real HTTP callback receiver on loopback."""
    r = start_receiver()
    try:
        yield r
    finally:
        r.close()
