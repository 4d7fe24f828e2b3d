"""What was announced of Greenfield invoices, on SQLite and PostgreSQL: the conditional
write (of two processes that read the same state, one writes), the deliveries written in
the same transaction as outbox rows, a webhook's secret for the worker, and the sync's
view of a request's events, which webhook deliveries never enter."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import insert, select

from tests.unit.fakes import AllowAll, FakeOutbox, FakeWallet
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.greenfield_announcements import SqlAnnouncements, SqlWebhookSecrets
from xmrgate.adapters.store.greenfield_invoices import SqlGreenfieldInvoices
from xmrgate.adapters.store.outbox import OutboxStore, last_event_kinds
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.tables import events, greenfield_webhooks, transfers
from xmrgate.core.greenfield_invoices import GreenfieldInvoices, NewInvoice
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.domain.greenfield.events import EventType
from xmrgate.domain.greenfield.states import Status
from xmrgate.domain.stores import DEFAULT_STORE


async def _invoice(db: Database) -> tuple[str, int]:
    requests = PaymentRequests(FakeWallet(), PaymentStore(db), FakeOutbox(), AllowAll())
    invoices = GreenfieldInvoices(
        SqlGreenfieldInvoices(db, DEFAULT_STORE), requests, AllowAll(), store_id=DEFAULT_STORE
    )
    made = await invoices.create(NewInvoice(Decimal(1), "XMR"))
    return made.invoice.id, made.invoice.request_id


async def _webhook(db: Database, webhook_id: str, enabled: bool = True, **more: Any) -> None:
    async with db.write() as conn:
        await conn.execute(
            insert(greenfield_webhooks).values(
                id=webhook_id,
                store_id=more.get("store_id", DEFAULT_STORE),
                url="https://shop.example/hook",
                secret=f"secret-of-{webhook_id}",
                enabled=enabled,
                automatic_redelivery=more.get("retry", True),
                everything=more.get("everything", True),
                specific_events=more.get("specific", ""),
                created_at=datetime.now(UTC),
            )
        )


def _row(delivery_id: str, request_id: int, webhook_id: str) -> dict[str, Any]:
    return {
        "id": delivery_id,
        "request_id": request_id,
        "kind": "gf.InvoicePaidAfterExpiration",  # the longest kind: fits events.kind
        "tx_hash": "",
        "callback_url": "https://shop.example/hook",
        "payload": json.dumps({"deliveryId": delivery_id}),
        "store_id": DEFAULT_STORE,
        "webhook_id": webhook_id,
    }


def test_one_of_two_racing_announcements_is_written(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        invoice_id, request_id = await _invoice(db)
        repo = SqlAnnouncements(db)
        [watched] = await repo.watched()
        assert (watched.invoice_id, watched.announced) == (invoice_id, None)
        after = '{"status": "New"}'
        results = await asyncio.gather(
            repo.announce(invoice_id, None, after, True, [_row("d-1", request_id, "w")]),
            repo.announce(invoice_id, None, after, True, [_row("d-2", request_id, "w")]),
        )
        assert sorted(results) == [False, True]
        async with db.read() as conn:
            ids = (await conn.execute(select(events.c.id).where(events.c.webhook_id == "w"))).all()
        assert len(ids) == 1  # the loser's delivery was never written
        [again] = await repo.watched()
        assert again.announced == after
        # Final: no longer watched; a mark watches it again.
        assert await repo.announce(invoice_id, after, '{"status": "Settled"}', False, [])
        assert await repo.watched() == []
        await SqlGreenfieldInvoices(db, DEFAULT_STORE).set_mark(invoice_id, Status.INVALID)
        assert [w.invoice_id for w in await repo.watched()] == [invoice_id]

    on_database(scenario)


def test_deliveries_are_outbox_rows_the_sync_never_counts(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        invoice_id, request_id = await _invoice(db)
        await SqlAnnouncements(db).announce(
            invoice_id, None, "{}", True, [_row("d-1", request_id, "w")]
        )
        [due] = await OutboxStore(db).claim_due("worker", 10, 30.0)
        assert (due.id, due.webhook_id, due.kind) == ("d-1", "w", "gf.InvoicePaidAfterExpiration")
        async with db.read() as conn:
            assert await last_event_kinds(conn, [request_id]) == {}

    on_database(scenario)


def test_enabled_webhooks_and_their_secrets(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        await _webhook(db, "on", everything=False, specific="InvoiceSettled NoSuchEvent")
        await _webhook(db, "off", enabled=False, retry=False)
        await _webhook(db, "other", store_id="elsewhere")
        [hook] = await SqlAnnouncements(db).webhooks(DEFAULT_STORE)
        assert hook.id == "on" and hook.events.specific == (EventType.SETTLED,)
        secrets = SqlWebhookSecrets(db)
        assert await secrets.signing("on") == ("secret-of-on", True)
        assert await secrets.signing("off") == ("secret-of-off", False)
        assert await secrets.signing("gone") is None

    on_database(scenario)


def test_a_webhook_that_is_down_holds_back_only_its_own_deliveries(on_database: Any) -> None:
    """In order per request AND destination: of one request's pending deliveries, the
    head of each webhook's is claimed; a second of the same webhook waits its turn."""

    async def scenario(db: Database) -> None:
        invoice_id, request_id = await _invoice(db)
        rows = [
            _row("a-1", request_id, "down"),
            _row("a-2", request_id, "down"),
            _row("b-1", request_id, "up"),
        ]
        await SqlAnnouncements(db).announce(invoice_id, None, "{}", True, rows)
        claimed = await OutboxStore(db).claim_due("worker", 10, 30.0)
        assert sorted(e.id for e in claimed) == ["a-1", "b-1"]

    on_database(scenario)


def test_the_facts_that_tell_whether_a_watched_invoice_may_have_changed(
    on_database: Any,
) -> None:
    """One statement gives each watched invoice's mark, whether its request has a
    transfer, its expiry and monitoring minutes (``core.may_have_changed``)."""

    async def scenario(db: Database) -> None:
        before = datetime.now(UTC)
        invoice_id, request_id = await _invoice(db)
        repo = SqlAnnouncements(db)
        [quiet] = await repo.watched()
        assert (quiet.marked, quiet.has_payments, quiet.monitoring_minutes) == (False, False, 60)
        assert quiet.expires_at is not None and quiet.expires_at.tzinfo is not None
        assert before + timedelta(minutes=14) < quiet.expires_at < before + timedelta(minutes=16)
        async with db.write() as conn:
            await conn.execute(
                insert(transfers).values(
                    tx_hash="ab" * 32,
                    request_id=request_id,
                    subaddr_index=1,
                    amount=10**12,
                    fee=10**8,
                    height=0,
                    timestamp=0,
                    unlock_time=0,
                    double_spend_seen=False,
                    state="pool",
                    updated_at=datetime.now(UTC),
                )
            )
        [paid] = await repo.watched()
        assert paid.has_payments and not paid.marked
        await SqlGreenfieldInvoices(db, DEFAULT_STORE).set_mark(invoice_id, Status.SETTLED)
        [marked] = await repo.watched()
        assert marked.marked

    on_database(scenario)
