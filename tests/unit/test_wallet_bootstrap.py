"""The supervisor's start-up loop outlives a bug in the wallet's checks.

An exception other than ours (a ``TypeError`` of a read, as a NULL column once raised)
used to end the ``wallet-bootstrap`` task silently: the wallet was never marked ready,
no sync ran, ``/health`` said 503 and the log said nothing. It is now logged with its
traceback and retried like a wallet-rpc that does not answer.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.stores import DEFAULT_STORE
from xmrgate.runtime import supervisor
from xmrgate.runtime.supervisor import Supervisor


class Checks:
    """before_tick raising a bug ``failures`` times, then passing."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    async def before_tick(self) -> bool:
        self.calls += 1
        if self.calls <= self.failures:
            raise TypeError("int() argument must be a string, not 'NoneType'")
        return True


def test_a_bug_in_the_first_check_is_logged_and_retried(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(supervisor, "RETRY_GAP", 0.0)
    identity = WalletIdentity()
    checks = Checks(failures=2)
    synced = asyncio.Event()

    async def ensure_wallet_open(*, created_before: bool) -> None:
        return None

    async def remembered() -> str:
        return "4Primary"

    async def sync_run(stop: asyncio.Event, interval: float) -> None:
        synced.set()

    services: Any = SimpleNamespace(
        settings=SimpleNamespace(address_pool_size=0, rpc_address="http://127.0.0.1:1"),
        main=SimpleNamespace(
            identity=identity,
            identity_store=SimpleNamespace(remembered=remembered),
            wallet=SimpleNamespace(ensure_wallet_open=ensure_wallet_open),
            checks=checks,
            sync=SimpleNamespace(run=sync_run),
            signals=SimpleNamespace(interval=0.01),
        ),
        store_units={DEFAULT_STORE: SimpleNamespace(store_id=DEFAULT_STORE)},
    )
    boss = Supervisor(services)
    monkeypatch.setattr(boss, "_start_unit", lambda unit: None)

    async def run() -> None:
        # Requests waiting for the wallet ask for the next attempt now (else the
        # back-off waits 1 s, then 2 s).
        async def ask() -> None:
            while True:
                identity.retry.set()
                await asyncio.sleep(0.01)

        asking = asyncio.create_task(ask())
        try:
            await asyncio.wait_for(boss._bootstrap_wallet(), timeout=10)
        finally:
            asking.cancel()

    asyncio.run(run())
    assert checks.calls == 3
    assert identity.ready.is_set() and synced.is_set()
    assert "TypeError: int() argument" in caplog.text
    assert "Traceback" in caplog.text
