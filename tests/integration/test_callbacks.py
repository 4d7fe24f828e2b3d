"""Durable, signed callbacks with retries, against real receivers on loopback,
the real regtest wallet and both databases."""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any

import pytest

from tests.integration.callback_support import (
    PAYLOAD_KEYS,
    SYNC_WAIT,
    TRANSACTION_KEYS,
    UNLOCK_BLOCKS,
    XMR,
    all_delivered,
    callbacks,
    events_of,
    kinds,
    mine_until_unlocked,
    signature_ok,
    transfer_height,
    wait_callbacks,
    wait_kinds,
)
from tests.integration.receiver import Receiver, start_receiver
from testsupport.gateway import Gateway, count_rows
from testsupport.processes import wait_until
from xmrgate import __version__
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

SECRET = "s3cret"
RETRY_BASE = 0.5
CALLBACK_TIMEOUT = 2.0
# The receivers listen on loopback, an internal address the gateway calls only if allowed.
GATEWAY_ARGS = [
    "--callback-allow",
    "127.0.0.1",
    "--callback-retry-base",
    f"{RETRY_BASE}s",
    "--callback-secret",
    SECRET,
    "--callback-timeout",
    f"{CALLBACK_TIMEOUT:g}s",
]
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def when(value: str) -> datetime:
    """Parse an RFC 3339 UTC timestamp of the API."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def check_payload(body: dict[str, Any], address: str, created: dict[str, Any]) -> None:
    """A callback body has the spec's fields plus ``event`` and ``address``, typed."""
    assert set(body) == PAYLOAD_KEYS
    assert body["address"] == address
    assert body["description"] == created["description"]
    assert body["created_at"] == created["created_at"]
    assert set(body["amount"]) == {"expected", "covered", "due"}
    assert body["expires_at"] is None  # made without expires_in: never expires
    assert body["status"] in {"waiting", "partial", "paid", "complete"}
    assert set(body["amount"]["covered"]) == {"total", "unlocked"}
    assert body["amount"]["expected"] == created["amount"]
    assert type(body["complete"]) is bool
    tx = body["transaction"]
    assert set(tx) == TRANSACTION_KEYS
    for key in ("amount", "confirmations", "fee", "height", "unlock_time"):
        assert type(tx[key]) is int, key
    assert type(tx["double_spend_seen"]) is bool and type(tx["locked"]) is bool
    assert RFC3339.match(tx["timestamp"])
    assert re.fullmatch(r"[0-9a-f]{64}", tx["tx_hash"])


def test_fast_payer_gets_confirmed_then_unlocked(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """A payment mined in the very next block: confirmed then unlocked, with full payloads."""
    created = gateway.receive(
        XMR, description="fast payer", callback_url=receiver.url + "?order=42&t=x"
    )
    address = created["address"]
    tx_hash = devnet.pay(address, XMR, mine_blocks=1)
    top = devnet.height() - 1
    [confirmed] = wait_kinds(receiver, address, ["transfer.confirmed"])
    assert confirmed.json["transaction"]["height"] == top, "mined in the block right after paying"

    mine_until_unlocked(devnet, top)
    confirmed, unlocked = wait_kinds(receiver, address, ["transfer.confirmed", "transfer.unlocked"])
    assert confirmed.at <= unlocked.at

    c, u = confirmed.json, unlocked.json
    for body in (c, u):
        check_payload(body, address, created)
        assert body["transaction"]["tx_hash"] == tx_hash
        assert body["transaction"]["amount"] == XMR
        assert body["transaction"]["height"] == top
        assert body["transaction"]["fee"] > 0
        assert body["transaction"]["unlock_time"] == 0
        assert body["transaction"]["double_spend_seen"] is False
    assert c["event"] == "transfer.confirmed"
    assert c["amount"] == {"expected": XMR, "covered": {"total": XMR, "unlocked": 0}, "due": 0}
    assert c["complete"] is False
    assert c["transaction"]["locked"] is True and c["transaction"]["confirmations"] >= 1
    assert u["event"] == "transfer.unlocked"
    assert u["amount"] == {
        "expected": XMR,
        "covered": {"total": XMR, "unlocked": XMR},
        "due": 0,
    }
    assert u["complete"] is True
    assert u["transaction"]["locked"] is False and u["transaction"]["confirmations"] >= 10

    # The receiver has both; the gateway marks an event delivered once it has the answer.
    listed = wait_callbacks(gateway, address, all_delivered(2), what="both events delivered")
    for r, entry in zip((confirmed, unlocked), listed, strict=True):
        assert r.path == "/callback?order=42&t=x", "the callback URL's query string is kept"
        assert r.headers["content-type"] == "application/json"
        assert r.headers["user-agent"] == f"xmrgate/{__version__}"
        assert r.headers["x-xmrgate-event"] == r.json["event"]
        assert r.headers["x-xmrgate-event-id"] == entry["id"]
        assert entry["event"] == r.json["event"] and entry["tx_hash"] == tx_hash
        assert entry["status"] == "delivered" and entry["attempts"] == 1
        assert entry["last_status"] == 200 and entry["next_attempt_at"] is None
    assert confirmed.headers["x-xmrgate-event-id"] != unlocked.headers["x-xmrgate-event-id"]
    assert len(receiver.attempts) == 2, "each event is delivered once"


def test_two_partial_payments_report_running_totals(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """Each callback of a two-part payment carries the totals at its moment; the last equals GET."""
    created = gateway.receive(3 * XMR, description="two parts", callback_url=receiver.url)
    address = created["address"]
    tx1 = devnet.pay(address, 1 * XMR, mine_blocks=1)
    wait_kinds(receiver, address, ["transfer.confirmed"])
    tx2 = devnet.pay(address, 2 * XMR, mine_blocks=1)
    amounts = {tx1: 1 * XMR, tx2: 2 * XMR}
    h1, h2 = (transfer_height(gateway, address, tx) for tx in (tx1, tx2))
    assert h2 > h1, "tx2 was sent after tx1 was mined"

    # Partly unlocked, always: tx1 at 10 confirmations, tx2 still below.
    mine_until_unlocked(devnet, h1)
    assert devnet.height() < h2 + UNLOCK_BLOCKS
    receiver.wait_for(
        lambda d: any(
            r.json["event"] == "transfer.unlocked" and r.json["transaction"]["tx_hash"] == tx1
            for r in events_of(d, address)
        ),
        timeout=SYNC_WAIT,
        what="the unlocked callback of the first part",
    )
    # (If pay() had to mine 10 blocks before sending tx2, tx1 unlocked before tx2 was
    # confirmed: the total then is 1 XMR. The running totals are checked below.)
    [first_unlock] = [
        r
        for r in events_of(receiver.delivered(), address)
        if r.json["event"] == "transfer.unlocked"
    ]
    assert first_unlock.json["transaction"]["tx_hash"] == tx1
    assert first_unlock.json["amount"]["covered"]["unlocked"] == 1 * XMR
    assert first_unlock.json["complete"] is False

    mine_until_unlocked(devnet, h2)
    receiver.wait_for(
        lambda d: len(events_of(d, address)) >= 4,
        timeout=SYNC_WAIT,
        what="4 callbacks (2 confirmed, 2 unlocked)",
    )
    got = events_of(receiver.delivered(), address)
    assert len(got) == 4, kinds(got)
    assert kinds(got).count("transfer.confirmed") == 2
    assert kinds(got).count("transfer.unlocked") == 2

    confirmed: set[str] = set()
    unlocked: set[str] = set()
    for r in got:
        body = r.json
        check_payload(body, address, created)
        tx = body["transaction"]["tx_hash"]
        if body["event"] == "transfer.confirmed":
            confirmed.add(tx)
        else:
            assert tx in confirmed, "unlocked never before confirmed"
            unlocked.add(tx)
        expected_total = sum(amounts[t] for t in confirmed)
        expected_unlocked = sum(amounts[t] for t in unlocked)
        assert body["amount"]["covered"] == {
            "total": expected_total,
            "unlocked": expected_unlocked,
        }, body["event"]
        assert body["complete"] is (expected_unlocked >= 3 * XMR)
    assert got[0].json["amount"]["covered"]["total"] == 1 * XMR
    final = gateway.status(address)
    assert final["amount"] == got[-1].json["amount"]
    assert final["complete"] is got[-1].json["complete"] is True


def test_receiver_500_twice_then_200(gateway: Gateway, devnet: Devnet, receiver: Receiver) -> None:
    """Two 500 answers are retried with backoff; the third try delivers and the list says so."""
    receiver.responses = [500, 500]
    address = gateway.receive(XMR, callback_url=receiver.url)["address"]
    devnet.pay(address, XMR, mine_blocks=1)
    receiver.wait_for(
        lambda d: len(events_of(d, address)) == 1,
        timeout=SYNC_WAIT,
        what="the callback delivered on the third try",
    )
    tries = [r for r in receiver.attempts if r.json["address"] == address]
    assert [r.answered for r in tries] == [500, 500, 200]
    assert len({r.headers["x-xmrgate-event-id"] for r in tries}) == 1, "one event, one id"
    # Backoff: ~0.5 s then ~1 s (+-20 % jitter).
    assert tries[1].at - tries[0].at >= RETRY_BASE * 0.8 - 0.05
    assert tries[2].at - tries[1].at >= 2 * RETRY_BASE * 0.8 - 0.05
    [entry] = wait_callbacks(gateway, address, all_delivered(1), what="the event delivered")
    assert entry["attempts"] == 3
    assert entry["last_status"] == 200 and entry["last_error"] is None
    assert entry["id"] == tries[0].headers["x-xmrgate-event-id"]
    assert entry["delivered_at"] is not None and entry["next_attempt_at"] is None


def test_receiver_down_backs_off_then_manual_retry_delivers(
    gateway: Gateway, devnet: Devnet
) -> None:
    """With nothing listening, tries come with ~doubling gaps; POST .../retry redelivers at once."""
    # The receiver's port is held (nobody else can take it) but refuses connections
    # until listen(): it is down, then back at the same URL.
    receiver = start_receiver(listening=False)
    try:
        address = gateway.receive(XMR, callback_url=receiver.url)["address"]
        devnet.pay(address, XMR, mine_blocks=1)

        # The API shows the latest try and the next one's time; each try is visible until
        # the next (>= 0.4 s). Should a slow poll miss one, watch the following ones.
        gaps: dict[int, float] = {}
        entry: dict[str, Any] = {}
        waited = SYNC_WAIT + 20  # the first callback, then tries up to ~10 s apart
        deadline = time.monotonic() + waited
        while not any(all(n + i in gaps for i in range(4)) for n in gaps):
            assert time.monotonic() < deadline, (
                f"timed out after {waited:g}s waiting to see 4 consecutive failed tries; "
                f"gaps seen {gaps}; last entry {entry}"
            )
            listed = callbacks(gateway, address)
            if listed and listed[0]["attempts"] and listed[0]["attempts"] not in gaps:
                entry = listed[0]
                assert entry["status"] == "pending" and entry["last_status"] is None, entry
                assert "connect" in (entry["last_error"] or "").lower(), entry["last_error"]
                gap = when(entry["next_attempt_at"]) - when(entry["last_attempt_at"])
                gaps[entry["attempts"]] = gap.total_seconds()
            time.sleep(0.02)
        for n, gap in gaps.items():
            nominal = RETRY_BASE * 2 ** (n - 1)
            assert nominal * 0.8 - 0.01 <= gap <= nominal * 1.2 + 0.01, (n, gaps)
            if n - 1 in gaps:
                assert 1.3 <= gap / gaps[n - 1] <= 3.1, gaps
        # The next scheduled try is >= 3.2 s away: a delivery before it is the manual retry.
        tries, event_id = entry["attempts"], entry["id"]
        scheduled = when(entry["next_attempt_at"]).timestamp()
        receiver.listen()
        r = gateway.post(f"/receive/{address}/callbacks/{event_id}/retry")
        assert r.status_code == 202, r.text
        assert r.json()["id"] == event_id and r.json()["status"] == "pending"
        receiver.wait_for(lambda d: len(d) == 1, timeout=10, what="the manual retry")
        [delivered] = receiver.delivered()
        assert delivered.at < scheduled, "delivered by the scheduled try, not the manual retry"
        assert delivered.headers["x-xmrgate-event-id"] == event_id
        [entry] = wait_callbacks(gateway, address, all_delivered(1), what="the event delivered")
        assert entry["attempts"] == tries + 1 and entry["last_status"] == 200, entry

        # A delivered event can be sent again on request, under the same id.
        assert gateway.post(f"/receive/{address}/callbacks/{event_id}/retry").status_code == 202
        receiver.wait_for(lambda d: len(d) == 2, timeout=10, what="the second manual retry")
        assert {r.headers["x-xmrgate-event-id"] for r in receiver.delivered()} == {event_id}
        assert receiver.delivered()[0].body == receiver.delivered()[1].body
    finally:
        receiver.close()
    unknown = gateway.post(f"/receive/{address}/callbacks/{'0' * 36}/retry")
    assert unknown.status_code == 404


def test_hanging_receiver_does_not_delay_others(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """A receiver that never answers in time does not hold up another request's callback."""
    receiver.hang_seconds = 5 * CALLBACK_TIMEOUT
    fast = start_receiver()
    try:
        slow_address = gateway.receive(XMR, callback_url=receiver.url)["address"]
        fast_address = gateway.receive(XMR, callback_url=fast.url)["address"]
        # One transaction, one block: both events are written by the same tick, the slow
        # request's first (lower subaddress index).
        devnet.pay_many([(slow_address, XMR // 10), (fast_address, XMR // 10)], mine_blocks=1)
        fast.wait_for(lambda d: len(d) == 1, timeout=SYNC_WAIT, what="the fast callback")
        assert receiver.attempts == [], "the slow receiver is still hanging"
        # The fast receiver has answered; the gateway records that a moment later.
        [quick] = wait_callbacks(gateway, fast_address, all_delivered(1), what="fast delivered")
        [slow] = callbacks(gateway, slow_address)
        assert slow["status"] == "pending", slow
        # Had the slow delivery held the worker up, the fast one would have waited for its
        # timeout (CALLBACK_TIMEOUT); well under that, it did not.
        lag = when(quick["delivered_at"]) - when(slow["created_at"])
        assert lag.total_seconds() < CALLBACK_TIMEOUT * 0.75, (slow, quick)
        # The slow one times out, is retried, and gets through once the receiver answers.
        # Its first try must be hanging before the receiver is told to answer: on a busy
        # machine the try may reach the receiver after the fast callback was delivered.
        wait_until(
            "the slow callback's first try to reach its receiver",
            lambda: (receiver.arrivals >= 1, receiver.arrivals),
            timeout=SYNC_WAIT,
        )
        receiver.hang_seconds = 0
        [slow] = wait_callbacks(
            gateway, slow_address, all_delivered(1), timeout=SYNC_WAIT, what="slow delivered"
        )
        assert slow["attempts"] >= 2
    finally:
        fast.close()


def test_signature_verifies_with_shared_secret(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """X-Xmrgate-Signature is HMAC-SHA256 over "<t>.<body>" with the secret; others fail."""
    address = gateway.receive(XMR, callback_url=receiver.url)["address"]
    devnet.pay(address, XMR, mine_blocks=1)
    [r] = wait_kinds(receiver, address, ["transfer.confirmed"])
    header = r.headers["x-xmrgate-signature"]
    timestamp = int(header.split(",")[0].removeprefix("t="))
    assert abs(time.time() - timestamp) < 60
    assert signature_ok(SECRET.encode(), header, r.body)
    assert not signature_ok(b"wrong secret", header, r.body)
    assert not signature_ok(SECRET.encode(), header, r.body.replace(b"}", b" }", 1))
    assert not signature_ok(SECRET.encode(), f"t={timestamp + 1}," + header.split(",")[1], r.body)


def test_sigkill_with_pending_callback_delivers_after_restart(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    """A crash with an undelivered event loses nothing: same event id, no duplicate rows."""
    receiver.responses = [500] * 10_000
    address = gateway.receive(2 * XMR, callback_url=receiver.url)["address"]
    transfers_before = count_rows(gateway, "transfers")
    tx_hash = devnet.pay(address, 2 * XMR, mine_blocks=1)
    [entry] = wait_callbacks(
        gateway,
        address,
        lambda cs: len(cs) == 1 and cs[0]["attempts"] >= 1,
        what="a first (refused with 500) try",
    )
    assert entry["status"] == "pending" and entry["last_status"] == 500
    event_id = entry["id"]
    events_before = count_rows(gateway, "events")
    assert count_rows(gateway, "transfers") == transfers_before + 1

    gateway.kill()
    receiver.responses.clear()
    gateway.start()

    # A claim held by the killed process expires after timeout + 30 s.
    receiver.wait_for(
        lambda d: len(events_of(d, address)) >= 1,
        timeout=SYNC_WAIT,
        what="the event delivered by the restarted gateway",
    )
    [delivered] = events_of(receiver.delivered(), address)
    assert delivered.headers["x-xmrgate-event-id"] == event_id, "event id stable across restart"
    [entry] = wait_callbacks(gateway, address, all_delivered(1), what="the event delivered")
    assert entry["id"] == event_id and entry["attempts"] >= 2
    assert count_rows(gateway, "transfers") == transfers_before + 1, "no duplicate transfer"
    assert count_rows(gateway, "events") == events_before, "no duplicate event"
    status = gateway.status(address)
    assert status["amount"]["covered"] == {"total": 2 * XMR, "unlocked": 0}
    assert [t["tx_hash"] for t in status["transactions"]] == [tx_hash]

    # The restarted gateway goes on: the unlock is announced once.
    mine_until_unlocked(devnet, status["transactions"][0]["height"])
    wait_kinds(receiver, address, ["transfer.confirmed", "transfer.unlocked"])
    assert count_rows(gateway, "transfers") == transfers_before + 1
    assert [c["event"] for c in callbacks(gateway, address)] == [
        "transfer.confirmed",
        "transfer.unlocked",
    ]
