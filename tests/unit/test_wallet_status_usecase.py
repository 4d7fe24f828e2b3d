"""Health and balance with fakes: the probe cache, its own connection, the wrong wallet."""

from __future__ import annotations

import asyncio

import pytest

from tests.unit.fakes import FakeWallet
from xmrgate.core.wallet_status import WalletIdentity, WalletStatus
from xmrgate.domain.errors import WalletUnavailable


class CountingWallet(FakeWallet):
    probes: int = 0

    async def probe(self, *, timeout: float) -> bool:
        self.probes += 1
        await asyncio.sleep(0.01)
        return self.up


def _status(identity: WalletIdentity, now: list[float]) -> tuple[WalletStatus, CountingWallet]:
    async def ping() -> bool:
        return True

    main, probe = FakeWallet(balance=(5, 3)), CountingWallet()
    status = WalletStatus(main, probe, ping, "sqlite", identity, clock=lambda: now[0])
    return status, probe


def _ready() -> WalletIdentity:
    identity = WalletIdentity(primary_address="4A")
    identity.ready.set()
    return identity


def test_health_is_503_until_the_wallet_is_open() -> None:
    status, _ = _status(WalletIdentity(), [0.0])
    report = asyncio.run(status.health())
    assert report.status == 503 and "not opened its wallet" in (report.message or "")


def test_a_flood_of_health_checks_probes_the_wallet_once_a_second() -> None:
    now = [100.0]
    status, probe = _status(_ready(), now)

    async def flood() -> None:
        reports = await asyncio.gather(*(status.health() for _ in range(200)))
        assert {r.status for r in reports} == {200}

    asyncio.run(flood())
    assert probe.probes == 1
    now[0] += 0.5
    asyncio.run(status.health())
    assert probe.probes == 1
    now[0] += 0.6
    probe.up = False
    report = asyncio.run(status.health())
    assert probe.probes == 2
    assert (report.status, report.services) == (503, {"walletrpc": False, "sqlite": True})


def test_wrong_wallet_makes_health_503_with_both_addresses_and_refuses_balance() -> None:
    identity = WalletIdentity(
        mismatch="wallet-rpc has 4B... open but this database belongs to 4A..."
    )
    status, _ = _status(identity, [0.0])
    report = asyncio.run(status.health())
    assert (
        report.status == 503 and "4A" in (report.message or "") and "4B" in (report.message or "")
    )
    with pytest.raises(WalletUnavailable):
        asyncio.run(status.balance())


def test_balance_of_the_right_wallet() -> None:
    status, _ = _status(_ready(), [0.0])
    assert asyncio.run(status.balance()) == (5, 3)
