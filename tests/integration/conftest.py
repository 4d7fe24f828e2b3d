"""Fixtures: one regtest network per test session, a gateway per module and backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.receiver import Receiver, start_receiver
from testsupport.gateway import Gateway, close_gateway, start_gateway
from xmrgate.devnet import Devnet

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def devnet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Devnet]:
    """A regtest monerod plus a funded funder wallet, stopped by PID at the end."""
    net = Devnet(tmp_path_factory.mktemp("devnet"))
    net.start()
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
