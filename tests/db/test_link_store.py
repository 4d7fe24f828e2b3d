"""``SqlLinkStore`` on SQLite and PostgreSQL: links scoped by store (slugs global), their
counts (uses, paid, received), delete or deactivate, the open request a browser goes back
to, the pruning of unpaid link requests (never one with a transfer, never a store's
highest index), the list filtered by link, a request's ``link`` read back, and the
migration's way down and up again."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, func, insert, inspect, select, text, update

from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.links import SqlLinkStore
from xmrgate.adapters.store.listing import SqlListing
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.schema_upgrade import alembic_config
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.tables import events, metadata, payment_requests, transfers
from xmrgate.core.invoices import ListQuery
from xmrgate.domain.errors import AlreadyExists, MissingReference
from xmrgate.domain.invoice import InvoiceStatus
from xmrgate.domain.ledger import TransferState
from xmrgate.domain.links import Link, LinkFields, new_link_id
from xmrgate.domain.records import PaymentRequest
from xmrgate.domain.stores import DEFAULT_STORE, Store

NOW = datetime(2026, 11, 26, 12, 0, 0, 250000, tzinfo=UTC)
HOUR = timedelta(hours=1)
SHOP = "shop"
P, C, U, G = (
    TransferState.POOL,
    TransferState.CONFIRMED,
    TransferState.UNLOCKED,
    TransferState.GONE,
)
FIELDS = LinkFields(title="Coffee", description="A cup", amount=2 * 10**10)


async def _other_store(db: Database) -> None:
    await SqlStores(db).insert(Store(id=SHOP, name="Shop", account_index=1))


async def _link(
    db: Database,
    slug: str,
    *,
    store: str = DEFAULT_STORE,
    at: datetime = NOW,
    fields: LinkFields = FIELDS,
) -> Link:
    return await SqlLinkStore(db, store).create(new_link_id(), slug, fields, at)


async def _request(
    db: Database,
    index: int,
    *,
    store: str = DEFAULT_STORE,
    link: str | None = None,
    expires_at: datetime | None = NOW + HOUR,
    status: str | None = None,
) -> PaymentRequest:
    request = await PaymentStore(db, store).create(
        address=f"8Ln{store[:4]}{index:03d}",
        subaddr_index=index,
        amount=10**12,
        description="",
        callback_url=None,
        return_url=None,
        expires_at=expires_at,
        link_id=link,
    )
    if status is not None:
        async with db.write() as conn:
            await conn.execute(
                update(payment_requests)
                .where(payment_requests.c.id == request.id)
                .values(status=status)
            )
    return request


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
                height=0 if state is P else 100 + n,
                timestamp=1_700_000_000,
                unlock_time=0,
                double_spend_seen=False,
                state=state.value,
                updated_at=utcnow(),
            )
        )


async def _request_ids(db: Database) -> list[int]:
    async with db.read() as conn:
        rows = await conn.execute(select(payment_requests.c.id).order_by(payment_requests.c.id))
        return [r[0] for r in rows]


def test_create_get_list_and_counts(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        await _other_store(db)
        repo = SqlLinkStore(db, DEFAULT_STORE)
        every = LinkFields(
            title="Donate",
            description="Keep the lights on",
            price={"amount": "5.00", "currency": "EUR"},
            min_amount=10**9,
            currency="EUR",
            callback_url="https://shop.example/cb",
            return_url="https://shop.example/thanks",
            expires_in=600,
            max_uses=50,
            active=False,
        )
        made = await repo.create("ln_" + "a" * 16, "donate", every, NOW)
        coffee = await _link(db, "coffee", at=NOW + HOUR)
        await _link(db, "tea", at=NOW + 2 * HOUR)
        await _link(db, "theirs", store=SHOP, at=NOW + 3 * HOUR)
        # The coffee link's requests: two paid ones, one paid late, one with money in the
        # pool, one waiting, and one whose money came and went; then requests it did not make.
        paid = await _request(db, 1, link=coffee.id, status="paid")
        await _transfer(db, paid, 1, 500, U)
        complete = await _request(db, 2, link=coffee.id, status="complete")
        await _transfer(db, complete, 2, 300, C)
        await _transfer(db, complete, 3, 1000, G)  # gone: not received
        late = await _request(db, 3, link=coffee.id, status="paid_late")
        await _transfer(db, late, 4, 70, U)
        pool = await _request(db, 4, link=coffee.id, status="partial")
        await _transfer(db, pool, 5, 9, P)  # in the pool: counted, as GET /receive does
        await _request(db, 5, link=coffee.id)
        gone = await _request(db, 6, link=coffee.id, status="expired")
        await _transfer(db, gone, 6, 4000, G)
        unlinked = await _request(db, 7, status="paid")
        await _transfer(db, unlinked, 7, 10**12, U)
        other = await _request(db, 1, store=SHOP, status="paid")
        await _transfer(db, other, 8, 10**12, U)
        return {
            "made": made,
            "read": await repo.get(made.id),
            "coffee": await repo.get(coffee.id),
            "by_slug": await SqlLinkStore(db, SHOP).by_slug("coffee"),
            "their_slug": await repo.by_slug("theirs"),
            "unknown": (await repo.get("ln_" + "0" * 16), await repo.by_slug("nope")),
            "listing": await repo.listing(10),
            "limited": [link.slug for link in await repo.listing(2)],
        }

    got = on_database(scenario)
    made, read = got["made"], got["read"]
    assert made.store_id == DEFAULT_STORE and made.slug == "donate" and made.created_at == NOW
    assert (made.uses, made.paid, made.received) == (0, 0, 0)
    assert read == made, "every field reads back as written"
    assert read.fields.price == {"amount": "5.00", "currency": "EUR"}
    assert read.created_at.tzinfo is not None
    coffee = got["coffee"]
    assert (coffee.uses, coffee.paid, coffee.received) == (6, 3, 500 + 300 + 70 + 9)
    assert coffee.fields == FIELDS
    # The public page finds a link whatever the repository's store, and learns the store.
    assert got["by_slug"] == coffee and got["their_slug"].store_id == SHOP
    assert got["unknown"] == (None, None)
    assert [link.slug for link in got["listing"]] == ["tea", "coffee", "donate"]
    assert got["listing"][1] == coffee
    assert got["limited"] == ["tea", "coffee"]


def test_a_slug_is_taken_for_every_store(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        await _other_store(db)
        first = await _link(db, "coffee")
        errors = []
        for store in (SHOP, DEFAULT_STORE):
            with pytest.raises(AlreadyExists) as taken:
                await _link(db, "coffee", store=store, fields=LinkFields(title="Mine"))
            errors.append(taken.value.message)
        # Twenty racing creates of one slug: exactly one wins.
        race = await asyncio.gather(
            *(_link(db, "race", store=(SHOP, DEFAULT_STORE)[n % 2]) for n in range(20)),
            return_exceptions=True,
        )
        return {
            "errors": errors,
            "kept": await SqlLinkStore(db, DEFAULT_STORE).by_slug("coffee"),
            "first": first,
            "race": race,
        }

    got = on_database(scenario)
    assert all("'coffee' is taken" in message for message in got["errors"])
    assert got["kept"] == got["first"] and got["kept"].fields.title == "Coffee"
    winners = [r for r in got["race"] if isinstance(r, Link)]
    assert len(winners) == 1
    assert all(isinstance(r, AlreadyExists) for r in got["race"] if not isinstance(r, Link))


def test_another_stores_repository_sees_and_changes_nothing(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        await _other_store(db)
        theirs = SqlLinkStore(db, SHOP)
        used = await _link(db, "used")
        unused = await _link(db, "unused", at=NOW + HOUR)
        request = await _request(db, 1, link=used.id)
        return {
            "get": await theirs.get(used.id),
            "listing": await theirs.listing(10),
            "update": await theirs.update(used.id, LinkFields(title="Stolen", active=False)),
            "delete": (await theirs.delete(used.id), await theirs.delete(unused.id)),
            "open": await theirs.open_request(used.id, request.address, NOW),
            "after": (await SqlLinkStore(db, DEFAULT_STORE).listing(10)),
            "before": (used, unused),
        }

    got = on_database(scenario)
    assert got["get"] is None and got["listing"] == [] and got["update"] is None
    assert got["delete"] == (None, None) and got["open"] is False
    used, unused = got["before"]
    assert [(link.id, link.fields) for link in got["after"]] == [
        (unused.id, FIELDS),
        (used.id, FIELDS),
    ]


def test_update_replaces_the_fields_and_keeps_slug_and_counts(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[Link, Link | None, Link | None]:
        repo = SqlLinkStore(db, DEFAULT_STORE)
        link = await _link(db, "coffee")
        paid = await _request(db, 1, link=link.id, status="paid")
        await _transfer(db, paid, 1, 700, U)
        fields = LinkFields(title="Tea", min_amount=5, currency="USD", max_uses=3, active=False)
        return link, await repo.update(link.id, fields), await repo.get(link.id)

    link, updated, read = on_database(scenario)
    assert updated is not None and updated == read
    assert (updated.id, updated.slug, updated.created_at) == (link.id, "coffee", NOW)
    assert updated.fields == LinkFields(
        title="Tea", min_amount=5, currency="USD", max_uses=3, active=False
    )
    assert updated.fields.open_amount and updated.fields.amount is None
    assert (updated.uses, updated.paid, updated.received) == (1, 1, 700)


def test_delete_an_unused_link_deactivate_a_used_one(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        repo = SqlLinkStore(db, DEFAULT_STORE)
        unused = await _link(db, "unused")
        used = await _link(db, "used")
        request = await _request(db, 1, link=used.id)
        got: dict[str, Any] = {
            "deleted": await repo.delete(unused.id),
            "kept": await repo.delete(used.id),
            "again": await repo.delete(unused.id),
            "unknown": await repo.delete("ln_" + "0" * 16),
            "read": (await repo.get(unused.id), await repo.get(used.id)),
            "slug_free": await _link(db, "unused"),
            "request": await PaymentStore(db).get(request.address),
        }
        # A request made by a link deleted meanwhile is refused (its foreign key).
        with pytest.raises(MissingReference):
            await _request(db, 2, link=unused.id)
        return got

    got = on_database(scenario)
    assert (got["deleted"], got["kept"], got["again"], got["unknown"]) == (True, False, None, None)
    gone, kept = got["read"]
    assert gone is None
    assert kept is not None and kept.fields.active is False and kept.uses == 1
    assert got["slug_free"].slug == "unused", "a deleted link's slug can be used again"
    assert got["request"].link == kept.id


def test_open_request(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, bool]:
        await _other_store(db)
        repo = SqlLinkStore(db, DEFAULT_STORE)
        link = await _link(db, "coffee")
        other_link = await _link(db, "tea")
        their_link = await _link(db, "theirs", store=SHOP)
        waiting = await _request(db, 1, link=link.id)
        expired = await _request(db, 2, link=link.id, expires_at=NOW)
        paid = await _request(db, 3, link=link.id, status="paid")
        await _transfer(db, paid, 1, 10**12, U)
        pool = await _request(db, 4, link=link.id)
        await _transfer(db, pool, 2, 10, P)
        came_and_went = await _request(db, 5, link=link.id)
        await _transfer(db, came_and_went, 3, 10, G)
        never = await _request(db, 6, link=link.id, expires_at=None)
        api = await _request(db, 7)
        theirs = await _request(db, 1, store=SHOP, link=their_link.id)
        return {
            "waiting": await repo.open_request(link.id, waiting.address, NOW),
            "waiting_later": await repo.open_request(link.id, waiting.address, NOW + HOUR),
            "expired": await repo.open_request(link.id, expired.address, NOW),
            "paid": await repo.open_request(link.id, paid.address, NOW),
            "pool": await repo.open_request(link.id, pool.address, NOW),
            "came_and_went": await repo.open_request(link.id, came_and_went.address, NOW),
            "no_expiry": await repo.open_request(link.id, never.address, NOW),
            "other_link": await repo.open_request(other_link.id, waiting.address, NOW),
            "api": await repo.open_request(link.id, api.address, NOW),
            "unknown": await repo.open_request(link.id, "8Nope", NOW),
            "their_store": await repo.open_request(their_link.id, theirs.address, NOW),
            "theirs_by_them": await SqlLinkStore(db, SHOP).open_request(
                their_link.id, theirs.address, NOW
            ),
        }

    got = on_database(scenario)
    assert got.pop("waiting") is True and got.pop("theirs_by_them") is True
    # Links make requests with an expiry; one without is not one a browser goes back to.
    assert got == dict.fromkeys(got, False)


def test_prune_unpaid(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        await _other_store(db)
        repo = SqlLinkStore(db, DEFAULT_STORE)
        link = await _link(db, "coffee")
        theirs = await _link(db, "theirs", store=SHOP)
        past = NOW - HOUR
        doomed = [
            await _request(db, 1, link=link.id, expires_at=past),
            await _request(db, 2, link=link.id, expires_at=past, status="expired"),
            await _request(db, 1, store=SHOP, link=theirs.id, expires_at=past),
        ]
        kept = {
            "pool": await _request(db, 3, link=link.id, expires_at=past, status="partial"),
            "gone": await _request(db, 4, link=link.id, expires_at=past, status="expired"),
            "paid": await _request(db, 5, link=link.id, expires_at=past, status="paid"),
            "api": await _request(db, 6, expires_at=past, status="expired"),
            "not_yet": await _request(db, 7, link=link.id, expires_at=NOW),
            "no_expiry": await _request(db, 8, link=link.id, expires_at=None),
            "highest": await _request(db, 9, link=link.id, expires_at=past),
            "their_highest": await _request(db, 2, store=SHOP, link=theirs.id, expires_at=past),
        }
        await _transfer(db, kept["pool"], 1, 10, P)
        await _transfer(db, kept["gone"], 2, 10, G)
        await _transfer(db, kept["paid"], 3, 10**12, U)
        async with db.write() as conn:
            await insert_events(
                conn,
                [
                    {
                        "id": f"ev-{request.id}",
                        "request_id": request.id,
                        "store_id": request.store_id,
                        "kind": "request.expired",
                        "tx_hash": "",
                        "callback_url": "https://shop.example/cb",
                        "payload": "{}",
                    }
                    for request in (doomed[0], kept["api"])
                ],
            )
        before = await _request_ids(db)
        got: dict[str, Any] = {"none": await repo.prune_unpaid(NOW, 0)}
        got["batches"] = [await repo.prune_unpaid(NOW, 2) for _ in range(3)]
        got["left"] = await _request_ids(db)
        async with db.read() as conn:
            rows = await conn.execute(select(events.c.request_id))
            got["events"] = [r[0] for r in rows]
        got["doomed"] = {r.id for r in doomed}
        got["kept"] = {name: r.id for name, r in kept.items()}
        got["before"] = before
        got["link"] = await repo.get(link.id)
        return got

    got = on_database(scenario)
    assert got["none"] == 0
    assert got["batches"] == [2, 1, 0], "at most limit a call, until none is left"
    assert set(got["before"]) - set(got["left"]) == got["doomed"]
    assert set(got["left"]) == set(got["kept"].values())
    # The doomed request's event went with it; the other request's stayed.
    assert got["events"] == [got["kept"]["api"]]
    assert got["link"].uses == 6  # what is left of its requests


def test_pruning_never_gives_an_index_out_twice(on_database: Any) -> None:
    """The store's highest index stays, so ``highest_subaddr_index`` never goes back."""

    async def scenario(db: Database) -> tuple[int, int, int]:
        link = await _link(db, "coffee")
        for index in (3, 8, 5):
            await _request(db, index, link=link.id, expires_at=NOW - HOUR)
        store = PaymentStore(db)
        highest = await store.highest_subaddr_index()
        pruned = await SqlLinkStore(db, DEFAULT_STORE).prune_unpaid(NOW, 100)
        return highest, pruned, await store.highest_subaddr_index()

    assert on_database(scenario) == (8, 2, 8)


def test_a_request_reads_back_its_link_and_the_list_filters_by_it(on_database: Any) -> None:
    async def scenario(db: Database) -> dict[str, Any]:
        link = await _link(db, "coffee")
        other = await _link(db, "tea")
        made = await _request(db, 1, link=link.id)
        await _request(db, 2, link=other.id)
        api = await _request(db, 3)
        later = await _request(db, 4, link=link.id, status="paid")
        pool = SqlAddressPool(db)
        await pool.add([("8LnPooled05", 5)])
        columns = {
            "amount": 10**12,
            "description": "from the pool",
            "callback_url": None,
            "return_url": None,
            "price": None,
            "expires_at": NOW + HOUR,
            "underpay_tolerance": 0,
            "status": "waiting",
            "link_id": link.id,
        }
        taken = await pool.take(columns)
        listing = SqlListing(db, DEFAULT_STORE)
        async with db.read() as conn:
            stored_link = (
                await conn.execute(
                    select(payment_requests.c.link_id).where(
                        payment_requests.c.address == "8LnPooled05"
                    )
                )
            ).scalar()
        return {
            "made": made,
            "api": api,
            "taken": taken,
            "stored_link": stored_link,
            "get": await PaymentStore(db).get(made.address),
            "status": await PaymentStore(db, None).status(made.address),
            "by_link": [r.address for r in await listing.page(ListQuery(link=link.id), NOW)],
            "by_link_paid": await listing.page(
                ListQuery(link=link.id, statuses=frozenset({InvoiceStatus.PAID})), NOW
            ),
            "all": await listing.page(ListQuery(), NOW),
            "unknown": await listing.page(ListQuery(link="ln_" + "0" * 16), NOW),
            "link": link,
            "other": other,
            "later": later,
        }

    got = on_database(scenario)
    link = got["link"]
    assert got["made"].link == link.id and got["api"].link is None
    assert got["get"].link == link.id and got["status"].request.link == link.id
    assert got["taken"] is not None and got["taken"].link == link.id
    assert got["stored_link"] == link.id
    assert set(got["by_link"]) == {got["made"].address, got["later"].address, "8LnPooled05"}
    assert [r.address for r in got["by_link_paid"]] == [got["later"].address]
    assert got["by_link_paid"][0].link == link.id
    assert {r.link for r in got["all"]} == {link.id, got["other"].id, None}
    assert len(got["all"]) == 5 and got["unknown"] == []


def _differences(conn: Connection) -> list[Any]:
    context = MigrationContext.configure(
        conn, opts={"compare_type": True, "compare_server_default": True}
    )
    return list(compare_metadata(context, metadata))


def test_the_migration_goes_down_and_up_again(database_url: str) -> None:
    """0011 down keeps the requests, their transfers and events (SQLite rebuilds the
    table); up again gives exactly ``tables.py``; 0010's own way down still works."""

    async def main() -> dict[str, Any]:
        db = Database(database_url)
        try:
            await db.migrate()
            link = await _link(db, "coffee")
            request = await _request(db, 1, link=link.id)
            await _transfer(db, request, 1, 10, P)
            async with db.write() as conn:
                await insert_events(
                    conn,
                    [
                        {
                            "id": "ev-1",
                            "request_id": request.id,
                            "store_id": DEFAULT_STORE,
                            "kind": "transfer.pool",
                            "tx_hash": f"{1:064x}",
                            "callback_url": None,
                            "payload": "{}",
                        }
                    ],
                )

            async def count(conn: Any) -> tuple[int, int, int]:
                found = []
                for table in ("payment_requests", "transfers", "events"):
                    query = text(f"SELECT COUNT(*) FROM {table}")
                    found.append(int((await conn.execute(query)).scalar()))
                return found[0], found[1], found[2]

            got: dict[str, Any] = {}
            async with db.engine.begin() as conn:
                if db.is_sqlite:  # as Database.migrate() runs revisions
                    await conn.execute(text("PRAGMA foreign_keys = OFF"))
                await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0010"))
                got["down"] = await count(conn)
                got["columns"] = await conn.run_sync(
                    lambda c: [col["name"] for col in inspect(c).get_columns("payment_requests")]
                )
            await db.migrate()
            async with db.engine.connect() as conn:
                got["differences"] = await conn.run_sync(_differences)
                got["up"] = await count(conn)
                got["unlinked"] = (
                    await conn.execute(
                        select(func.count()).where(payment_requests.c.link_id.is_not(None))
                    )
                ).scalar()
            async with db.engine.begin() as conn:
                if db.is_sqlite:
                    await conn.execute(text("PRAGMA foreign_keys = OFF"))
                await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0009"))
                got["0009"] = await count(conn)
            return got
        finally:
            await db.dispose()

    got = asyncio.run(main())
    assert got["down"] == (1, 1, 1) and got["up"] == (1, 1, 1) and got["0009"] == (1, 1, 1)
    assert "link_id" not in got["columns"] and "refunded" in got["columns"]
    assert got["differences"] == []
    assert got["unlinked"] == 0, "the requests a link made stay, unlinked"
