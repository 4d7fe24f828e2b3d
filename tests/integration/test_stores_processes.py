"""Stores (one store's trouble stays its own) across two gateway processes on
one PostgreSQL database: a process killed while it syncs is taken over by the other,
every store's payment is seen and every callback delivered once.

PostgreSQL only: a SQLite database belongs to one process by design. Two separate
``xmrgate serve`` processes (A and B, each on its own port), not ``--workers``: as two
hosts would run them, on one main wallet-rpc, plus a second wallet-rpc for a store on its
own wallet (which has its own sync loop and its own advisory lock). A ticks four times as
often as B, and is SIGKILLed while it holds both sync locks (the main wallet's and the
own wallet's, seen in ``pg_locks``) just after the block with the payments is mined.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.integration.callback_support import (
    XMR,
    events_of,
    kinds,
    mine_until_unlocked,
    signature_ok,
)
from tests.integration.receiver import Receiver
from tests.integration.test_store_own_wallet import post_store
from tests.integration.test_stores import (
    OPERATOR,
    OPERATOR_KEY,
    Shop,
    get_json,
    make_shop,
    receive,
)
from testsupport.gateway import LOOPBACK_CALLBACKS, Gateway, count_rows
from testsupport.postgres import create_pg_database, drop_pg_database
from xmrgate.adapters.store.db import SYNC_LOCK_KEY
from xmrgate.core.store_gateways import RELOAD_EVERY
from xmrgate.devnet import Devnet, DevnetError, WalletRpc

pytestmark = pytest.mark.integration

COMMON_ARGS = [
    *LOOPBACK_CALLBACKS,
    "--api-key",
    OPERATOR_KEY,
    "--callback-secret",
    "default-callback-secret-0123",
    "--callback-retry-base",
    "0.5s",
    # A claim lasts the try's deadline + 30 s: a claim of the killed process (unlikely,
    # it is killed mid-tick) would hold its event back 32 s rather than 40 s.
    "--callback-timeout",
    "2s",
    # A small pool per store keeps the shared wallet-rpc free for the sync ticks.
    "--address-pool-size",
    "8",
    "--address-pool-low-water",
    "2",
]
# A ticks more often than B, so A is the likelier holder of the sync lock.
A_POLL = "0.25s"
B_POLL = "1s"
B_POLL_SECONDS = 1.0
# "Taken over within a few poll periods": B's bound to see what happened on the chain
# after A died (8 of its polls; it took 0-1.5 s in runs on a busy machine).
TAKEOVER_WAIT = 8 * B_POLL_SECONDS
# A store made through A works on B after B's next reload (every RELOAD_EVERY s).
RELOAD_WAIT = RELOAD_EVERY + 2.0
# Liveness bound for the callbacks: the takeover plus one expired claim (32 s), at worst.
CALLBACKS_WAIT = 45.0
EVENTS_PER_REQUEST = ["transfer.confirmed", "transfer.unlocked"]
OWN_STORE = "own-procs"


@dataclass(frozen=True)
class Pair:
    """Processes A and B on one database and one main wallet-rpc; ``own``: the wallet-rpc
    (a fresh wallet open) for a store on its own wallet."""

    a: Gateway
    b: Gateway
    database: str
    own: WalletRpc


@pytest.fixture
def pair(devnet: Devnet, tmp_path: Path) -> Iterator[Pair]:
    """A fresh wallet-rpc and PostgreSQL database, and two gateways on them (A, then B);
    a second wallet-rpc with a fresh wallet, for a store on its own wallet.

    Everything is ended by PID (the gateways, the wallet-rpcs) or dropped by name (the
    database) however the test ends; a process the test killed already is skipped.
    """
    tag = uuid.uuid4().hex[:6]
    own = devnet.start_wallet_rpc(f"stores-procs-own-{tag}")
    wallet = devnet.start_wallet_rpc(f"stores-procs-{tag}")
    try:
        own.call("create_wallet", {"filename": "own", "language": "English"})
        database = create_pg_database()
        try:
            a, b = (
                Gateway(
                    devnet=devnet,
                    wallet=wallet,
                    backend="postgresql",
                    db_arg=["--postgresql", database],
                    workdir=tmp_path,
                    extra_args=[*COMMON_ARGS, "--poll-frequency", poll],
                )
                for poll in (A_POLL, B_POLL)
            )
            try:
                a.start()  # creates the wallet and migrates the database
                b.start()
                yield Pair(a=a, b=b, database=database, own=own)
            finally:
                try:
                    b.close()
                finally:
                    a.close()
        finally:
            drop_pg_database(database)
    finally:
        try:
            wallet.stop()
        finally:
            own.stop()


def make_own_shop(gateway: Gateway, rpc: WalletRpc) -> Shop:
    """POST /stores on ``rpc``'s wallet (the store receives on its account 0), then a key."""
    secret = f"{OWN_STORE}-callback-secret-0123"
    r = post_store(gateway, OWN_STORE, {"rpc_address": rpc.url}, secret)
    assert r.status_code == 200, r.text
    assert r.json()["wallet"]["rpc_address"] == rpc.url, r.text
    k = gateway.post(f"/stores/{OWN_STORE}/keys", headers=OPERATOR)
    assert k.status_code == 200, k.text
    return Shop(id=OWN_STORE, account=0, secret=secret, key=k.json()["key"], key_id=k.json()["id"])


def tcp_ports(pid: int) -> set[int]:
    """Local TCP ports of the sockets process ``pid`` holds (from /proc)."""
    inodes = set()
    with os.scandir(f"/proc/{pid}/fd") as fds:
        for fd in fds:
            try:
                target = os.readlink(fd.path)
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


# The client port of the session holding a sync lock (a bigint advisory lock is
# classid = high 32 bits, objid = low 32 bits, objsubid = 1), in this database.
LOCK_HOLDER = """
SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.classid = $1 AND l.objid = $2
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


def own_lock_key(database: str, store_id: str) -> int:
    """The advisory lock of the sync of ``store_id``'s own wallet: the main wallet's key
    moved by its ``wallet_no`` (as ``Database.sync_leadership`` makes it), which must
    differ from the main wallet's: each wallet is synced apart."""

    async def run() -> int:
        conn = await asyncpg.connect(database)
        try:
            wallet_no = await conn.fetchval("SELECT wallet_no FROM stores WHERE id = $1", store_id)
        finally:
            await conn.close()
        assert wallet_no is not None and wallet_no > 1, f"{store_id}: wallet_no {wallet_no}"
        return int(SYNC_LOCK_KEY + (wallet_no - 1) * 0x1_0000_0000)

    return asyncio.run(run())


def kill_while_syncing(
    gateway: Gateway, database: str, keys: list[int], timeout: float
) -> float | None:
    """SIGKILL ``gateway`` the moment it holds every sync lock of ``keys`` at once (its
    ticks of those wallets all under way); say after how long (None: it never did within
    ``timeout`` s, and was killed anyway)."""

    async def run() -> float | None:
        conn = await asyncpg.connect(database)
        try:
            started = time.monotonic()
            while time.monotonic() - started < timeout:
                ports = [await conn.fetchval(LOCK_HOLDER, k >> 32, k & 0xFFFFFFFF) for k in keys]
                if None not in ports and set(ports) <= tcp_ports(gateway.pid):
                    gateway.kill()
                    return time.monotonic() - started
                await asyncio.sleep(0.005)
            gateway.kill()
            return None
        finally:
            await conn.close()

    return asyncio.run(run())


def wait_on_b(
    b: Gateway,
    shop: Shop,
    address: str,
    predicate: Callable[[dict[str, Any]], bool],
    what: str,
    timeout: float,
) -> dict[str, Any]:
    """Poll B's GET /receive/{address} with the store's key until ``predicate`` holds."""
    path = f"/receive/{address}"
    return b.wait_for(
        f"B: {what} for store {shop.id} (GET {path})",
        lambda: get_json(b, path, shop.auth),
        predicate,
        timeout,
    )


def key_status(gateway: Gateway, shop: Shop) -> int:
    """The status code of GET /receive with the store's key (401 while unknown there)."""
    return gateway.get("/receive", headers=shop.auth).status_code


def mined_and_covered(amount: int, tx_hash: str) -> Callable[[dict[str, Any]], bool]:
    """Predicate on GET /receive/{address}: ``tx_hash`` mined, covering exactly ``amount``."""

    def check(status: dict[str, Any]) -> bool:
        mined = [t for t in status["transactions"] if t["tx_hash"] == tx_hash and t["height"] > 0]
        return len(mined) == 1 and status["amount"]["covered"]["total"] == amount

    return check


def test_killed_process_is_taken_over_every_payment_seen_every_callback_once(
    pair: Pair, devnet: Devnet, receiver: Receiver
) -> None:
    """3 account stores and 1 store on its own wallet made on A; requests on A and B; one
    tx paying all 4; A SIGKILLed while it syncs both wallets. B sees each payment covered,
    then complete after 10 blocks, within a few of its polls (the own wallet's sync taken
    over under its own lock); the receiver gets each of the 8 events exactly once."""
    a, b = pair.a, pair.b
    shops = [make_shop(a, f"shop-{i}") for i in range(3)]
    own = make_own_shop(a, pair.own)
    shops.append(own)
    created = time.monotonic()

    # B reads the stores table every RELOAD_EVERY s: the keys made through A work on B.
    for shop in shops:
        b.wait_for(
            f"B to accept store {shop.id}'s key made through A",
            functools.partial(key_status, b, shop),
            lambda code: code == 200,
            timeout=max(RELOAD_WAIT - (time.monotonic() - created), 0.5),
        )

    amounts = [(i + 1) * XMR // 10 for i in range(len(shops))]
    # Store 0's request made on A, the others' on B.
    makers = [a, b, b, b]
    addresses = [
        receive(gw, shop.auth, amount, callback_url=receiver.url, description=f"{shop.id} order")
        for gw, shop, amount in zip(makers, shops, amounts, strict=True)
    ]
    assert len(set(addresses)) == len(shops), addresses
    for shop, address, amount in zip(shops, addresses, amounts, strict=True):
        rpc = pair.own if shop is own else a.wallet
        index = rpc.call("get_address_index", {"address": address})["index"]
        # Accounts 1-3 of the main wallet; account 0 of its own wallet for the own store.
        assert index["major"] == shop.account and index["minor"] > 0, f"{shop.id}: {index}"
        assert (shop.account == 0) == (shop is own), f"{shop.id} on account {shop.account}"
        # Each store reads its request on both processes.
        for gw in (a, b):
            status = get_json(gw, f"/receive/{address}", shop.auth)
            assert status["amount"]["expected"] == amount, status
            assert status["description"] == f"{shop.id} order", status
    with pytest.raises(DevnetError):  # the own store's subaddress is not the main wallet's
        a.wallet.call("get_address_index", {"address": addresses[-1]})

    tx_hash = devnet.pay_many(list(zip(addresses, amounts, strict=True)))  # relayed, not mined
    mined_height = devnet.mine(1) - 1
    locks = [SYNC_LOCK_KEY, own_lock_key(pair.database, own.id)]
    assert locks[0] != locks[1], "the own wallet's sync shares the main wallet's lock"
    waited = kill_while_syncing(a, pair.database, locks, timeout=10.0)
    killed = time.monotonic()
    assert waited is not None, (
        "A never held both sync locks (main wallet and own wallet) in the 10 s after the block"
    )
    # B alone is left: it must see every payment mined...
    for shop, address, amount in zip(shops, addresses, amounts, strict=True):
        status = wait_on_b(
            b,
            shop,
            address,
            mined_and_covered(amount, tx_hash),
            "the payment mined and covered",
            timeout=max(TAKEOVER_WAIT - (time.monotonic() - killed), 0.5),
        )
        assert status["amount"]["due"] == 0, status
    seen_mined = time.monotonic() - killed

    # ...and, only by syncing itself (A is dead), unlocked 10 blocks later.
    mine_until_unlocked(devnet, mined_height)
    unlocked_at = time.monotonic()
    for shop, address in zip(shops, addresses, strict=True):
        status = wait_on_b(
            b,
            shop,
            address,
            lambda s: bool(s["complete"]),
            "the payment complete (unlocked)",
            timeout=max(TAKEOVER_WAIT - (time.monotonic() - unlocked_at), 0.5),
        )
        assert status["status"] == "complete", status
    seen_unlocked = time.monotonic() - unlocked_at

    wanted = len(EVENTS_PER_REQUEST) * len(addresses)
    receiver.wait_for(
        lambda got: len(got) >= wanted, timeout=CALLBACKS_WAIT, what=f"{wanted} callbacks"
    )
    time.sleep(2 * B_POLL_SECONDS)  # room for a duplicate to show up (waiting for an absence)
    delivered = receiver.delivered()
    ids = Counter(r.headers["x-xmrgate-event-id"] for r in delivered)
    duplicates = {event_id: n for event_id, n in ids.items() if n > 1}
    assert not duplicates, f"event ids delivered more than once: {duplicates}"
    assert len(delivered) == wanted, [r.summary() for r in delivered]

    listed_ids: set[str] = set()
    for shop, address in zip(shops, addresses, strict=True):
        got = events_of(delivered, address)
        assert kinds(got) == EVENTS_PER_REQUEST, f"{shop.id}: {kinds(got)}"
        for callback in got:
            header = callback.headers["x-xmrgate-signature"]
            assert signature_ok(shop.secret.encode(), header, callback.body), (
                f"{shop.id}'s {callback.json['event']} not signed with its store's secret"
            )
            assert callback.json["transaction"]["tx_hash"] == tx_hash
        # B's account of the callbacks: the same event ids, each delivered in one try.
        listed = get_json(b, f"/receive/{address}/callbacks", shop.auth)["callbacks"]
        assert [c["event"] for c in listed] == EVENTS_PER_REQUEST, listed
        assert {c["id"] for c in listed} == {r.headers["x-xmrgate-event-id"] for r in got}, (
            f"{shop.id}: B lists {listed}, the receiver got {[r.summary() for r in got]}"
        )
        for c in listed:
            assert c["status"] == "delivered" and len(c["tries"]) == 1, c
        listed_ids |= {c["id"] for c in listed}
    assert listed_ids == set(ids), "B's callbacks and the receiver's differ"
    # Each event made once, though A died mid-tick and B ticked on: no overlap doubled one.
    assert count_rows(b, "events") == wanted
    assert count_rows(b, "transfers") == len(addresses)
    who = [name for name, gw in (("A", a), ("B", b)) if "transfer.confirmed" in gw.log_tail(10_000)]
    print(
        f"A killed {waited:.2f}s after the block, holding both sync locks; B saw the payments "
        f"mined {seen_mined:.1f}s after the kill, unlocked {seen_unlocked:.1f}s after the "
        f"10 blocks; transfer.confirmed made by {who}"
    )
