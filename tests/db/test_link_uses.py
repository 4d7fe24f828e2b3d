"""A payment link's ``max_uses`` decided by the database, on SQLite and
PostgreSQL: concurrent requests of one link, through the address pool's ``take`` and
through ``PaymentStore.create`` (the path without a pool), make exactly ``max_uses``
requests; on PostgreSQL the racers come from two engines (two processes). A refused
request takes nothing: the pool keeps its subaddress, no row is written. An inactive or
deleted link makes nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.links import SqlLinkStore
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.tables import address_pool, links, payment_requests
from xmrgate.domain.errors import MissingReference
from xmrgate.domain.links import Link, LinkFields, LinkInactive, LinkUsedUp, new_link_id
from xmrgate.domain.stores import DEFAULT_STORE

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
MAX_USES = 10
RACERS = 30


def _columns(link_id: str) -> dict[str, Any]:
    """What ``PaymentRequests`` hands the pool for a link's request."""
    return {
        "amount": 10**12,
        "description": "Coffee",
        "callback_url": None,
        "return_url": None,
        "price": None,
        "expires_at": NOW + timedelta(hours=1),
        "underpay_tolerance": 0,
        "status": "waiting",
        "link_id": link_id,
    }


async def _link(db: Database, slug: str, **fields: Any) -> Link:
    return await SqlLinkStore(db, DEFAULT_STORE).create(
        new_link_id(), slug, LinkFields(title="Coffee", amount=10**12, **fields), NOW
    )


async def _count(db: Database, table: Any, *where: Any) -> int:
    async with db.read() as conn:
        return int(
            (await conn.execute(select(func.count()).select_from(table).where(*where))).scalar_one()
        )


async def _outcomes(attempts: list[Any]) -> tuple[int, int]:
    """How many attempts made a request and how many the link refused as used up;
    any other outcome fails the test."""
    answers = await asyncio.gather(*attempts, return_exceptions=True)
    others = [a for a in answers if isinstance(a, BaseException) and not isinstance(a, LinkUsedUp)]
    assert others == [], others
    made = sum(1 for a in answers if not isinstance(a, BaseException))
    return made, sum(1 for a in answers if isinstance(a, LinkUsedUp))


def _engines(db: Database, backend: str) -> list[Database]:
    """The databases the racers use: two engines on PostgreSQL (two processes of a
    cluster); SQLite has one process (the one ``db``)."""
    return [db] if backend == "sqlite" else [db, Database(db.url)]


def test_concurrent_pool_takes_make_exactly_max_uses(on_database: Any, backend: str) -> None:
    async def scenario(db: Database) -> dict[str, int]:
        link = await _link(db, "coffee", max_uses=MAX_USES)
        await SqlAddressPool(db).add([(f"8LnPool{i:03d}", i) for i in range(1, RACERS + 1)])
        dbs = _engines(db, backend)
        try:
            pools = [SqlAddressPool(d) for d in dbs]
            made, used_up = await _outcomes(
                [pools[i % len(pools)].take(_columns(link.id)) for i in range(RACERS)]
            )
        finally:
            for extra in dbs[1:]:
                await extra.dispose()
        read = await SqlLinkStore(db, DEFAULT_STORE).get(link.id)
        assert read is not None
        return {
            "made": made,
            "used_up": used_up,
            "rows": await _count(db, payment_requests, payment_requests.c.link_id == link.id),
            "uses": read.uses,
            # A refused take rolled back: its subaddress stays pooled for the next request.
            "pooled": await _count(db, address_pool),
        }

    assert on_database(scenario) == {
        "made": MAX_USES,
        "used_up": RACERS - MAX_USES,
        "rows": MAX_USES,
        "uses": MAX_USES,
        "pooled": RACERS - MAX_USES,
    }


def test_concurrent_creates_without_a_pool_make_exactly_max_uses(
    on_database: Any, backend: str
) -> None:
    async def scenario(db: Database) -> tuple[int, int, int]:
        link = await _link(db, "tea", max_uses=MAX_USES)
        dbs = _engines(db, backend)
        try:
            stores = [PaymentStore(d) for d in dbs]
            made, used_up = await _outcomes(
                [
                    stores[i % len(stores)].create(
                        address=f"8LnWallet{i:03d}",
                        subaddr_index=i,
                        amount=10**12,
                        description="Tea",
                        callback_url=None,
                        return_url=None,
                        link_id=link.id,
                    )
                    for i in range(1, RACERS + 1)
                ]
            )
        finally:
            for extra in dbs[1:]:
                await extra.dispose()
        return made, used_up, await _count(db, payment_requests)

    assert on_database(scenario) == (MAX_USES, RACERS - MAX_USES, MAX_USES)


def test_a_link_is_admitted_as_it_is_now(on_database: Any) -> None:
    """The link's row as stored when the request is inserted decides, not the page's read:
    turned off, used up by a lowered max_uses, or deleted: nothing is taken or written."""

    async def scenario(db: Database) -> None:
        pool = SqlAddressPool(db)
        await pool.add([(f"8LnPool{i:03d}", i) for i in range(1, 4)])
        link = await _link(db, "coffee")
        assert (await pool.take(_columns(link.id))) is not None
        async with db.write() as conn:
            await conn.execute(update(links).where(links.c.id == link.id).values(active=False))
        with pytest.raises(LinkInactive):
            await pool.take(_columns(link.id))
        async with db.write() as conn:
            await conn.execute(
                update(links).where(links.c.id == link.id).values(active=True, max_uses=1)
            )
        with pytest.raises(LinkUsedUp):
            await pool.take(_columns(link.id))
        with pytest.raises(LinkUsedUp):
            await PaymentStore(db).create(
                address="8LnWallet009",
                subaddr_index=9,
                amount=1,
                description="",
                callback_url=None,
                return_url=None,
                link_id=link.id,
            )
        unused = await _link(db, "gone")
        assert await SqlLinkStore(db, DEFAULT_STORE).delete(unused.id) is True
        with pytest.raises(MissingReference):
            await pool.take(_columns(unused.id))
        # A request no link made is not affected, and takes the next subaddress.
        plain = {k: v for k, v in _columns(link.id).items() if k != "link_id"}
        assert (await pool.take(plain)) is not None
        assert await _count(db, payment_requests) == 2
        assert await _count(db, address_pool) == 1

    on_database(scenario)
