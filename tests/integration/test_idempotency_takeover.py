"""An Idempotency-Key whose process was SIGKILLed, retried on another host.

Two ``xmrgate serve`` processes (A and B) on one PostgreSQL database and one wallet-rpc,
as two hosts run them, with a short lease (``--idempotency-lease 1``). A's POST /receive
is held inside PostgreSQL by a trigger the test adds (it waits for an advisory lock the
test holds), at one of two moments, and A is SIGKILLed there:

* before the commit: the request's INSERT waits; A's backend is terminated too, so the
  INSERT never commits. B's retry of the same POST takes the claim over once its lease
  ran out and makes the request (one request under the claim).
* between the commit and the answer: the request is committed, storing the answer waits.
  B's retry answers THAT request (its address), making none.

Either way B answers within a few seconds of the kill, not after the key's day-long
expiry; before the lease ran out it answers 409, never a second request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest

from testsupport.gateway import Gateway, close_gateway, query_rows, start_gateway
from testsupport.processes import wait_until
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration
LEASE = ["--idempotency-lease", "1"]
GATE = 4242  # the advisory lock the trigger waits for
BODY = {"amount": 7_000_000, "description": "takeover"}


@dataclass
class Hosts:
    """Two gateway processes on one database and wallet-rpc."""

    a: Gateway
    b: Gateway


@pytest.fixture(scope="module")
def hosts(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    """A (which made the wallet and database) and B beside it; both ended by PID."""
    workdir = tmp_path_factory.mktemp("takeover")
    a = start_gateway(devnet, "postgresql", workdir / "a", LEASE)
    try:
        b = Gateway(
            devnet=devnet,
            wallet=a.wallet,
            backend="postgresql",
            db_arg=a.db_arg,
            workdir=workdir / "b",
            extra_args=LEASE,
        )
        try:
            b.start()
            yield Hosts(a, b)
        finally:
            b.close()
    finally:
        close_gateway(a)


async def _gated(database: str, trigger_sql: str, work: Any) -> Any:
    """Install a trigger that waits for the test's advisory lock, hold the lock while
    ``work(conn)`` runs (it kills the process), then drop the trigger."""
    conn = await asyncpg.connect(database)
    try:
        await conn.execute(
            f"""
            CREATE OR REPLACE FUNCTION xmrgate_test_gate() RETURNS trigger AS $$
            BEGIN PERFORM pg_advisory_xact_lock_shared({GATE}); RETURN NEW; END
            $$ LANGUAGE plpgsql;
            {trigger_sql}
            """
        )
        await conn.execute(f"SELECT pg_advisory_lock({GATE})")
        try:
            return await work(conn)
        finally:
            await conn.execute(f"SELECT pg_advisory_unlock({GATE})")
            await conn.execute("DROP TRIGGER IF EXISTS xmrgate_test_gate ON payment_requests")
            await conn.execute("DROP TRIGGER IF EXISTS xmrgate_test_gate ON idempotency_keys")
    finally:
        await conn.close()


def _waiting_backends(database: str) -> list[int]:
    """PIDs of the backends waiting for the gate."""
    rows = query_rows_pg(
        database,
        f"SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = {GATE} AND NOT granted",
    )
    return [int(r[0]) for r in rows]


def query_rows_pg(database: str, query: str) -> list[tuple[Any, ...]]:
    """One statement on the database, on a connection of its own."""

    async def run() -> list[tuple[Any, ...]]:
        conn = await asyncpg.connect(database)
        try:
            return [tuple(r) for r in await conn.fetch(query)]
        finally:
            await conn.close()

    return asyncio.run(run())


def _kill_a_while_gated(
    hosts: Hosts, key: str, trigger_sql: str, *, terminate_backend: bool
) -> float:
    """Send A's POST (held by the gate), SIGKILL A there; the time of the kill."""
    a = hosts.a
    database = a.database
    posting = concurrent.futures.ThreadPoolExecutor(1)

    def post() -> Any:
        with httpx.Client(timeout=60, trust_env=False) as client:
            try:
                return client.post(a.url + "/receive", json=BODY, headers={"Idempotency-Key": key})
            except httpx.TransportError as exc:  # A was killed: no answer
                return exc

    async def work(conn: asyncpg.Connection) -> float:
        sent = posting.submit(post)
        waiting = await asyncio.to_thread(
            wait_until,
            "A's request held at the gate",
            lambda: (bool(found := _waiting_backends(database)), found),
            timeout=30,
            log=a.log_path,
            proc=a.proc,
        )
        a.kill()
        killed = time.monotonic()
        if terminate_backend:
            # The host is gone with its transaction: nothing it began commits.
            for pid in waiting:
                await conn.execute("SELECT pg_terminate_backend($1)", pid)
        await asyncio.to_thread(sent.result, 60)
        return killed

    try:
        return float(asyncio.run(_gated(database, trigger_sql, work)))
    finally:
        posting.shutdown(wait=True)


def _retry_on_b(hosts: Hosts, key: str) -> tuple[httpx.Response, list[int]]:
    """B's retries of the same POST until one is not 409; the statuses seen."""
    statuses: list[int] = []

    def once() -> tuple[bool, httpx.Response]:
        answer = hosts.b.post("/receive", json=BODY, headers={"Idempotency-Key": key})
        statuses.append(answer.status_code)
        return answer.status_code != 409, answer

    answer = wait_until("B's retry answered", once, timeout=30, log=hosts.b.log_path, interval=0.2)
    return answer, statuses


def _made_under(hosts: Hosts, key: str) -> list[str]:
    """Addresses of the requests made under the key's claim."""
    rows = query_rows(
        hosts.a,
        "SELECT r.address FROM payment_requests r JOIN idempotency_keys k "
        f"ON r.idempotency_ref = k.ref WHERE k.key = '{key}'",
    )
    return [str(r[0]) for r in rows]


def test_killed_before_the_commit_the_retry_makes_the_request(hosts: Hosts) -> None:
    if hosts.a.proc is None:
        hosts.a.start()
    key = "takeover-before-commit"
    killed = _kill_a_while_gated(
        hosts,
        key,
        "CREATE TRIGGER xmrgate_test_gate BEFORE INSERT ON payment_requests "
        "FOR EACH ROW EXECUTE FUNCTION xmrgate_test_gate();",
        terminate_backend=True,
    )
    assert _made_under(hosts, key) == [], "the killed host committed nothing"
    answer, statuses = _retry_on_b(hosts, key)
    took = time.monotonic() - killed
    assert answer.status_code == 200, answer.text
    assert _made_under(hosts, key) == [answer.json()["address"]]
    assert took < 10, f"answered {took:.1f} s after the kill ({statuses})"
    again = hosts.b.post("/receive", json=BODY, headers={"Idempotency-Key": key})
    assert again.json() == answer.json() and again.headers["idempotent-replayed"] == "true"


def test_killed_between_the_commit_and_the_answer_the_retry_answers_that_request(
    hosts: Hosts,
) -> None:
    if hosts.a.proc is None:
        hosts.a.start()
    key = "takeover-after-commit"
    killed = _kill_a_while_gated(
        hosts,
        key,
        "CREATE TRIGGER xmrgate_test_gate BEFORE UPDATE ON idempotency_keys "
        "FOR EACH ROW WHEN (NEW.state = 'done') EXECUTE FUNCTION xmrgate_test_gate();",
        terminate_backend=True,
    )
    made = _made_under(hosts, key)
    assert len(made) == 1, "the killed host committed its request"
    answer, statuses = _retry_on_b(hosts, key)
    took = time.monotonic() - killed
    assert answer.status_code == 200, answer.text
    assert answer.json()["address"] == made[0]
    assert answer.headers["idempotent-replayed"] == "true"
    assert _made_under(hosts, key) == made, "no second request"
    assert took < 10, f"answered {took:.1f} s after the kill ({statuses})"
    status = hosts.b.get(f"/receive/{made[0]}")
    assert status.status_code == 200 and status.json()["amount"]["expected"] == BODY["amount"]
