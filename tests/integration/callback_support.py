"""Helpers shared by the integration tests (no tests here): waits that say what they
waited for, direct database reads, callback bookkeeping."""

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
import httpx

from tests.integration.receiver import Received
from testsupport.gateway import SYNC_WAIT, Gateway
from testsupport.processes import wait_until
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
    # Invoices (docs/invoices.md): on every callback, also without the new fields.
    "status",
    "expires_at",
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


def log_mark(gateway: Gateway) -> int:
    """The gateway log's current size: pass it to :func:`wait_log` to look at later lines only."""
    try:
        return gateway.log_path.stat().st_size
    except FileNotFoundError:
        return 0


def wait_log(gateway: Gateway, text: str, since: int = 0, timeout: float = SYNC_WAIT) -> None:
    """Wait until ``text`` shows in the gateway's log after byte offset ``since``."""

    def probe() -> tuple[bool, str]:
        try:
            with gateway.log_path.open("rb") as log:
                log.seek(since)
                new = log.read().decode(errors="replace")
        except FileNotFoundError:
            new = ""
        return text in new, new[-1500:]

    wait_until(
        f"{text!r} in the gateway's log (after byte {since})",
        probe,
        timeout=timeout,
        proc=gateway.proc,
        interval=0.2,
    )


def wait_health(gateway: Gateway, status: int, timeout: float = 10) -> httpx.Response:
    """Poll /health until it answers ``status``; each answer must come within 5 s.

    /health may answer from a cache for a moment after a fault, so a test waits for the
    new state instead of asserting the first answer.
    """

    def probe() -> tuple[bool, httpx.Response]:
        started = time.monotonic()
        r = gateway.get("/health", timeout=10)
        elapsed = time.monotonic() - started
        assert elapsed < 5, f"/health took {elapsed:.1f}s"
        return r.status_code == status, r

    return wait_until(
        f"/health to answer {status}",
        probe,
        timeout=timeout,
        log=gateway.log_path,
        proc=gateway.proc,
        interval=0.1,
    )


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
    what: str = "the callbacks list to match",
) -> list[dict[str, Any]]:
    """Poll GET /receive/{address}/callbacks until ``predicate`` holds."""

    def probe() -> tuple[bool, list[dict[str, Any]]]:
        listed = callbacks(gateway, address)
        return predicate(listed), listed

    return wait_until(
        f"{what} (GET /receive/{address}/callbacks)",
        probe,
        timeout=timeout,
        log=gateway.log_path,
        proc=gateway.proc,
    )


def all_delivered(count: int) -> Callable[[list[dict[str, Any]]], bool]:
    """Predicate for :func:`wait_callbacks`: exactly ``count`` events, each delivered.

    The receiver records a callback before it answers, and the gateway marks the
    event delivered only once it has the answer: right after the receiver has seen
    a callback, the list may still say "pending".
    """
    return lambda listed: len(listed) == count and all(c["status"] == "delivered" for c in listed)


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
    receiver.wait_for(
        lambda d: len(events_of(d, address)) >= len(wanted),
        timeout=timeout,
        what=f"{len(wanted)} callbacks {wanted} for {address[:8]}...",
    )
    got = events_of(receiver.delivered(), address)
    assert kinds(got) == wanted, f"callbacks for {address[:8]}...: {kinds(got)}, wanted {wanted}"
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
