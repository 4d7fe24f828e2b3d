"""What the dashboard reads, on SQLite and PostgreSQL: daily sums of received XMR (by
block day, in the caller's zone, mined transfers only, from the timestamp index), the
list's search, and every callback try kept and listed with its event."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, insert, text

from tests.db.test_retention import _event
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.listing import SqlListing
from xmrgate.adapters.store.outbox import OutboxStore, insert_events
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.received import DAILY_QUERY, ReceivedStore
from xmrgate.adapters.store.tables import callback_tries, events, transfers
from xmrgate.core.invoices import ListQuery
from xmrgate.core.received import SECONDS_PER_DAY
from xmrgate.domain.ledger import TransferState

XMR = 10**12
DAY1 = int(datetime(2026, 11, 20, tzinfo=UTC).timestamp())  # midnight UTC
D1 = DAY1 // SECONDS_PER_DAY


async def _request(db: Database, index: int, description: str = "") -> Any:
    return await PaymentStore(db).create(
        address=f"8Addr{index:03d}x",
        subaddr_index=index,
        amount=XMR,
        description=description,
        callback_url="https://shop.example/cb",
        return_url=None,
    )


async def _transfer(
    db: Database, request: Any, n: int, amount: int, at: int, state: TransferState
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
                timestamp=at,
                unlock_time=0,
                double_spend_seen=False,
                state=state.value,
                updated_at=utcnow(),
            )
        )


def test_daily_sums_count_mined_transfers_by_block_day(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[Any, Any, Any]:
        r = await _request(db, 1)
        C, U = TransferState.CONFIRMED, TransferState.UNLOCKED
        await _transfer(db, r, 1, 2 * XMR, DAY1 + 3600, U)  # day 1, 01:00 UTC
        await _transfer(db, r, 2, 2**62, DAY1 + 23 * 3600, C)  # day 1, 23:00 UTC; big
        await _transfer(db, r, 3, 5, DAY1 + SECONDS_PER_DAY + 60, U)  # day 2, 00:01 UTC
        await _transfer(db, r, 4, 7 * XMR, DAY1 + 7200, TransferState.POOL)  # not mined
        await _transfer(db, r, 5, 9 * XMR, DAY1 + 7200, TransferState.GONE)  # reorged away
        await _transfer(db, r, 6, 11 * XMR, DAY1 - 1, U)  # before the window
        store = ReceivedStore(db)
        return (
            await store.daily_sums(DAY1, 0),
            # UTC+02:00: 23:00 UTC is already the next day there; the window starts at
            # that zone's midnight (22:00 UTC the day before), which takes in DAY1 - 1.
            await store.daily_sums(DAY1 - 7200, 7200),
            await store.daily_sums(DAY1 + SECONDS_PER_DAY, 0),
        )

    utc, plus_two, later = on_database(scenario)
    assert utc == {D1: (2 * XMR + 2**62, 2), D1 + 1: (5, 1)}
    assert plus_two == {D1: (2 * XMR + 11 * XMR, 2), D1 + 1: (2**62 + 5, 2)}
    assert later == {D1 + 1: (5, 1)}


def test_daily_sums_read_only_the_window_through_the_index(on_database: Any) -> None:
    """A year of transfers, a month asked for: the plan is a range scan of
    ix_transfers_state_timestamp, not a scan of all transfers."""

    async def scenario(db: Database) -> tuple[str, dict[int, tuple[int, int]]]:
        r = await _request(db, 1)
        rows = [
            {
                "tx_hash": f"{n:064x}",
                "subaddr_index": 1,
                "request_id": r.id,
                "amount": XMR,
                "fee": 0,
                "height": 100 + n,
                "timestamp": DAY1 - n * 3 * 3600,  # one every 3 hours, back for a year
                "unlock_time": 0,
                "double_spend_seen": False,
                "state": TransferState.UNLOCKED.value,
                "updated_at": utcnow(),
            }
            for n in range(3000)
        ]
        async with db.write() as conn:
            await conn.execute(insert(transfers), rows)
            await conn.execute(text("ANALYZE"))
        since = DAY1 - 30 * SECONDS_PER_DAY
        sql = str(
            DAILY_QUERY.params(since=since, utc_offset=0).compile(
                dialect=db.engine.dialect, compile_kwargs={"literal_binds": True}
            )
        )
        explain = "EXPLAIN QUERY PLAN " if db.engine.dialect.name == "sqlite" else "EXPLAIN "
        async with db.engine.connect() as conn:
            plan = " | ".join(str(r[-1]) for r in await conn.execute(text(explain + sql)))
        return plan, await ReceivedStore(db).daily_sums(since, 0)

    plan, sums = on_database(scenario)
    assert "ix_transfers_state_timestamp" in plan, plan
    assert sum(count for _, count in sums.values()) == 30 * 8 + 1  # 8 a day, and DAY1 itself


def test_search_finds_description_words_in_any_case_and_address_starts(
    on_database: Any,
) -> None:
    async def scenario(db: Database) -> dict[str, list[str]]:
        await _request(db, 1, "Order #42: two coffees")
        await _request(db, 2, "order 43, 100% cotton shirt")
        await _request(db, 3, "Donation")
        await _request(db, 13, "")
        listing = SqlListing(db)
        found: dict[str, list[str]] = {}
        for search in ("ORDER", "coffee", "100%", "%", "_", "8Addr01", "8addr01", "none"):
            rows = await listing.page(ListQuery(search=search), utcnow())
            found[search] = [r.address for r in rows]
        return found

    found = on_database(scenario)
    assert found["ORDER"] == ["8Addr002x", "8Addr001x"]
    assert found["coffee"] == ["8Addr001x"]
    assert found["100%"] == ["8Addr002x"]  # % is a character, not a wildcard
    assert found["%"] == ["8Addr002x"]
    assert found["_"] == []
    assert found["8Addr01"] == ["8Addr013x"]  # the start of an address
    assert found["8addr01"] == ["8Addr013x"]  # in any case, like the description
    assert found["none"] == []


def test_every_try_is_kept_and_listed_with_its_event(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[Any, Any, int, int]:
        r = await _request(db, 1)
        async with db.write() as conn:
            await insert_events(conn, [_event(r.id, 1), _event(r.id, 2)])
        outbox = OutboxStore(db)
        first = _event(r.id, 1)["id"]
        for status, error, delivered in [(500, "HTTP 500", False), (None, "timeout", False)]:
            claimed = await outbox.claim_due("w1", 10, 60)
            assert [e.id for e in claimed] == [first]
            await outbox.record_attempt(
                first,
                "w1",
                delivered=delivered,
                status_code=status,
                error=error,
                next_attempt_at=utcnow(),
            )
        await outbox.claim_due("w1", 10, 60)
        # A try recorded by a worker that lost its claim is not the event's try.
        await outbox.record_attempt(
            first, "w-other", delivered=True, status_code=200, error=None, next_attempt_at=None
        )
        await outbox.record_attempt(
            first, "w1", delivered=True, status_code=200, error=None, next_attempt_at=None
        )
        listed = await outbox.for_request(r.id)
        claimed = await outbox.claim_due("w1", 10, 60)  # the second event's tries are its own
        await outbox.record_attempt(
            claimed[0].id, "w1", delivered=True, status_code=204, error=None, next_attempt_at=None
        )
        listed_again = await outbox.for_request(r.id)
        # The tries go with their event (retention deletes old events).
        async with db.write() as conn:
            await conn.execute(delete(events).where(events.c.id == first))
        async with db.read() as conn:
            left = (await conn.execute(text("SELECT count(*) FROM callback_tries"))).scalar()
            seqs = (await conn.execute(callback_tries.select())).mappings().all()
        return listed, listed_again, int(left or 0), len(seqs)

    listed, listed_again, left, rows = on_database(scenario)
    first = listed[0]
    assert first.attempts == 3 and first.status == "delivered"
    assert [(t.status_code, t.error, t.delivered) for t in first.tries] == [
        (500, "HTTP 500", False),
        (None, "timeout", False),
        (200, None, True),
    ]
    assert first.tries[0].at <= first.tries[1].at <= first.tries[2].at
    assert first.tries[-1].at == first.last_attempt_at
    assert listed[1].tries == ()
    assert [(t.status_code, t.delivered) for t in listed_again[1].tries] == [(204, True)]
    assert [len(e.tries) for e in listed_again] == [3, 1]
    assert left == 1 and rows == 1
