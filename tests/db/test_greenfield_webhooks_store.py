"""Greenfield webhooks on SQLite and PostgreSQL: the rows scoped by
store, a PUT keeping the secret when none is given, a delete taking the pending
deliveries with it (never the ones already sent), and a redeliver making a new pending
outbox row with the right body (``core/greenfield_webhooks.py`` over
``adapters/store/greenfield_webhooks.py``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update

from tests.db.support import new_request
from tests.unit.fakes import AllowAll
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.greenfield_webhooks import SqlGreenfieldWebhooks
from xmrgate.adapters.store.outbox import DELIVERED, PENDING, insert_events
from xmrgate.adapters.store.tables import events
from xmrgate.core.greenfield_webhooks import (
    DeliveryNotFound,
    GreenfieldWebhooks,
    WebhookInput,
    WebhookNotFound,
)
from xmrgate.domain.greenfield.deliveries import delivery_body, encode, first_try
from xmrgate.domain.greenfield.events import EventFilter, EventType, InvoiceEvent
from xmrgate.domain.stores import DEFAULT_STORE

SHOP = "shop"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _hooks(db: Database, store: str = DEFAULT_STORE) -> GreenfieldWebhooks:
    return GreenfieldWebhooks(
        SqlGreenfieldWebhooks(db, store), AllowAll(), store_id=store, clock=lambda: NOW
    )


async def _deliver(
    db: Database, request_id: int, webhook_id: str, delivery_id: str, store: str
) -> dict[str, Any]:
    """A first delivery of InvoiceSettled, written as the announcer writes one; its body."""
    event = InvoiceEvent(EventType.SETTLED, {"manuallyMarked": False, "overPaid": False})
    body = delivery_body(
        first_try(delivery_id, webhook_id, 1_750_000_000),
        event,
        store_id=store,
        invoice_id="inv-1",
        metadata={"orderId": "7", "note": "crème"},
    )
    row = {
        "id": delivery_id,
        "kind": "gf." + EventType.SETTLED.value,
        "request_id": request_id,
        "store_id": store,
        "tx_hash": "",
        "callback_url": "https://shop.example/hook",
        "payload": encode(body).decode(),
        "webhook_id": webhook_id,
    }
    async with db.write() as conn:
        await insert_events(conn, [row])
    return body


def test_webhooks_are_scoped_by_store_and_put_keeps_the_secret(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        mine, theirs = _hooks(db), _hooks(db, SHOP)
        wanted = EventFilter(False, (EventType.SETTLED, EventType.PROCESSING))
        made = await mine.create(WebhookInput("https://shop.example/h", events=wanted))
        assert len(made.secret) >= 16 and made.created_at == NOW
        other = await theirs.create(WebhookInput("https://b.example/h", secret="given"))
        assert other.secret == "given"
        assert await mine.get(made.id) == made
        assert [w.id for w in await mine.listing()] == [made.id]
        assert [w.id for w in await theirs.listing()] == [other.id]
        for call in (
            theirs.get(made.id),
            theirs.delete(made.id),
            theirs.update(made.id, WebhookInput("https://x.example/")),
            theirs.deliveries(made.id, 5),
        ):
            try:
                await call
            except WebhookNotFound:
                continue
            raise AssertionError("another store's webhook was found")
        for secret in (None, ""):
            changed = await mine.update(
                made.id, WebhookInput("https://shop.example/new", secret, enabled=False)
            )
            assert changed.secret == made.secret
            read = await mine.get(made.id)
            assert read.secret == made.secret and read.enabled is False
            assert read.url == "https://shop.example/new" and read.events == EventFilter()
        await mine.update(made.id, WebhookInput("https://shop.example/new", "fresh"))
        assert (await mine.get(made.id)).secret == "fresh"
        assert (await theirs.get(other.id)).secret == "given"

    on_database(scenario)


def test_delete_takes_pending_deliveries_and_keeps_sent_ones(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        hooks = _hooks(db)
        request = await new_request(db, 1)
        gone = await hooks.create(WebhookInput("https://shop.example/a"))
        kept = await hooks.create(WebhookInput("https://shop.example/b"))
        for webhook_id, delivery_id in ((gone.id, "sent"), (gone.id, "queued"), (kept.id, "b1")):
            await _deliver(db, request.id, webhook_id, delivery_id, DEFAULT_STORE)
        async with db.write() as conn:
            await conn.execute(
                update(events)
                .where(events.c.id == "sent")
                .values(status=DELIVERED, last_status=200)
            )
        await hooks.delete(gone.id)
        async with db.read() as conn:
            left = dict((await conn.execute(select(events.c.id, events.c.status))).all())
        assert left == {"sent": DELIVERED, "b1": PENDING}
        try:
            await hooks.delete(gone.id)
        except WebhookNotFound:
            pass
        else:
            raise AssertionError("deleted twice")

    on_database(scenario)


def test_deliveries_newest_first_and_redeliver_makes_a_new_pending_row(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        hooks, theirs = _hooks(db), _hooks(db, SHOP)
        request = await new_request(db, 1)
        webhook = await hooks.create(WebhookInput("https://shop.example/a"))
        first = await _deliver(db, request.id, webhook.id, "d1", DEFAULT_STORE)
        await _deliver(db, request.id, webhook.id, "d2", DEFAULT_STORE)
        # The same webhook id in another store's rows is not this store's delivery.
        await _deliver(db, request.id, webhook.id, "x1", SHOP)
        assert [d.id for d in await hooks.deliveries(webhook.id, 10)] == ["d2", "d1"]
        assert [d.id for d in await hooks.deliveries(webhook.id, 1)] == ["d2"]
        one = await hooks.delivery(webhook.id, "d1")
        assert one.status == PENDING and one.attempts == 0 and one.last_status is None
        assert one.payload.encode() == encode(first)
        try:
            await hooks.delivery(webhook.id, "x1")
        except DeliveryNotFound:
            pass
        else:
            raise AssertionError("another store's delivery was found")
        try:
            await theirs.redeliver(webhook.id, "d1")
        except WebhookNotFound:
            pass
        else:
            raise AssertionError("another store redelivered")
        await hooks.update(webhook.id, WebhookInput("https://shop.example/moved"))
        new_id = await hooks.redeliver(webhook.id, "d1")
        assert new_id not in ("d1", "d2")
        assert [d.id for d in await hooks.deliveries(webhook.id, 10)] == [new_id, "d2", "d1"]
        async with db.read() as conn:
            row = (await conn.execute(select(events).where(events.c.id == new_id))).mappings().one()
        assert row["status"] == PENDING and row["attempts"] == 0
        assert row["next_attempt_at"] is not None
        assert (row["kind"], row["request_id"], row["tx_hash"]) == (
            "gf.InvoiceSettled",
            request.id,
            "",
        )
        assert row["webhook_id"] == webhook.id and row["store_id"] == DEFAULT_STORE
        assert row["callback_url"] == "https://shop.example/moved"
        body = json.loads(row["payload"])
        assert list(body) == list(first)
        assert body == {
            **first,
            "deliveryId": new_id,
            "isRedelivery": True,
            "originalDeliveryId": "d1",
            "timestamp": int(NOW.timestamp()),
        }
        # A redelivery of the redelivery still points at the first.
        newer = json.loads(
            (await hooks.delivery(webhook.id, await hooks.redeliver(webhook.id, new_id))).payload
        )
        assert newer["originalDeliveryId"] == "d1" and newer["isRedelivery"] is True

    on_database(scenario)
