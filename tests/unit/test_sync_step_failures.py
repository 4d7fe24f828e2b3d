"""A tick that degrades instead of dying: the lookahead checks may fail, the sync goes on.

The identity check must stop the tick (another wallet's subaddress N is never credited
to our request N); the lookahead checks may not: a failure is counted and logged and
the tick runs, and an extension it left half done is rescanned before the next check.
Every failed tick of a wallet is recorded for ``/health`` and cleared by the next tick
that runs (``core/sync_health.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.fakes import FakeIdentityStore, FakeModeWallet, FakePoolStore, FakeWallet
from tests.unit.test_metrics import Recorder
from xmrgate.core.sync import SyncEngine, WindowBounds
from xmrgate.core.sync_health import FAILING_AFTER, SyncTrouble
from xmrgate.core.wallet_checks import LOOKAHEAD_STEP, WalletChecks
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import WalletIdentity, WalletStatus
from xmrgate.domain.errors import DatabaseUnavailable, WalletTimeout


class Accounts:
    """The stores' accounts as the database gives them; ``broken`` raises as a bug would."""

    def __init__(self, highest: dict[int, int], broken: bool = False) -> None:
        self.highest = highest
        self.broken = broken

    async def accounts(self) -> list[int]:
        return sorted(self.highest)

    async def highest_by_account(self) -> dict[int, int]:
        if self.broken:
            raise TypeError("int() argument must be a string, a number, not 'NoneType'")
        return dict(self.highest)


@dataclass
class AccountsWallet(FakeModeWallet):
    """A mode wallet with accounts; ``fail_save`` makes the next save fail once."""

    account_tables: list[int] = field(default_factory=lambda: [200, 200])
    fail_save: bool = False
    log: list[str] = field(default_factory=list)

    async def account_count(self) -> int:
        return len(self.account_tables)

    async def create_account(self, label: str = "") -> int:
        self.account_tables.append(200)
        return len(self.account_tables) - 1

    async def has_subaddress(self, index: int, *, account: int = 0) -> bool:  # type: ignore[override]
        if account == 0:
            return index < self.table_size
        return index < self.account_tables[account]

    async def create_addresses(  # type: ignore[override]
        self, count: int, *, account: int = 0
    ) -> list[tuple[str, int]]:
        if account == 0:
            return await super().create_addresses(count)
        first = self.account_tables[account]
        self.account_tables[account] += count
        return [(f"8a{account}-{i}", i) for i in range(first, first + count)]

    async def save(self) -> None:
        if self.fail_save:
            self.fail_save = False
            raise DatabaseUnavailable("wallet-rpc could not store the wallet file")
        self.log.append("save")

    async def rescan(self) -> None:
        self.log.append("rescan")


def _checks(
    wallet: AccountsWallet, accounts: Accounts, recorder: Recorder, rewinds: list[int]
) -> WalletChecks:
    identity = WalletIdentity()

    async def rewind() -> None:
        rewinds.append(1)
        wallet.log.append("rewind")

    return WalletChecks(
        wallet,
        FakeIdentityStore("4Primary"),
        identity,
        FakePoolStore(),
        rewind,
        mode=WalletMode(wallet, identity),
        accounts=accounts,
        accounts_wallet=wallet,
        observer=recorder,
        wallet_name="main",
    )


def test_a_failing_lookahead_check_is_counted_and_the_tick_still_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wallet, recorder = AccountsWallet(), Recorder()
    checks = _checks(wallet, Accounts({0: 0, 1: 5}, broken=True), recorder, [])
    assert asyncio.run(checks.before_tick()) is True
    assert ("step_failed", (LOOKAHEAD_STEP, "main")) in recorder.calls
    assert "the lookahead check of wallet main failed" in caplog.text


def test_the_wrong_wallet_still_stops_the_tick() -> None:
    wallet, recorder = AccountsWallet(primary="4Other"), Recorder()
    checks = _checks(wallet, Accounts({0: 0, 1: 5}, broken=True), recorder, [])
    assert asyncio.run(checks.before_tick()) is False
    assert recorder.calls == []


def test_an_extension_cut_short_is_saved_rewound_and_rescanned_before_the_next_check() -> None:
    """Account 1's table extended to 300, then the wallet's save failed: the table now
    reaches 300, so no later check would find it short and rewind; the owed rescan is
    paid first thing at the next tick."""
    wallet, recorder, rewinds = AccountsWallet(fail_save=True), Recorder(), []
    checks = _checks(wallet, Accounts({0: 0, 1: 300}), recorder, rewinds)

    async def two_ticks() -> tuple[bool, bool]:
        return await checks.before_tick(), await checks.before_tick()

    assert asyncio.run(two_ticks()) == (True, True)
    assert wallet.account_tables[1] == 301
    assert ("step_failed", (LOOKAHEAD_STEP, "main")) in recorder.calls
    assert wallet.log == ["save", "rewind", "rescan"]
    assert rewinds == [1]


class Health:
    """An in-memory SyncHealthStore; ``down`` fails every write, as a dead database."""

    def __init__(self) -> None:
        self.failures = 0
        self.errors: list[str] = []
        self.clears = 0
        self.down = False

    async def failed(self, error: str) -> None:
        if self.down:
            raise DatabaseUnavailable("database down")
        self.failures += 1
        self.errors.append(error)

    async def recovered(self) -> None:
        if self.down:
            raise DatabaseUnavailable("database down")
        self.clears += 1
        self.failures = 0


class Store:
    """A sync store that holds leadership and sees nothing to do."""

    @contextlib.asynccontextmanager
    async def _lead(self) -> AsyncIterator[bool]:
        yield True

    def leadership(self) -> Any:
        return self._lead()

    async def window_bounds(self) -> WindowBounds:
        return WindowBounds(synced=10, lowest_locked=None, has_requests=False)

    async def apply(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []


class ChainWallet:
    """A synced wallet at height 10 with nothing incoming."""

    async def refresh(self) -> None:
        return None

    async def get_height(self) -> int:
        return 10

    async def incoming_transfers(self, min_height: int, max_height: int) -> list[dict[str, Any]]:
        return []


def _run_ticks(outcomes: list[bool], health: Health, recorder: Recorder) -> None:
    """Run the loop over a may_tick that raises (False) or lets the tick run (True)."""
    script = list(outcomes)

    async def may_tick() -> bool:
        if not script:
            stop.set()
            return False
        if not script.pop(0):
            raise TypeError("a bug in a step before the sync")
        return True

    stop = asyncio.Event()
    engine = SyncEngine(
        Store(),  # type: ignore[arg-type]
        ChainWallet(),
        zero_conf=False,
        reorg_margin=2,
        may_tick=may_tick,
        observer=recorder,
        wallet_name="cafe",
        health=health,
    )
    asyncio.run(asyncio.wait_for(engine.run(stop, 0.001), timeout=10))


def test_failed_ticks_are_recorded_and_the_first_tick_that_runs_clears_them() -> None:
    health, recorder = Health(), Recorder()
    _run_ticks([False, False, False, True, True], health, recorder)
    # Only the type reaches the record (/health is public); the text stays in the log.
    assert health.errors == ["TypeError (details in the gateway's log)"] * 3
    # Cleared once at the first tick that ran; the second writes nothing.
    assert health.failures == 0 and health.clears == 1
    assert [c for c in recorder.calls if c[0] == "tick_failed"] == [("tick_failed", None)] * 3


def test_a_record_that_cannot_be_written_never_stops_the_loop() -> None:
    health, recorder = Health(), Recorder()
    health.down = True
    _run_ticks([False, True], health, recorder)
    assert health.errors == [] and health.clears == 0


def _status(troubles: list[SyncTrouble]) -> tuple[int, str | None]:
    async def ping() -> bool:
        return True

    async def read() -> list[SyncTrouble]:
        return troubles

    identity = WalletIdentity(primary_address="4P", expected="4P", view_only=False)
    identity.ready.set()
    wallet = FakeWallet()
    report = asyncio.run(
        WalletStatus(wallet, wallet, ping, "sqlite", identity, sync_troubles=read).health()
    )
    return report.status, report.message


def test_health_names_a_wallet_whose_sync_has_failed_in_a_row_with_the_error() -> None:
    since = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)
    few = SyncTrouble("the main wallet", FAILING_AFTER - 1, "TypeError: x", since)
    assert _status([few]) == (200, None)
    many = SyncTrouble("the main wallet", FAILING_AFTER + 4, "TypeError: x", since)
    status, message = _status([many])
    assert status == 503
    assert message is not None
    assert "the sync of the main wallet has failed 7 ticks in a row" in message
    assert "2026-12-02T03:00:00+00:00" in message and "TypeError: x" in message


def test_a_rescan_that_times_out_after_the_rewind_is_not_asked_again() -> None:
    """Rewound, then the rescan call timed out: wallet-rpc goes on rescanning by itself,
    so the next tick must not start another one (nothing is owed once rewound)."""
    wallet, recorder, rewinds = AccountsWallet(), Recorder(), []
    calls = {"rescans": 0}

    async def slow_rescan() -> None:
        calls["rescans"] += 1
        if calls["rescans"] == 1:
            raise WalletTimeout("rescan_blockchain did not answer within 60 s")

    wallet.rescan = slow_rescan  # type: ignore[method-assign]
    checks = _checks(wallet, Accounts({0: 0, 1: 300}), recorder, rewinds)

    async def two_ticks() -> tuple[bool, bool]:
        return await checks.before_tick(), await checks.before_tick()

    assert asyncio.run(two_ticks()) == (True, True)
    assert ("step_failed", (LOOKAHEAD_STEP, "main")) in recorder.calls
    assert calls["rescans"] == 1 and rewinds == [1]
