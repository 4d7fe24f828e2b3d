"""The refresh gate and the sync loop's wake-up, with in-memory fakes.

``RefreshGate`` must skip the wallet's ``refresh`` and ``get_transfers`` only when
neither the daemon's chain, its pool, its pool double spends, the wallet's height nor
the tick's window changed, and the last full refresh is recent; ``SyncEngine.wake``
must start a tick before the poll interval is over.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from xmrgate.core.sync import SyncEngine
from xmrgate.core.sync_gate import ChainState, RefreshGate
from xmrgate.domain.errors import DaemonUnavailable

TOP = ChainState(height=100, top_hash="aa", pool=frozenset(), double_spends=0)


class Wallet:
    """A wallet whose height follows the daemon's when refreshed."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self.height = chain.state.height
        self.refreshes = 0
        self.queries: list[tuple[int, int]] = []

    async def refresh(self) -> None:
        self.refreshes += 1
        self.height = self.chain.state.height

    async def get_height(self) -> int:
        return self.height

    async def incoming_transfers(self, min_height: int, max_height: int) -> list[dict[str, Any]]:
        self.queries.append((min_height, max_height))
        return [{"txid": h} for h in sorted(self.chain.state.pool)]


class Chain:
    """The daemon: its state can be changed, or it can be down."""

    def __init__(self) -> None:
        self.state = TOP
        self.down = False

    async def chain_state(self) -> ChainState:
        if self.down:
            raise DaemonUnavailable("monerod unreachable: ConnectError")
        return self.state


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make() -> tuple[RefreshGate, Wallet, Chain, Clock]:
    chain = Chain()
    wallet = Wallet(chain)
    clock = Clock()
    return RefreshGate(wallet, chain, full_every=60.0, clock=clock), wallet, chain, clock


async def tick(gate: RefreshGate, start: int = 90) -> list[dict[str, Any]]:
    """The wallet calls of one SyncEngine.tick, in its order."""
    await gate.refresh()
    height = await gate.get_height()
    return await gate.incoming_transfers(start, height)


def test_nothing_changed_skips_refresh_and_transfers() -> None:
    gate, wallet, _chain, _clock = make()

    async def go() -> None:
        first = await tick(gate)
        second = await tick(gate)
        assert second == first

    asyncio.run(go())
    assert (wallet.refreshes, len(wallet.queries)) == (1, 1)
    assert (gate.refreshes, gate.skipped) == (1, 1)


@pytest.mark.parametrize(
    "change",
    [
        {"height": 101, "top_hash": "bb"},  # a block
        {"top_hash": "cc"},  # a reorg at the same height
        {"pool": frozenset({"tx1"})},  # a pool transaction
        {"double_spends": 1},  # a pool transaction now known to be double spent
    ],
)
def test_daemon_change_refreshes(change: dict[str, Any]) -> None:
    gate, wallet, chain, _clock = make()

    async def go() -> list[dict[str, Any]]:
        await tick(gate)
        chain.state = replace(chain.state, **change)
        return await tick(gate)

    seen = asyncio.run(go())
    assert wallet.refreshes == 2
    assert len(wallet.queries) == 2
    assert seen == [{"txid": h} for h in sorted(chain.state.pool)]


def test_wallet_moved_on_its_own_refreshes() -> None:
    """A wallet restarted on an older file (or refreshed by itself) is refreshed again."""
    gate, wallet, _chain, _clock = make()

    async def go() -> None:
        await tick(gate)
        wallet.height -= 5
        await tick(gate)

    asyncio.run(go())
    assert wallet.refreshes == 2


def test_new_window_asks_the_wallet_without_refresh() -> None:
    """The window moved (sync rewound after a rescan): transfers are read again."""
    gate, wallet, _chain, _clock = make()

    async def go() -> None:
        await tick(gate, start=90)
        await tick(gate, start=10)
        await tick(gate, start=10)

    asyncio.run(go())
    assert wallet.refreshes == 1
    assert wallet.queries == [(90, 100), (10, 100)]


def test_block_during_refresh_is_not_skipped_next_time() -> None:
    """The daemon state stored is the one read BEFORE the refresh."""
    chain = Chain()

    class RacingWallet(Wallet):
        async def refresh(self) -> None:
            chain.state = replace(chain.state, height=101, top_hash="bb")  # mined meanwhile
            await super().refresh()

    wallet = RacingWallet(chain)
    gate = RefreshGate(wallet, chain, clock=Clock())

    async def go() -> None:
        await tick(gate)
        await tick(gate)

    asyncio.run(go())
    assert wallet.refreshes == 2


def test_daemon_down_refreshes_every_tick() -> None:
    gate, wallet, chain, _clock = make()
    chain.down = True

    async def go() -> None:
        for _ in range(3):
            await tick(gate)

    asyncio.run(go())
    assert wallet.refreshes == 3


def test_full_refresh_at_least_every_full_every() -> None:
    gate, wallet, _chain, clock = make()

    async def go() -> None:
        await tick(gate)
        clock.now += 59
        await tick(gate)
        clock.now += 2
        await tick(gate)

    asyncio.run(go())
    assert wallet.refreshes == 2


class CountingTicks:
    """A may_tick that counts the ticks started and lets none go further."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = asyncio.Event()

    async def __call__(self) -> bool:
        self.count += 1
        self.changed.set()
        return False


class Leader:
    def leadership(self) -> Any:
        import contextlib

        @contextlib.asynccontextmanager
        async def lead() -> Any:
            yield True

        return lead()


async def _ticks_after(wake: bool) -> int:
    ticks = CountingTicks()
    engine = SyncEngine(
        Leader(),  # type: ignore[arg-type]
        Wallet(Chain()),
        zero_conf=False,
        reorg_margin=10,
        may_tick=ticks,
    )
    stop = asyncio.Event()
    loop = asyncio.create_task(engine.run(stop, interval=60.0))
    await asyncio.wait_for(ticks.changed.wait(), 5)
    ticks.changed.clear()
    if wake:
        engine.wake()
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.wait_for(loop, 5)
    return ticks.count


def test_wake_starts_a_tick_before_the_poll() -> None:
    assert asyncio.run(_ticks_after(wake=True)) == 2


def test_without_wake_the_loop_waits_for_the_poll() -> None:
    assert asyncio.run(_ticks_after(wake=False)) == 1
