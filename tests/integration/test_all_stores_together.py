"""Every kind of store at once, on two gateway processes, for longer than a lookahead check.

The default store (account 0 of the main wallet), a store on another account of the main
wallet and a store on a wallet-rpc of its own, all made before the first payment; two
``xmrgate serve`` processes (A and B) on one PostgreSQL database (``testsupport/all_stores.py``).
Each process checks every store account's subaddress table in full at start, after a
wallet reopen and every ``--lookahead-check-interval``: a minute by default, 2 s here, so
that the run passes a few dozen of those checks. A gateway whose full check tripped over
the store on its own wallet (which has no account of the main wallet) failed every main
wallet tick from then on, and the payments to the default and the account store were
never credited; the stores' other tests end within the first minute and never got there.

Four rounds of payments to all three stores, a few full checks apart: requests made
through A and B with a callback URL to a loopback receiver, and Greenfield invoices with a
webhook per store (rounds 1 and 2). A is SIGKILLed while it syncs round 2's block (B
credits it alone), then restarted; round 3's block is replaced by a reorg (its transaction
gone), then paid again. Every payment must be credited in full and complete on both
processes, every callback and webhook event delivered once, and no sync tick may fail, or
go on without its lookahead check because that failed, in either process: their logs
(A's across its restart) are read before every wait, so such a failure ends the test at
once, and their failure counters are read at the end.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.callback_support import XMR, events_of, kinds, signature_ok
from tests.integration.receiver import Receiver, start_receiver
from tests.integration.test_greenfield_webhooks import _signed
from tests.integration.test_stores_processes import kill_while_syncing, own_lock_key
from testsupport.all_stores import AllStores
from testsupport.all_stores_ledger import (
    PAID,
    PAID_AGAIN,
    Payment,
    delivery_key,
    due_callbacks,
    due_webhooks,
    spread,
    tally,
)
from testsupport.gateway import Gateway, count_rows
from testsupport.gateway_databases import migrated_postgresql
from testsupport.postgres import drop_pg_database
from xmrgate.adapters.store.db import SYNC_LOCK_KEY
from xmrgate.devnet import Devnet, DevnetError

pytestmark = pytest.mark.integration

LOOKAHEAD = "2s"
LOOKAHEAD_SECONDS = 2.0
# Rounds at least this far apart: each one after a few more full checks of both processes.
ROUND_GAP = 4 * LOOKAHEAD_SECONDS
# Liveness bound for the deliveries: one claim of the killed process expiring (32 s,
# ``testsupport/all_stores.gateway_args``) and the retries after it.
DELIVERIES_WAIT = 60.0


@pytest.fixture
def webhooks() -> Iterator[Receiver]:
    """A second loopback receiver: the stores' Greenfield webhooks."""
    r = start_receiver()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture
def stores(
    devnet: Devnet, tmp_path: Path, receiver: Receiver, webhooks: Receiver
) -> Iterator[AllStores]:
    """A migrated PostgreSQL database and the three stores on processes A and B; the
    processes are ended by PID and the database dropped however the test ends."""
    database = migrated_postgresql()
    try:
        with AllStores(
            devnet,
            tmp_path,
            database,
            callback_url=receiver.url,
            webhook_url=webhooks.url,
            lookahead=LOOKAHEAD,
        ) as made:
            yield made
    finally:
        drop_pg_database(database)


def amount_of(round_no: int, n: int) -> int:
    """A distinct amount per payment (a mix-up of two requests shows)."""
    return (100 * round_no + n + 1) * XMR // 10_000


def requests(mix: AllStores, round_no: int, makers: list[Gateway]) -> list[Payment]:
    """A request of each store (the n-th made through ``makers[n % len(makers)]``)."""
    return [
        mix.request(store, amount_of(round_no, n), round_no, makers[n % len(makers)])
        for n, store in enumerate(mix.stores)
    ]


def invoices(mix: AllStores, round_no: int, makers: list[Gateway]) -> list[Payment]:
    """A Greenfield invoice of each store."""
    return [
        mix.invoice(store, amount_of(round_no, 10 + n), round_no, makers[n % len(makers)])
        for n, store in enumerate(mix.stores)
    ]


def pause_until(at: float) -> None:
    """Sleep until ``at`` (monotonic): the full checks go on meanwhile."""
    time.sleep(max(at - time.monotonic(), 0.0))


def test_every_kind_of_store_on_two_processes_is_paid_through_many_checks_a_reorg_and_a_kill(
    stores: AllStores, devnet: Devnet, receiver: Receiver, webhooks: Receiver
) -> None:
    """Four rounds to all three stores over some 15 full lookahead checks of each process,
    A killed in round 2 and round 3 reorged: every payment credited and complete on both
    processes, every callback and webhook event once, no sync tick failed."""
    mix = stores
    a, b = mix.a, mix.b
    started = time.monotonic()
    default, account, own = mix.stores

    # Round 1: requests made through A and B, invoices through B and A.
    first = requests(mix, 1, [a, b]) + invoices(mix, 1, [b, a])
    # Each store's subaddress is where it belongs: account 0 and another account of the
    # main wallet, account 0 of the store's own wallet (unknown to the main one).
    for p in first:
        index = p.store.rpc.call("get_address_index", {"address": p.address})["index"]
        assert index["minor"] > 0, (p.store.id, index)
        assert (index["major"] > 0) == (p.store is account), (p.store.id, index)
        if p.store is own:
            with pytest.raises(DevnetError):
                mix.main_wallet.call("get_address_index", {"address": p.address})
    mix.pay(first)
    mix.wait_credited(first)
    pause_until(started + ROUND_GAP)

    # Round 2: A SIGKILLed the moment it holds both sync locks (the main wallet's and the
    # own wallet's) after the block; B alone credits every payment, A comes back.
    second = requests(mix, 2, [b, a]) + invoices(mix, 2, [a, b])
    locks = [SYNC_LOCK_KEY, own_lock_key(mix.database, own.id)]
    held: list[float | None] = []
    mix.pay(second)
    mix.kill(a, lambda gw: held.append(kill_while_syncing(gw, mix.database, locks, 5.0)))
    mix.wait_credited(second)
    back = mix.restart(a)
    pause_until(started + 2 * ROUND_GAP + back)

    # Round 3: its block replaced by two without its transaction, then paid again.
    third = requests(mix, 3, [a, b])
    mix.reorg(third)
    pause_until(started + 3 * ROUND_GAP + back)

    # Round 4: after all that, on both processes again.
    fourth = requests(mix, 4, [b, a])
    mix.pay(fourth)
    mix.wait_credited(fourth)

    mix.unlock_all()
    payments = mix.payments
    mix.wait_complete(payments)
    # Both processes say the same of every request and invoice: paid in full, complete.
    for gw in (a, b):
        for p in payments:
            assert mix.final_state(gw, p) == mix.settled_state(p), (mix.name(gw), p)

    calls_due, hooks_due = due_callbacks(payments), due_webhooks(payments)
    receiver.wait_for(
        lambda got: len(got) >= sum(calls_due.values()),
        timeout=DELIVERIES_WAIT,
        what=f"{sum(calls_due.values())} callbacks",
    )
    webhooks.wait_for(
        lambda got: len(got) >= sum(hooks_due.values()),
        timeout=DELIVERIES_WAIT,
        what=f"{sum(hooks_due.values())} webhook deliveries",
    )
    time.sleep(2.0)  # room for a duplicate to show up (waiting for an absence)
    calls, hooks = receiver.delivered(), webhooks.delivered()
    call_tally = tally(calls_due, (delivery_key(r.json) for r in calls))
    hook_tally = tally(hooks_due, (delivery_key(r.json) for r in hooks))
    assert (call_tally.duplicated, call_tally.missing) == (0, 0), call_tally
    assert (hook_tally.duplicated, hook_tally.missing) == (0, 0), hook_tally
    ids = Counter(r.headers["x-xmrgate-event-id"] for r in calls)
    assert max(ids.values()) == 1, f"event ids delivered twice: {ids.most_common(3)}"
    deliveries = Counter(r.json["deliveryId"] for r in hooks)
    assert max(deliveries.values()) == 1, f"deliveries sent twice: {deliveries.most_common(3)}"
    for p in payments:
        if p.invoice is None:
            got = events_of(calls, p.address)
            assert kinds(got) == list(p.callbacks), (p.store.id, p.round, kinds(got))
            # The reorged transaction's two, then the second payment's.
            txs = [r.json["transaction"]["tx_hash"] for r in got]
            assert txs == [p.txs[0]] * (len(got) - 2) + [p.txs[-1]] * 2, (p.store.id, txs)
            secret = p.store.callback_secret.encode()
            assert all(signature_ok(secret, r.headers["x-xmrgate-signature"], r.body) for r in got)
        else:
            got = [r for r in hooks if r.json["invoiceId"] == p.invoice]
            types = [r.json["type"] for r in got]
            assert sorted(types) == sorted(p.webhook_events), (p.store.id, p.round, types)
            assert types[-1] == "InvoiceSettled", types
            assert all(r.json["storeId"] == p.store.id for r in got)
            assert all(_signed(p.store.webhook_secret, r) for r in got), p.store.id
    # Each event made once, though A died mid-tick and B ticked on: the feed's events of
    # every request (an invoice's too: it has no callback URL, not no events) and one
    # delivery per webhook event.
    made = sum(len(PAID_AGAIN if p.reorged else PAID) for p in payments)
    assert count_rows(b, "events") == made + hook_tally.due
    assert count_rows(b, "transfers") == sum(len(p.txs) for p in payments)

    # No sync tick failed, nor went on without its lookahead check, in either process: in
    # their logs (A's before and after its kill) and in their counters (A's since its
    # restart).
    assert mix.failed_ticks() == []
    assert [mix.tick_failures_metric(gw) for gw in (a, b)] == [0.0, 0.0]

    low, mid, high = spread(mix.credit_seconds())
    stores_paid = Counter(p.store.kind for p in payments)
    print(
        f"{len(payments)} payments ({dict(stores_paid)}) over {time.monotonic() - started:.0f}s "
        f"with full lookahead checks every {LOOKAHEAD}; block to credit min/median/max "
        f"{low:.2f}/{mid:.2f}/{high:.2f}s; A killed "
        f"{'holding both sync locks' if held and held[0] is not None else 'without both locks'}"
        f", ready again in {back:.1f}s; {call_tally.once} callbacks and {hook_tally.once} "
        f"webhook deliveries once each; default {default.id}, {account.id}, {own.id}"
    )
