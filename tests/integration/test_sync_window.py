"""Where the sync starts scanning: a fresh sync state with old requests, and a wallet
that is far behind what was synced."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time

import asyncpg
import pytest

from tests.integration.callback_support import log_mark, wait_log
from testsupport.gateway import FAST_POLL, Gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

# A sync state lost and a wallet put back are not announced by monerod: only the poll
# sees them (the tests' gateways poll every 2 s otherwise).
GATEWAY_ARGS = [*FAST_POLL]


def execute(gateway: Gateway, sql: str) -> None:
    """Run one statement directly on the gateway's database."""
    if gateway.backend == "postgresql":

        async def run() -> None:
            conn = await asyncpg.connect(gateway.db_arg[1])
            try:
                await conn.execute(sql)
            finally:
                await conn.close()

        asyncio.run(run())
    else:
        with contextlib.closing(sqlite3.connect(gateway.db_arg[1])) as conn:
            conn.execute(sql)
            conn.commit()


def synced_height(gateway: Gateway) -> int | None:
    """The wallet height stored by the last tick."""
    if gateway.backend == "postgresql":

        async def run() -> int | None:
            conn = await asyncpg.connect(gateway.db_arg[1])
            try:
                value = await conn.fetchval("SELECT wallet_height FROM sync_state")
                return None if value is None else int(value)
            finally:
                await conn.close()

        return asyncio.run(run())
    with contextlib.closing(sqlite3.connect(gateway.db_arg[1])) as conn:
        row = conn.execute("SELECT wallet_height FROM sync_state").fetchone()
        return None if row is None else int(row[0])


def test_lost_sync_state_rescans_history(gateway: Gateway, devnet: Devnet) -> None:
    """Requests but no sync state (e.g. a restored database): the first tick scans all
    history, so a payment mined long before is still found."""
    address = gateway.receive(4242)["address"]
    gateway.stop()
    devnet.pay(address, 4242, mine_blocks=1)
    devnet.mine(25)  # far below any "current height minus margin" window
    execute(gateway, "DELETE FROM sync_state")
    gateway.start()
    status = gateway.wait_status(address, lambda s: s["amount"]["covered"]["total"] == 4242)
    assert status["complete"] is True


def test_wallet_far_behind_pauses_sync(gateway: Gateway, devnet: Devnet) -> None:
    """A wallet far below the synced height (rescanning, restored) is not trusted: the
    tick writes nothing until it has caught up, and says so in the log."""
    address = gateway.receive(1)["address"]
    devnet.pay(address, 1, mine_blocks=1)
    gateway.wait_status(address, lambda s: len(s["transactions"]) == 1)
    gateway.stop()
    ahead = (synced_height(gateway) or 0) + 500
    execute(gateway, f"UPDATE sync_state SET wallet_height = {ahead}")
    mark = log_mark(gateway)
    gateway.start()
    wait_log(gateway, "far below the synced height", since=mark)  # a tick saw it
    time.sleep(2)  # and a few more ticks (0.5 s apart) write nothing either
    assert synced_height(gateway) == ahead
    assert len(gateway.status(address)["transactions"]) == 1
    execute(gateway, "DELETE FROM sync_state")  # leave the module's gateway syncing again
