"""Invoices on regtest, both databases: expiry, partial, late, tolerance and overpayment,
a pool sighting before the expiry, the list with filters and pages, and the event feed
replayed after a client outage."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from tests.integration.callback_support import (
    PAYLOAD_KEYS,
    XMR,
    events_of,
    kinds,
    mine_until_unlocked,
    transfer_height,
    wait_kinds,
)
from tests.integration.receiver import Receiver
from testsupport.gateway import SYNC_WAIT, Gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

GATEWAY_ARGS = [
    "--callback-allow",
    "127.0.0.1",
    "--callback-retry-base",
    "0.5s",
    # Retries every 2 s at most: the client "outage" below must not grow the backoff long.
    "--callback-retry-max-interval",
    "2s",
]


def when(value: str) -> float:
    """Unix time of an RFC 3339 UTC timestamp of the API."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def has_status(status: str) -> Any:
    """Predicate for ``wait_status``: the request's status is ``status``."""

    def check(body: dict[str, Any]) -> bool:
        return bool(body["status"] == status)

    check.__qualname__ = f"status == {status!r}"
    return check


def create(gateway: Gateway, amount: int, **fields: Any) -> dict[str, Any]:
    """POST /receive, retrying the rare 503 of an address pool being refilled."""
    for _ in range(50):
        r = gateway.post("/receive", json={"amount": amount, **fields})
        if r.status_code != 503:
            assert r.status_code == 200, r.text
            body: dict[str, Any] = r.json()
            return body
        time.sleep(0.2)
    raise AssertionError(f"POST /receive kept answering 503: {r.text}")


def feed(gateway: Gateway, after: int = 0) -> list[dict[str, Any]]:
    """Every event after ``after``, following next_after page by page."""
    found: list[dict[str, Any]] = []
    while True:
        body = gateway.get("/events", params={"after": after, "limit": 50}).json()
        found += body["events"]
        if body["next_after"] is None:
            return found
        after = body["next_after"]


def test_expiry_while_waiting(gateway: Gateway, receiver: Receiver) -> None:
    """Nothing paid: expired at expires_at, one request.expired callback, in list and feed."""
    created = create(gateway, XMR, expires_in=2, callback_url=receiver.url, description="late")
    address = created["address"]
    assert created["status"] == "waiting" and created["due"] == XMR
    assert when(created["expires_at"]) - when(created["created_at"]) == pytest.approx(2, abs=0.5)
    [expired] = wait_kinds(receiver, address, ["request.expired"])
    body = expired.json
    assert set(body) == PAYLOAD_KEYS
    assert (body["transaction"], body["status"], body["complete"]) == (None, "expired", False)
    assert body["amount"] == {"expected": XMR, "covered": {"total": 0, "unlocked": 0}, "due": XMR}
    assert body["expires_at"] == created["expires_at"]
    assert gateway.status(address)["status"] == "expired"
    listed = gateway.get("/receive", params={"status": "expired"}).json()["requests"]
    assert address in [r["address"] for r in listed]
    mine = [e for e in feed(gateway) if e["address"] == address]
    assert [e["event"] for e in mine] == ["request.expired"]
    assert mine[0]["payload"] == body
    assert expired.headers["x-xmrgate-event-seq"] == str(mine[0]["seq"])
    time.sleep(2)
    assert len(events_of(receiver.delivered(), address)) == 1, "announced once"


def test_payment_in_time(gateway: Gateway, devnet: Devnet, receiver: Receiver) -> None:
    """Paid before expires_at: paid, then complete; never expired."""
    created = create(gateway, XMR, expires_in=3600, callback_url=receiver.url)
    address = created["address"]
    devnet.pay(address, XMR, mine_blocks=1)
    [confirmed] = wait_kinds(receiver, address, ["transfer.confirmed"])
    assert (confirmed.json["status"], confirmed.json["amount"]["due"]) == ("paid", 0)
    mine_until_unlocked(devnet, confirmed.json["transaction"]["height"])
    _, unlocked = wait_kinds(receiver, address, ["transfer.confirmed", "transfer.unlocked"])
    assert (unlocked.json["status"], unlocked.json["complete"]) == ("complete", True)
    assert gateway.status(address)["status"] == "complete"


def test_partial_then_rest(gateway: Gateway, devnet: Devnet) -> None:
    """One XMR of three: partial with two still due; the rest makes it paid."""
    created = create(gateway, 3 * XMR, expires_in=3600)
    address = created["address"]
    devnet.pay(address, XMR, mine_blocks=1)
    body = gateway.wait_status(address, has_status("partial"))
    assert body["amount"]["due"] == 2 * XMR and body["complete"] is False
    devnet.pay(address, 2 * XMR, mine_blocks=1)
    body = gateway.wait_status(address, has_status("paid"))
    assert body["amount"]["due"] == 0 and body["amount"]["covered"]["total"] == 3 * XMR


def test_payment_after_expiry_is_paid_late(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """Paid after expires_at: recorded, shown as paid_late and announced; nothing is lost."""
    created = create(gateway, XMR, expires_in=1, callback_url=receiver.url)
    address = created["address"]
    wait_kinds(receiver, address, ["request.expired"])
    tx_hash = devnet.pay(address, XMR, mine_blocks=1)
    _, confirmed = wait_kinds(receiver, address, ["request.expired", "transfer.confirmed"])
    assert confirmed.json["status"] == "paid_late"
    assert confirmed.json["transaction"]["tx_hash"] == tx_hash
    assert confirmed.json["amount"]["covered"]["total"] == XMR
    body = gateway.wait_status(address, has_status("paid_late"))
    assert [t["tx_hash"] for t in body["transactions"]] == [tx_hash]
    mine_until_unlocked(devnet, transfer_height(gateway, address, tx_hash))
    *_, unlocked = wait_kinds(
        receiver, address, ["request.expired", "transfer.confirmed", "transfer.unlocked"]
    )
    # The money is there (complete), and the status keeps saying it came late.
    assert (unlocked.json["status"], unlocked.json["complete"]) == ("paid_late", True)
    listed = gateway.get("/receive", params={"status": "paid_late"}).json()["requests"]
    assert address in [r["address"] for r in listed]


def test_tolerance_makes_underpaid_request_complete(gateway: Gateway, devnet: Devnet) -> None:
    """Paid 1000 piconero short with a tolerance of 1000: complete once unlocked."""
    created = create(gateway, XMR, underpay_tolerance=1000)
    assert created["due"] == XMR - 1000
    address = created["address"]
    tx_hash = devnet.pay(address, XMR - 1000, mine_blocks=1)
    gateway.wait_status(address, has_status("paid"))
    mine_until_unlocked(devnet, transfer_height(gateway, address, tx_hash))
    body = gateway.wait_status(address, has_status("complete"))
    assert body["complete"] is True and body["amount"]["due"] == 0
    assert body["amount"]["covered"]["unlocked"] == XMR - 1000 < body["amount"]["expected"]


def test_overpayment_is_visible(gateway: Gateway, devnet: Devnet) -> None:
    """Twice the amount: paid, with covered.total above expected and nothing due."""
    created = create(gateway, XMR, expires_in=3600)
    address = created["address"]
    devnet.pay(address, 2 * XMR, mine_blocks=1)
    body = gateway.wait_status(address, has_status("paid"))
    assert body["amount"]["covered"]["total"] == 2 * XMR > body["amount"]["expected"]
    assert body["amount"]["due"] == 0


def test_seen_in_pool_before_expiry_mined_after(gateway: Gateway, devnet: Devnet) -> None:
    """A transfer in the pool before expires_at and mined after it counts in time."""
    devnet.ensure_decoy_safe()  # so that paying below mines nothing first
    created = create(gateway, XMR, expires_in=20)
    address = created["address"]
    tx_hash = devnet.pay(address, XMR)
    body = gateway.wait_status(address, lambda b: bool(b["transactions"]))
    assert body["transactions"][0]["height"] == 0, "seen in the pool"
    assert body["status"] == "paid"
    assert time.time() < when(created["expires_at"]), "the pool sighting came before expiry"
    time.sleep(max(when(created["expires_at"]) - time.time(), 0) + 1.5)
    assert gateway.status(address)["status"] == "paid", "not expired: seen in time"
    assert tx_hash in devnet.pool_hashes(), "still unmined at the expiry"
    devnet.mine(1)
    body = gateway.wait_status(address, lambda b: b["transactions"][0]["height"] > 0)
    assert body["status"] == "paid"
    mine_until_unlocked(devnet, body["transactions"][0]["height"])
    gateway.wait_status(address, has_status("complete"))


def test_list_filters_and_pages(gateway: Gateway) -> None:
    """A few hundred requests: newest first, filters by status and time, cursor pages."""
    made = [create(gateway, 1000 + i, expires_in=1 if i % 4 == 0 else 3600) for i in range(240)]
    time.sleep(1.5)  # the short ones have expired (listed as expired, recorded or not)
    full = gateway.get("/receive", params={"limit": 500}).json()
    everything = full["requests"]
    assert len(everything) >= 240
    stamps = [(when(r["created_at"]), r["address"]) for r in everything]
    assert [s for s, _ in stamps] == sorted((s for s, _ in stamps), reverse=True)
    ours = {m["address"] for m in made}
    short = {m["address"] for i, m in enumerate(made) if i % 4 == 0}

    def walk(**params: Any) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = {**params, "limit": 37, **({"cursor": cursor} if cursor else {})}
            body = gateway.get("/receive", params=query).json()
            assert len(body["requests"]) <= 37
            rows += body["requests"]
            cursor = body["next_cursor"]
            if cursor is None:
                return rows

    assert walk() == everything
    expired = walk(status="expired")
    assert short <= {r["address"] for r in expired}
    assert not (ours - short) & {r["address"] for r in expired}
    waiting = walk(status="waiting")
    assert {r["address"] for r in waiting} & ours == ours - short
    both = walk(status=["waiting", "expired"])
    assert {r["address"] for r in both} >= ours
    assert [r["address"] for r in both] == [
        r["address"] for r in everything if r["status"] in ("waiting", "expired")
    ]
    first, last = made[50]["created_at"], made[150]["created_at"]
    window = walk(created_after=first, created_before=last)
    assert [r["address"] for r in window] == [m["address"] for m in reversed(made[51:150])]
    for row in expired[:5] + waiting[:5]:
        assert gateway.status(row["address"])["status"] == row["status"]


def test_feed_replayed_after_outage_matches_callbacks(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """A client down for a while replays GET /events from its last seq and misses nothing."""
    a = create(gateway, 2 * XMR, expires_in=3600, callback_url=receiver.url)["address"]
    b = create(gateway, XMR, expires_in=3600)["address"]  # no callback_url: feed only
    devnet.pay(a, XMR, mine_blocks=1)
    [first] = wait_kinds(receiver, a, ["transfer.confirmed"])
    last_seq = int(first.headers["x-xmrgate-event-seq"])

    # The client goes down: every callback now fails (and is retried later).
    receiver.responses = [503] * 10_000
    tx2 = devnet.pay_many([(a, XMR), (b, XMR)], mine_blocks=1)
    gateway.wait_status(a, has_status("paid"))
    mine_until_unlocked(devnet, transfer_height(gateway, a, tx2))
    gateway.wait_status(a, has_status("complete"))
    gateway.wait_status(b, has_status("complete"))

    # Back up: replay first, from the last seq processed.
    replayed = feed(gateway, after=last_seq)
    mine = [e for e in replayed if e["address"] == a]
    # tx2 confirmed, both unlocked (tx1 may unlock first: paying can mine blocks).
    assert sorted(e["event"] for e in mine) == [
        "transfer.confirmed",
        "transfer.unlocked",
        "transfer.unlocked",
    ]
    assert [e["event"] for e in replayed if e["address"] == b] == [
        "transfer.confirmed",
        "transfer.unlocked",
    ]
    seqs = [e["seq"] for e in replayed]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # Then the callbacks catch up; each one is the feed's event of the same seq.
    receiver.responses = []
    receiver.wait_for(
        lambda d: len(events_of(d, a)) == 1 + len(mine),
        timeout=SYNC_WAIT,
        what="the callbacks held back by the outage",
    )
    late = events_of(receiver.delivered(), a)[1:]
    assert kinds(late) == [e["event"] for e in mine]
    for callback, event in zip(late, mine, strict=True):
        assert int(callback.headers["x-xmrgate-event-seq"]) == event["seq"]
        assert callback.json == event["payload"]
    assert not events_of(receiver.attempts, b), "no callback_url, no callback"
