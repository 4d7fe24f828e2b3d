"""What was announced of each Greenfield invoice, and its deliveries, in SQL.

Implements ``core.greenfield_announcer.AnnouncementRepository`` (the announced state and
the deliveries written in one transaction, conditional on the state read) and the
callback worker's ``WebhookSecrets`` (a delivery is signed with its webhook's secret).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import exists, select, update

from xmrgate.adapters.store.db import Database, as_utc
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.tables import (
    greenfield_invoices,
    greenfield_webhooks,
    payment_requests,
    transfers,
)
from xmrgate.core.greenfield_announcer import Watched, WebhookTarget
from xmrgate.domain.greenfield.events import EventFilter, EventType

_G = greenfield_invoices.c
_W = greenfield_webhooks.c
_R = payment_requests.c
_T = transfers.c


def event_filter(everything: bool, specific: str) -> EventFilter:
    """A stored ``authorizedEvents`` (unknown names, of an older version, are dropped)."""
    known = {t.value: t for t in EventType}
    return EventFilter(everything, tuple(known[n] for n in specific.split() if n in known))


class SqlAnnouncements:
    """Every store's watched invoices and enabled webhooks (one process announces for
    all; the conditional write makes a second process harmless)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def watched(self) -> list[Watched]:
        """Invoices whose state may still change (``ix_greenfield_invoices_watching``),
        with what tells whether they did, in one statement (an invoice whose request
        is gone is not watched: its row goes with it)."""
        paid = exists().where(_T.request_id == _G.request_id)
        statement = (
            select(
                _G.id,
                _G.store_id,
                _G.announced,
                _G.marked,
                paid,
                _R.expires_at,
                _G.monitoring_minutes,
            )
            .join_from(greenfield_invoices, payment_requests, _R.id == _G.request_id)
            .where(_G.watching.is_(True))
        )
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(statement.order_by(_G.created_at, _G.id))).all()
        return [
            Watched(
                invoice_id=row[0],
                store_id=row[1],
                announced=row[2],
                marked=row[3] is not None,
                has_payments=bool(row[4]),
                expires_at=None if row[5] is None else as_utc(row[5]),
                monitoring_minutes=row[6],
            )
            for row in rows
        ]

    async def webhooks(self, store_id: str) -> list[WebhookTarget]:
        """The store's enabled webhooks, oldest first."""
        statement = (
            select(_W.id, _W.url, _W.everything, _W.specific_events)
            .where(_W.store_id == store_id, _W.enabled.is_(True))
            .order_by(_W.created_at, _W.id)
        )
        async with self._db.read(autocommit=True) as conn:
            rows = (await conn.execute(statement)).all()
        return [WebhookTarget(r[0], r[1], event_filter(bool(r[2]), r[3])) for r in rows]

    async def announce(
        self,
        invoice_id: str,
        before: str | None,
        after: str,
        watching: bool,
        deliveries: Sequence[dict[str, Any]],
    ) -> bool:
        """The state moved on only if it is still ``before``, and the deliveries with it."""
        still = _G.announced.is_(None) if before is None else _G.announced == before
        async with self._db.write() as conn:
            changed = await conn.execute(
                update(greenfield_invoices)
                .where(_G.id == invoice_id, still)
                .values(announced=after, watching=watching)
            )
            if changed.rowcount != 1:
                return False
            await insert_events(conn, deliveries)
        return True


class SqlWebhookSecrets:
    """The secret of a webhook and whether it retries (``core.callbacks.WebhookSecrets``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def signing(self, webhook_id: str) -> tuple[str, bool] | None:
        """(secret, automatic redelivery), or None when the webhook was deleted."""
        statement = select(_W.secret, _W.automatic_redelivery).where(_W.id == webhook_id)
        async with self._db.read(autocommit=True) as conn:
            row = (await conn.execute(statement)).first()
        return None if row is None else (row[0], bool(row[1]))
