"""``SqlRefundStore`` on SQLite and PostgreSQL: refunds scoped by store, the money they
reserve (never more than the request received in mined transfers, not even under 20
concurrent creates), one winner of every race, one event per claim, send and
confirmation, and the sync's view of events blind to refund events."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.outbox import insert_events, last_event_kinds
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.refunds import SqlRefundStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.tables import events, payment_requests, transfers
from xmrgate.domain.errors import AlreadyExists, NotFound
from xmrgate.domain.ledger import TransferState
from xmrgate.domain.records import PaymentRequest
from xmrgate.domain.refunds import (
    NewRefund,
    Refund,
    RefundEventKind,
    RefundStatus,
    RefundTooLarge,
    new_claim_token,
    new_refund_id,
    refund_event_payload,
    token_digest,
)
from xmrgate.domain.stores import DEFAULT_STORE, Store

NOW = datetime(2026, 11, 26, 12, 0, 0, 250000, tzinfo=UTC)
DAY = timedelta(days=1)
LATER = NOW + timedelta(minutes=5)
CALLBACK = "https://shop.example/cb"
TX1, TX2, TX3 = "a1" * 32, "b2" * 32, "c3" * 32
C, U = TransferState.CONFIRMED, TransferState.UNLOCKED


async def _request(
    db: Database, index: int, *, store: str = DEFAULT_STORE, callback: str | None = CALLBACK
) -> PaymentRequest:
    return await PaymentStore(db, store).create(
        address=f"8Ref{store[:4]}{index:03d}",
        subaddr_index=index,
        amount=10**12,
        description="",
        callback_url=callback,
        return_url=None,
    )


async def _transfer(
    db: Database, request: PaymentRequest, n: int, amount: int, state: TransferState
) -> None:
    async with db.write() as conn:
        await conn.execute(
            insert(transfers).values(
                tx_hash=f"{n:064x}",
                subaddr_index=request.subaddr_index,
                request_id=request.id,
                amount=amount,
                fee=0,
                height=0 if state is TransferState.POOL else 100 + n,
                timestamp=1_700_000_000,
                unlock_time=0,
                double_spend_seen=False,
                state=state.value,
                updated_at=utcnow(),
            )
        )


async def _paid(db: Database, index: int, amount: int, **options: Any) -> PaymentRequest:
    """A request that received ``amount`` in one mined transfer."""
    request = await _request(db, index, **options)
    await _transfer(db, request, index, amount, U)
    return request


def _new(
    request: PaymentRequest, amount: int, *, at: datetime = NOW, life: timedelta = DAY, **kw: Any
) -> NewRefund:
    return NewRefund(
        id=new_refund_id(),
        request_id=request.id,
        amount=amount,
        reason="returned",
        token_digest=kw.pop("digest", None) or token_digest(new_claim_token()),
        created_at=at,
        expires_at=at + life,
        **kw,
    )


async def _refunded(db: Database, request: PaymentRequest) -> int:
    async with db.read() as conn:
        query = select(payment_requests.c.refunded).where(payment_requests.c.id == request.id)
        return int((await conn.execute(query)).scalar_one())


async def _events(db: Database) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = await conn.execute(select(events).order_by(events.c.seq))
        return [dict(r) for r in rows.mappings()]


async def _other_store(db: Database) -> None:
    await SqlStores(db).insert(Store(id="shop", name="Shop", account_index=1))


def test_create_get_list_and_for_request(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        request = await _paid(db, 1, 1000)
        price = {"amount": "5.00", "currency": "EUR"}
        first = await repo.create(_new(request, 100, at=NOW, price=price), NOW)
        second = await repo.create(_new(request, 200, at=NOW + timedelta(seconds=1)), NOW)
        third = await repo.create(_new(request, 300, at=NOW + timedelta(seconds=2)), NOW)
        claimed = await repo.claim(first.id, "4Customer", NOW)
        async with db.read() as conn:
            row = (
                await conn.execute(select(events.c.kind).where(events.c.request_id == request.id))
            ).all()
        return {
            "made": (first, second, third),
            "read": await repo.get(first.id),
            "claimed": claimed,
            "all": [r.id for r in await repo.listing(None, 10)],
            "open": [r.id for r in await repo.listing(RefundStatus.OPEN, 10)],
            "limited": [r.id for r in await repo.listing(None, 2)],
            "of_request": [r.id for r in await repo.for_request(request.id)],
            "refundable": await repo.refundable(request.address),
            "unknown": (await repo.get("rf_nope"), await repo.refundable("8Nope")),
            "events": row,
            "request": request,
        }

    got = on_database(scenario)
    first, second, third = got["made"]
    request = got["request"]
    assert first.status is RefundStatus.OPEN and first.request_address == request.address
    assert first.store_id == DEFAULT_STORE and first.price == {"amount": "5.00", "currency": "EUR"}
    claimed = got["claimed"]
    assert claimed is not None and got["read"] == claimed
    assert claimed.status is RefundStatus.CLAIMED and claimed.claim_address == "4Customer"
    assert claimed.claimed_at == NOW and claimed.created_at == NOW
    assert claimed.expires_at == NOW + DAY and claimed.price == first.price
    assert got["all"] == [first.id, third.id, second.id]  # claimed first, then newest
    assert got["open"] == [third.id, second.id]
    assert got["limited"] == [first.id, third.id]
    assert got["of_request"] == [first.id, second.id, third.id]
    assert got["refundable"] == (request.id, 1000, 600)
    assert got["unknown"] == (None, None)
    assert got["events"] == [(RefundEventKind.CLAIMED.value,)]


def test_another_stores_repository_sees_and_changes_nothing(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        await _other_store(db)
        mine, theirs = SqlRefundStore(db, DEFAULT_STORE), SqlRefundStore(db, "shop")
        request = await _paid(db, 1, 1000)
        digest = token_digest(new_claim_token())
        made = await mine.create(_new(request, 400, digest=digest), NOW)
        claimable = await mine.create(_new(request, 100), NOW)
        with pytest.raises(NotFound):
            await theirs.create(_new(request, 1), NOW)
        seen: dict[str, Any] = {
            "get": await theirs.get(made.id),
            "listing": await theirs.listing(None, 10),
            "for_request": await theirs.for_request(request.id),
            "refundable": await theirs.refundable(request.address),
            "claim": await theirs.claim(claimable.id, "4Thief", NOW),
            "cancel": await theirs.cancel(made.id, NOW),
            "expire_due": await theirs.expire_due(NOW + 2 * DAY),
        }
        await mine.claim(made.id, "4Customer", NOW)
        seen["start_sending"] = await theirs.start_sending(made.id)
        seen["mark_sent"] = await theirs.mark_sent(
            made.id,
            tx_hash_list=[TX1],
            fee=None,
            tx_key=None,
            payout_id=None,
            manual=True,
            now=NOW,
        )
        await theirs.send_failed(made.id, "not yours")
        seen["by_token"] = await theirs.by_token(digest)
        seen["after"] = await mine.get(made.id), await mine.get(claimable.id)
        seen["refunded"] = await _refunded(db, request)
        seen["event_stores"] = [e["store_id"] for e in await _events(db)]
        return seen

    seen = on_database(scenario)
    for name in ("get", "refundable", "claim", "cancel", "start_sending", "mark_sent"):
        assert seen[name] is None, name
    assert seen["listing"] == [] and seen["for_request"] == [] and seen["expire_due"] == 0
    made, claimable = seen["after"]
    assert made.status is RefundStatus.CLAIMED and made.error is None
    assert claimable.status is RefundStatus.OPEN
    # The public claim page finds a refund of any store, and learns which.
    assert seen["by_token"] == made and seen["by_token"].store_id == DEFAULT_STORE
    assert seen["refunded"] == 500
    assert seen["event_stores"] == [DEFAULT_STORE]


def test_a_request_refunds_exactly_what_it_received_in_mined_transfers(
    on_database: Any,
) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        request = await _request(db, 1)
        await _transfer(db, request, 1, 600, C)
        await _transfer(db, request, 2, 400, U)
        await _transfer(db, request, 3, 5000, TransferState.POOL)  # may vanish
        await _transfer(db, request, 4, 7000, TransferState.GONE)  # vanished
        got: dict[str, Any] = {"before": await repo.refundable(request.address)}
        with pytest.raises(RefundTooLarge) as too_large:
            await repo.create(_new(request, 1001), NOW)
        got["message"] = too_large.value.message
        whole = await repo.create(_new(request, 1000), NOW)
        with pytest.raises(RefundTooLarge) as one_more:
            await repo.create(_new(request, 1), NOW)
        got["one_more"] = one_more.value.message
        got["full"] = await repo.refundable(request.address)
        got["cancelled"] = await repo.cancel(whole.id, NOW)
        got["after_cancel"] = await _refunded(db, request)
        # An open refund whose link expired holds its money until the next create frees it.
        lapsing = await repo.create(_new(request, 999, life=timedelta(minutes=1)), NOW)
        later = NOW + timedelta(minutes=2)
        got["small"] = await repo.create(_new(request, 2, at=later), later)
        got["lapsed"] = await repo.get(lapsing.id)
        got["after_expiry"] = await _refunded(db, request)
        with pytest.raises(RefundTooLarge):
            await repo.create(_new(request, 999), later)
        got["last"] = await repo.create(_new(request, 998, at=later), later)
        got["end"] = await _refunded(db, request)
        return got

    got = on_database(scenario)
    request_id = got["before"][0]
    assert got["before"] == (request_id, 1000, 0)
    assert "1001 piconero" in got["message"] and "received 1000 piconero" in got["message"]
    assert "0 piconero of it is already refunded" in got["message"]
    assert "1000 piconero of it is already refunded (0 left)" in got["one_more"]
    assert got["full"] == (request_id, 1000, 1000)
    assert got["cancelled"].status is RefundStatus.CANCELLED
    assert got["cancelled"].cancelled_at == NOW and got["after_cancel"] == 0
    assert got["lapsed"].status is RefundStatus.EXPIRED
    assert got["small"].amount == 2 and got["after_expiry"] == 2
    assert got["last"].amount == 998 and got["end"] == 1000


def test_a_refund_that_breaks_a_constraint_writes_nothing(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[int, list[Refund]]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        request = await _paid(db, 1, 1000)
        digest = token_digest(new_claim_token())
        await repo.create(_new(request, 100, digest=digest), NOW)
        with pytest.raises(AlreadyExists):  # the same token digest: the reservation too
            await repo.create(_new(request, 200, digest=digest), NOW)
        return await _refunded(db, request), await repo.for_request(request.id)

    refunded, made = on_database(scenario)
    assert refunded == 100 and [r.amount for r in made] == [100]


def test_concurrent_creates_reserve_only_what_fits(on_database: Any) -> None:
    """20 creates at once, each on its own pooled connection, for money that 7 fit."""

    async def scenario(db: Database) -> tuple[list[Any], int, int]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        request = await _paid(db, 1, 5000)
        results = await asyncio.gather(
            *(repo.create(_new(request, 700), NOW) for _ in range(20)), return_exceptions=True
        )
        stored = await repo.for_request(request.id)
        return results, await _refunded(db, request), sum(r.amount for r in stored)

    results, refunded, stored = on_database(scenario)
    winners = [r for r in results if isinstance(r, Refund)]
    losers = [r for r in results if isinstance(r, RefundTooLarge)]
    assert len(winners) == 7 and len(losers) == 13, results
    assert refunded == stored == sum(r.amount for r in winners) == 4900


def test_racing_claims_and_sends_have_one_winner(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        request = await _paid(db, 1, 1000)
        plain = await repo.create(_new(request, 100), NOW)
        moved = await repo.create(_new(request, 200), NOW)
        claims = await asyncio.gather(
            repo.claim(plain.id, "4First", NOW), repo.claim(plain.id, "4Second", NOW)
        )
        await repo.claim(moved.id, "4Customer", NOW)
        sends = await asyncio.gather(repo.start_sending(plain.id), repo.start_sending(plain.id))
        # A fiat refund converted now: the reservation moves once, by the winner.
        resized = await asyncio.gather(
            repo.start_sending(moved.id, 250), repo.start_sending(moved.id, 250)
        )
        return {
            "claims": claims,
            "sends": sends,
            "resized": resized,
            "refunded": await _refunded(db, request),
            "claimed_events": [e["kind"] for e in await _events(db)],
        }

    got = on_database(scenario)
    claim_winners = [c for c in got["claims"] if c is not None]
    assert len(claim_winners) == 1 and claim_winners[0].status is RefundStatus.CLAIMED
    send_winners = [s for s in got["sends"] if s is not None]
    assert len(send_winners) == 1 and send_winners[0].status is RefundStatus.SENDING
    resized = [s for s in got["resized"] if s is not None]
    assert len(resized) == 1 and resized[0].amount == 250
    assert got["refunded"] == 350
    assert got["claimed_events"] == [RefundEventKind.CLAIMED.value] * 2


def test_sent_and_confirmed_each_add_one_event(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        request = await _paid(db, 1, 1000)
        made = await repo.create(_new(request, 300), NOW)
        claimed = await repo.claim(made.id, "4Customer", NOW)
        not_manual = await repo.mark_sent(
            made.id,
            tx_hash_list=[TX1],
            fee=1,
            tx_key=None,
            payout_id=None,
            manual=False,
            now=NOW,
        )  # a claimed refund is sent by hand only
        await repo.start_sending(made.id)
        sent = await repo.mark_sent(
            made.id,
            tx_hash_list=[TX1, TX2],
            fee=12,
            tx_key=None,
            payout_id=7,
            manual=False,
            now=LATER,
        )
        again = await repo.mark_sent(
            made.id,
            tx_hash_list=[TX3],
            fee=1,
            tx_key=None,
            payout_id=None,
            manual=False,
            now=LATER,
        )
        waiting = await repo.awaiting_confirmation()
        confirmed = await repo.mark_confirmed(made.id, LATER + DAY)
        twice = await repo.mark_confirmed(made.id, LATER + DAY)
        return {
            "claimed": claimed,
            "not_manual": not_manual,
            "sent": sent,
            "again": again,
            "waiting": waiting,
            "confirmed": confirmed,
            "twice": twice,
            "events": await _events(db),
            "request": request,
            "refunded": await _refunded(db, request),
        }

    got = on_database(scenario)
    sent, confirmed = got["sent"], got["confirmed"]
    assert got["not_manual"] is None and got["again"] is None and got["twice"] is None
    assert sent.status is RefundStatus.SENT and sent.tx_hash_list == (TX1, TX2)
    assert (sent.fee, sent.payout_id, sent.manual, sent.sent_at) == (12, 7, False, LATER)
    assert got["waiting"] == [sent]
    assert confirmed.status is RefundStatus.CONFIRMED
    assert confirmed.confirmed_at == LATER + DAY
    assert got["refunded"] == 300  # sent and confirmed money stays refunded
    rows = got["events"]
    assert [(e["kind"], e["tx_hash"]) for e in rows] == [
        (RefundEventKind.CLAIMED.value, ""),
        (RefundEventKind.SENT.value, TX1),
        (RefundEventKind.CONFIRMED.value, TX1),
    ]
    for row in rows:
        assert row["store_id"] == DEFAULT_STORE and row["callback_url"] == CALLBACK
        assert row["request_id"] == got["request"].id and row["status"] == "pending"
    expected = [
        refund_event_payload(got["claimed"], RefundEventKind.CLAIMED, NOW),
        refund_event_payload(sent, RefundEventKind.SENT, LATER),
        refund_event_payload(confirmed, RefundEventKind.CONFIRMED, LATER + DAY),
    ]
    assert [json.loads(e["payload"]) for e in rows] == expected
    assert ", " not in rows[1]["payload"] and '": ' not in rows[1]["payload"]  # compact


def test_paid_by_hand_and_failed_or_unknown_sends(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        request = await _paid(db, 1, 1000, callback=None)
        by_hand = await repo.create(_new(request, 100), NOW)
        failing = await repo.create(_new(request, 100), NOW)
        unknown = await repo.create(_new(request, 100), NOW)
        for refund in (by_hand, failing, unknown):
            await repo.claim(refund.id, "4Customer", NOW)
        manual = await repo.mark_sent(
            by_hand.id,
            tx_hash_list=[TX3],
            fee=None,
            tx_key="d4" * 32,
            payout_id=None,
            manual=True,
            now=NOW,
        )
        await repo.send_failed(failing.id, "not sending: ignored")  # it is not sending
        await repo.start_sending(failing.id)
        await repo.send_failed(failing.id, "not enough unlocked money")
        await repo.start_sending(unknown.id)
        await repo.send_unknown(unknown.id, "timed out", 9)
        await repo.send_unknown(unknown.id, "still unknown", None)
        return {
            "manual": manual,
            "failed": await repo.get(failing.id),
            "unknown": await repo.get(unknown.id),
            "events": await _events(db),
            "cancel_sending": await repo.cancel(unknown.id, NOW),
            "cancel_sent": await repo.cancel(by_hand.id, NOW),
            "cancel_claimed": await repo.cancel(failing.id, NOW),
            "refunded": await _refunded(db, request),
        }

    got = on_database(scenario)
    manual = got["manual"]
    assert manual.status is RefundStatus.SENT and manual.manual
    assert manual.tx_key == "d4" * 32 and manual.tx_hash_list == (TX3,) and manual.fee is None
    failed, unknown = got["failed"], got["unknown"]
    assert failed.status is RefundStatus.CLAIMED and failed.error == "not enough unlocked money"
    assert unknown.status is RefundStatus.SENDING
    assert (unknown.error, unknown.payout_id) == ("still unknown", 9)
    # No callback URL: the events are in the feed only.
    assert {(e["callback_url"], e["status"]) for e in got["events"]} == {(None, "no_callback")}
    assert got["cancel_sending"] is None and got["cancel_sent"] is None
    assert got["cancel_claimed"].status is RefundStatus.CANCELLED
    assert got["refunded"] == 200


def test_expire_due_frees_the_money_of_lapsed_open_refunds(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        one, two = await _paid(db, 1, 1000), await _paid(db, 2, 1000)
        short = timedelta(hours=1)
        lapsed = [
            await repo.create(_new(one, 100, life=short), NOW),
            await repo.create(_new(one, 200, life=short), NOW),
            await repo.create(_new(two, 300, life=short), NOW),
        ]
        living = await repo.create(_new(two, 50, life=3 * short), NOW)
        claimed = await repo.create(_new(one, 400, life=short), NOW)
        await repo.claim(claimed.id, "4Customer", NOW)
        later = NOW + 2 * short
        late_claim = await repo.claim(lapsed[0].id, "4Late", later)
        count = await repo.expire_due(later)
        return {
            "late_claim": late_claim,
            "count": count,
            "again": await repo.expire_due(later),
            "statuses": [(await repo.get(r.id)).status for r in lapsed],  # type: ignore[union-attr]
            "living": await repo.get(living.id),
            "claimed": await repo.get(claimed.id),
            "refunded": (await _refunded(db, one), await _refunded(db, two)),
        }

    got = on_database(scenario)
    assert got["late_claim"] is None
    assert got["count"] == 3 and got["again"] == 0
    assert got["statuses"] == [RefundStatus.EXPIRED] * 3
    assert got["living"].status is RefundStatus.OPEN
    assert got["claimed"].status is RefundStatus.CLAIMED  # claimed in time: it stays
    assert got["refunded"] == (400, 50)


def test_the_sweep_writes_nothing_when_nothing_is_due(on_database: Any) -> None:
    """The watch sweeps every store every 10 s: with nothing due it only reads (no write
    transaction: on SQLite that would take the database's one write lock each time)."""

    async def scenario(db: Database) -> tuple[int, int, int, int]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        paid = await _paid(db, 1, 1000)
        await repo.create(_new(paid, 100, life=timedelta(hours=1)), NOW)
        opened = 0
        write = db.write

        def counting(*args: Any, **kwargs: Any) -> Any:
            nonlocal opened
            opened += 1
            return write(*args, **kwargs)

        db.write = counting  # type: ignore[method-assign]
        idle = await repo.expire_due(NOW)
        idle_writes = opened
        due = await repo.expire_due(NOW + timedelta(hours=2))
        return idle, idle_writes, due, opened

    idle, idle_writes, due, writes = on_database(scenario)
    assert (idle, idle_writes) == (0, 0)
    assert (due, writes) == (1, 1)


def test_start_sending_moves_the_reservation_only_when_it_fits(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        repo = SqlRefundStore(db, DEFAULT_STORE)
        request = await _paid(db, 1, 1000)
        other = await repo.create(_new(request, 500), NOW)
        fiat = await repo.create(_new(request, 300), NOW)
        await repo.claim(fiat.id, "4Customer", NOW)
        with pytest.raises(RefundTooLarge) as too_large:
            await repo.start_sending(fiat.id, 501)  # 500 + 501 > 1000
        got: dict[str, Any] = {
            "message": too_large.value.message,
            "kept": await repo.get(fiat.id),
            "refunded_kept": await _refunded(db, request),
        }
        got["grown"] = await repo.start_sending(fiat.id, 500)
        got["refunded_grown"] = await _refunded(db, request)
        await repo.send_failed(fiat.id, "refused")
        got["shrunk"] = await repo.start_sending(fiat.id, 120)
        got["refunded_shrunk"] = await _refunded(db, request)
        await repo.cancel(other.id, NOW)
        got["refunded_end"] = await _refunded(db, request)
        return got

    got = on_database(scenario)
    assert "received 1000 piconero" in got["message"]
    assert got["kept"].status is RefundStatus.CLAIMED and got["kept"].amount == 300
    assert got["refunded_kept"] == 800
    assert got["grown"].status is RefundStatus.SENDING and got["grown"].amount == 500
    assert got["refunded_grown"] == 1000
    assert got["shrunk"].amount == 120 and got["refunded_shrunk"] == 620
    assert got["shrunk"].error is None  # a new try: "refused" was the last one's
    assert got["refunded_end"] == 120


def test_the_sync_never_sees_refund_events(on_database: Any) -> None:
    """The sync decides a transfer's next event from the newest event of its (request,
    tx hash): a refund's events, even under the same hash, are not among them."""

    async def scenario(db: Database) -> dict[tuple[int, str], str]:
        request = await _request(db, 1)
        other = await _request(db, 2)

        def row(n: int, request_id: int, kind: str, tx_hash: str) -> dict[str, Any]:
            return {
                "id": f"00000000-0000-0000-0000-{n:012d}",
                "request_id": request_id,
                "store_id": DEFAULT_STORE,
                "kind": kind,
                "tx_hash": tx_hash,
                "callback_url": None,
                "payload": "{}",
            }

        async with db.write() as conn:
            await insert_events(conn, [row(1, request.id, "transfer.pool", TX1)])
            await insert_events(conn, [row(2, request.id, RefundEventKind.CLAIMED.value, "")])
            await insert_events(conn, [row(3, request.id, RefundEventKind.SENT.value, TX1)])
            await insert_events(conn, [row(4, other.id, RefundEventKind.CONFIRMED.value, TX2)])
        async with db.read() as conn:
            return await last_event_kinds(conn, {request.id, other.id})

    kinds = on_database(scenario)
    assert list(kinds.values()) == ["transfer.pool"] and len(kinds) == 1
