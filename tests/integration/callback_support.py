"""Helpers shared by the callback and sync fault tests (no tests here)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import re
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import asyncpg

from tests.integration.gateway import SYNC_WAIT, Gateway
from tests.integration.receiver import Received
from xmrgate.devnet import Devnet

XMR = 10**12
# Blocks until a received output is spendable (CRYPTONOTE_DEFAULT_TX_SPENDABLE_AGE).
UNLOCK_BLOCKS = 10
PAYLOAD_KEYS = {
    "amount",
    "complete",
    "description",
    "created_at",
    "transaction",
    "event",
    "address",
}
TRANSACTION_KEYS = {
    "amount",
    "confirmations",
    "double_spend_seen",
    "fee",
    "height",
    "timestamp",
    "tx_hash",
    "unlock_time",
    "locked",
}
SIGNATURE = re.compile(r"^t=(\d+),v1=([0-9a-f]{64})$")


def db_scalar(gateway: Gateway, query: str) -> Any:
    """One value read directly from the gateway's database (queries come from tests only)."""
    if gateway.backend == "postgresql":

        async def run() -> Any:
            conn = await asyncpg.connect(gateway.db_arg[1])
            try:
                return await conn.fetchval(query)
            finally:
                await conn.close()

        return asyncio.run(run())
    with contextlib.closing(sqlite3.connect(gateway.db_arg[1])) as conn:
        return conn.execute(query).fetchone()[0]


def callbacks(gateway: Gateway, address: str) -> list[dict[str, Any]]:
    """GET /receive/{address}/callbacks."""
    r = gateway.get(f"/receive/{address}/callbacks")
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["callbacks"]
    return found


def wait_callbacks(
    gateway: Gateway,
    address: str,
    predicate: Callable[[list[dict[str, Any]]], bool],
    timeout: float = SYNC_WAIT,
) -> list[dict[str, Any]]:
    """Poll the callbacks list until ``predicate`` holds."""
    deadline = time.monotonic() + timeout
    last: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        last = callbacks(gateway, address)
        if predicate(last):
            return last
        time.sleep(0.1)
    raise AssertionError(f"callbacks condition not met in {timeout}s; last: {last}")


def events_of(received: list[Received], address: str) -> list[Received]:
    """Callbacks of one payment request, in arrival order."""
    return [r for r in received if r.json["address"] == address]


def kinds(received: list[Received]) -> list[str]:
    """The ``event`` field of each callback."""
    return [r.json["event"] for r in received]


def wait_kinds(
    receiver: Any, address: str, wanted: list[str], timeout: float = SYNC_WAIT
) -> list[Received]:
    """Wait until the delivered callbacks of ``address`` have exactly the kinds ``wanted``."""
    receiver.wait_for(lambda d: len(events_of(d, address)) >= len(wanted), timeout=timeout)
    got = events_of(receiver.delivered(), address)
    assert kinds(got) == wanted
    return got


def signature_ok(secret: bytes, header: str, body: bytes) -> bool:
    """Check ``t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`` from first principles."""
    match = SIGNATURE.match(header)
    if match is None:
        return False
    timestamp, given = match.groups()
    expected = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, given)


def mine_until_unlocked(devnet: Devnet, height: int) -> None:
    """Mine until a transfer mined at ``height`` has its 10 confirmations."""
    devnet.mine(max(height + UNLOCK_BLOCKS - devnet.height(), 0))


def transfer_height(
    gateway: Gateway, address: str, tx_hash: str, timeout: float = SYNC_WAIT
) -> int:
    """The block height GET /receive reports for a mined transfer."""
    body = gateway.wait_status(
        address,
        lambda s: any(t["tx_hash"] == tx_hash and t["height"] > 0 for t in s["transactions"]),
        timeout=timeout,
    )
    return next(int(t["height"]) for t in body["transactions"] if t["tx_hash"] == tx_hash)
