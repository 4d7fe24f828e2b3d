"""One store's Greenfield webhooks and their deliveries in SQL (``core.greenfield_webhooks``).

The webhooks are rows of ``greenfield_webhooks``; their deliveries are rows of the outbox
(``events`` with ``webhook_id``), read here for the API and added for a redeliver.
Every query names the store: a webhook id of another store is not found.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select, update

from xmrgate.adapters.store.db import Database, as_utc
from xmrgate.adapters.store.outbox import PENDING, insert_events
from xmrgate.adapters.store.tables import events, greenfield_webhooks
from xmrgate.core.greenfield_webhooks import Delivery, Webhook
from xmrgate.domain.greenfield.events import EventFilter, parse_event_filter

_W = greenfield_webhooks.c
_E = events.c
_DELIVERY_COLUMNS = (
    _E.id,
    _E.webhook_id,
    _E.created_at,
    _E.status,
    _E.attempts,
    _E.last_status,
    _E.last_error,
    _E.payload,
)


def _events_of(row: Any) -> EventFilter:
    names = row["specific_events"].split()
    # Names were checked when the webhook was written; read them back the same way.
    return parse_event_filter({"everything": bool(row["everything"]), "specificEvents": names})


def _webhook(row: Any) -> Webhook:
    return Webhook(
        id=row["id"],
        store_id=row["store_id"],
        url=row["url"],
        secret=row["secret"],
        enabled=bool(row["enabled"]),
        automatic_redelivery=bool(row["automatic_redelivery"]),
        events=_events_of(row),
        created_at=as_utc(row["created_at"]),
    )


def _fields(webhook: Webhook) -> dict[str, Any]:
    """The columns a PUT replaces."""
    return {
        "url": webhook.url,
        "secret": webhook.secret,
        "enabled": webhook.enabled,
        "automatic_redelivery": webhook.automatic_redelivery,
        "everything": webhook.events.everything,
        "specific_events": " ".join(t.value for t in webhook.events.specific),
    }


def _delivery(row: Any) -> Delivery:
    return Delivery(
        id=row["id"],
        webhook_id=row["webhook_id"],
        created_at=as_utc(row["created_at"]),
        status=row["status"],
        attempts=row["attempts"],
        last_status=row["last_status"],
        last_error=row["last_error"],
        payload=row["payload"],
    )


class SqlGreenfieldWebhooks:
    """The webhooks of ONE store and their deliveries."""

    def __init__(self, db: Database, store_id: str) -> None:
        self._db = db
        self._store_id = store_id

    def _mine(self, webhook_id: str) -> Any:
        return (_W.id == webhook_id) & (_W.store_id == self._store_id)

    def _deliveries_of(self, webhook_id: str) -> Any:
        return (_E.webhook_id == webhook_id) & (_E.store_id == self._store_id)

    async def insert(self, webhook: Webhook) -> None:
        """One INSERT."""
        async with self._db.write(single_statement=True) as conn:
            await conn.execute(
                greenfield_webhooks.insert().values(
                    id=webhook.id,
                    store_id=webhook.store_id,
                    created_at=webhook.created_at,
                    **_fields(webhook),
                )
            )

    async def all(self) -> list[Webhook]:
        """The store's webhooks, oldest first."""
        statement = (
            select(greenfield_webhooks)
            .where(_W.store_id == self._store_id)
            .order_by(_W.created_at, _W.id)
        )
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(statement)).mappings().all()
        return [_webhook(r) for r in rows]

    async def get(self, webhook_id: str) -> Webhook | None:
        """The store's webhook, or None."""
        statement = select(greenfield_webhooks).where(self._mine(webhook_id))
        async with self._db.read(autocommit=True) as conn:
            row = (await conn.execute(statement)).mappings().first()
        return None if row is None else _webhook(row)

    async def update(self, webhook: Webhook) -> bool:
        """Replace the fields a PUT sets; False when the webhook is gone."""
        async with self._db.write(single_statement=True) as conn:
            done = await conn.execute(
                update(greenfield_webhooks).where(self._mine(webhook.id)).values(**_fields(webhook))
            )
        return bool(done.rowcount)

    async def delete(self, webhook_id: str) -> bool:
        """The webhook and its pending deliveries, in one transaction. Delivered and
        failed ones stay: the outbox's history of what was sent (and the feed's)."""
        async with self._db.write() as conn:
            gone = await conn.execute(delete(greenfield_webhooks).where(self._mine(webhook_id)))
            if not gone.rowcount:
                return False
            await conn.execute(
                delete(events).where(self._deliveries_of(webhook_id), _E.status == PENDING)
            )
        return True

    async def deliveries(self, webhook_id: str, count: int) -> list[Delivery]:
        """The ``count`` newest deliveries (by outbox order), newest first."""
        statement = (
            select(*_DELIVERY_COLUMNS)
            .where(self._deliveries_of(webhook_id))
            .order_by(_E.seq.desc())
            .limit(count)
        )
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(statement)).mappings().all()
        return [_delivery(r) for r in rows]

    async def delivery(self, webhook_id: str, delivery_id: str) -> Delivery | None:
        """One delivery of the webhook, or None."""
        statement = select(*_DELIVERY_COLUMNS).where(
            self._deliveries_of(webhook_id), _E.id == delivery_id
        )
        async with self._db.read(autocommit=True) as conn:
            row = (await conn.execute(statement)).mappings().first()
        return None if row is None else _delivery(row)

    async def add_redelivery(
        self, original: Delivery, delivery_id: str, payload: str, url: str
    ) -> bool:
        """A new pending outbox row: the original's invoice, kind and store, with its own
        id and body, to the webhook's URL as it is now. False when the original is gone
        (the retention removed it meanwhile)."""
        async with self._db.write() as conn:
            source = (
                (
                    await conn.execute(
                        select(_E.request_id, _E.kind, _E.tx_hash, _E.receipt_id).where(
                            self._deliveries_of(original.webhook_id), _E.id == original.id
                        )
                    )
                )
                .mappings()
                .first()
            )
            if source is None:
                return False
            await insert_events(
                conn,
                [
                    {
                        **source,
                        "id": delivery_id,
                        "store_id": self._store_id,
                        "callback_url": url,
                        "payload": payload,
                        "webhook_id": original.webhook_id,
                    }
                ],
            )
        return True
