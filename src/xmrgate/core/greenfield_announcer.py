"""Greenfield webhooks' events: each invoice's changes announced once, in order.

An invoice's state is derived from its request's transfers at every read; what was
last *announced* is stored with it (``greenfield_invoices.announced``: the status, the
additional status and each payment's status). After every sync tick that changed
something, and every few seconds anyway (expiries and monitoring deadlines pass
without a tick saying so), each invoice still watched is read again; the difference
between what it is and what was announced makes its events, in BTCPay's order
(``domain/greenfield/events.py``): InvoiceCreated first, then the payments'
(InvoiceReceivedPayment, InvoicePaymentSettled), then the status changes
(InvoiceProcessing, InvoiceSettled, InvoiceExpired, ...).

The new announced state and one delivery per event and webhook that wants it (an
outbox row: ``events`` with ``webhook_id``, delivered by the callback worker with the
same durable retries, in order per request) are written in ONE transaction,
conditional on the announced state being still the one read: of two processes reading
the same change, one writes it, the other writes nothing. A crash before the commit
announces nothing, and the next round announces it; after it, nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from xmrgate.core.greenfield_invoices import InvoiceView
from xmrgate.core.store_gateways import StoreGateways
from xmrgate.domain.errors import NotFound, XmrgateError
from xmrgate.domain.greenfield.deliveries import delivery_body, encode, first_try
from xmrgate.domain.greenfield.events import (
    EventFilter,
    InvoiceEvent,
    payment_events,
    status_events,
)
from xmrgate.domain.greenfield.payments import PaymentStatus, after_expiration, payment_json
from xmrgate.domain.greenfield.states import AdditionalStatus, GreenfieldState, Status

log = logging.getLogger(__name__)

# How often every watched invoice is read again without a tick's wake-up.
ANNOUNCE_EVERY = 5.0
# The outbox kind of a delivery: "gf." and BTCPay's event type (events.kind: 32 chars).
KIND_PREFIX = "gf."


@dataclass(frozen=True, slots=True)
class WebhookTarget:
    """An enabled webhook of a store: where its deliveries go and which it wants."""

    id: str
    url: str
    events: EventFilter


@dataclass(frozen=True, slots=True)
class Watched:
    """An invoice still watched, what was last announced of it (None: nothing), and
    what tells whether it may have changed since without reading it whole
    (``may_have_changed``)."""

    invoice_id: str
    store_id: str
    announced: str | None
    # The merchant marked it (Settled or Invalid), announced or not yet.
    marked: bool
    # Its request has a transfer (whose confirmations move with every block).
    has_payments: bool
    expires_at: datetime | None
    monitoring_minutes: int


def may_have_changed(watched: Watched, now: datetime) -> bool:
    """Whether reading ``watched`` whole could find something to announce.

    An invoice waiting for its first payment changes only when money arrives (a
    transfer row), when it is marked, or when its expiry or monitoring deadline passes;
    every open invoice of a busy shop is such, so a round reads only those that may
    have changed (one statement for all), not each one of them (three statements).
    """
    if watched.announced is None or watched.marked or watched.has_payments:
        return True
    if watched.expires_at is None or now < watched.expires_at:
        return False
    before, _ = _parse(watched.announced)
    if before is not None and before.status is Status.NEW:
        return True  # expired since: InvoiceExpired is due
    # Expired unpaid: read once its monitoring is over, to stop watching it.
    return now >= watched.expires_at + timedelta(minutes=watched.monitoring_minutes)


class AnnouncementRepository(Protocol):
    """The announced states and the deliveries (``adapters/store/greenfield_announcements``)."""

    async def watched(self) -> list[Watched]:
        """Every invoice whose state may still change, with its request's facts."""
        ...

    async def webhooks(self, store_id: str) -> list[WebhookTarget]:
        """The store's enabled webhooks."""
        ...

    async def announce(
        self,
        invoice_id: str,
        before: str | None,
        after: str,
        watching: bool,
        deliveries: Sequence[dict[str, Any]],
    ) -> bool:
        """In one transaction: the announced state ``before`` -> ``after`` (only if it is
        still ``before``) and the deliveries inserted; False when another process was
        first (nothing written)."""
        ...


class InvoiceReader(Protocol):
    """One store's invoices and the account its subaddresses are of."""

    async def view(self, store_id: str, invoice_id: str) -> tuple[InvoiceView, int] | None:
        """The invoice now and its account index; None when its store is gone."""
        ...


class StoresInvoiceReader:
    """``InvoiceReader`` over the stores' Gateways (a disabled store's invoices are
    still announced: their money still arrives)."""

    def __init__(self, stores: StoreGateways) -> None:
        self._stores = stores

    async def view(self, store_id: str, invoice_id: str) -> tuple[InvoiceView, int] | None:
        """The invoice now, and its store's account (0 on a store's own wallet)."""
        store = self._stores.store(store_id)
        if store is None:
            return None
        gateway = self._stores.gateway(store_id, writes=False)
        return await gateway.greenfield.get(invoice_id), store.account_index


def announced_json(state: GreenfieldState, payments: dict[str, str]) -> str:
    """What is stored as announced (sorted keys: equal states are equal texts)."""
    return json.dumps(
        {"status": state.status.value, "additional": state.additional.value, "payments": payments},
        sort_keys=True,
    )


def _parse(text: str | None) -> tuple[GreenfieldState | None, dict[str, str]]:
    if text is None:
        return None, {}
    found = json.loads(text)
    state = GreenfieldState(Status(found["status"]), AdditionalStatus(found["additional"]))
    return state, dict(found.get("payments") or {})


def invoice_events(
    view: InvoiceView, account: int, announced: str | None
) -> tuple[list[InvoiceEvent], str, bool]:
    """The events since ``announced``, the new announced text, and whether to keep
    watching (Settled and Invalid are final, but for a mark; Expired until its
    monitoring deadline, after which a late payment is no longer announced)."""
    before, before_payments = _parse(announced)
    request = view.payment.request
    expires_at = None if request.expires_at is None else request.expires_at.timestamp()
    changes = status_events(before, view.state)
    events = changes[:1] if before is None else []
    payments: dict[str, str] = {}
    for transfer in view.payment.transfers:
        shown = payment_json(
            transfer,
            account=account,
            destination=request.address,
            chain_height=view.payment.chain_height,
            required=view.invoice.confirmations,
        )
        status = PaymentStatus(shown["status"])
        old = before_payments.get(shown["id"])
        payments[shown["id"]] = status.value
        events += payment_events(
            None if old is None else PaymentStatus(old),
            status,
            shown,
            after_expiration=after_expiration(transfer, expires_at),
        )
    events += changes[1:] if before is None else changes
    now_status = view.state.status
    monitoring_over = view.monitoring_expires_at is not None and (
        datetime.now(UTC) >= view.monitoring_expires_at
    )
    watching = not (
        now_status in (Status.SETTLED, Status.INVALID)
        or (now_status is Status.EXPIRED and monitoring_over)
    )
    return events, announced_json(view.state, payments), watching


def delivery_rows(
    view: InvoiceView, events: Sequence[InvoiceEvent], webhooks: Sequence[WebhookTarget]
) -> list[dict[str, Any]]:
    """One outbox row per event and webhook that wants it, its body the exact bytes sent."""
    invoice = view.invoice
    metadata = json.loads(invoice.metadata)
    now = int(time.time())
    rows: list[dict[str, Any]] = []
    for event in events:
        for webhook in webhooks:
            if not webhook.events.wants(event.type):
                continue
            delivery_id = secrets.token_urlsafe(16)
            body = delivery_body(
                first_try(delivery_id, webhook.id, now),
                event,
                store_id=invoice.store_id,
                invoice_id=invoice.id,
                metadata=metadata,
            )
            rows.append(
                {
                    "id": delivery_id,
                    "request_id": invoice.request_id,
                    "kind": KIND_PREFIX + event.type.value,
                    "tx_hash": "",
                    "callback_url": webhook.url,
                    "payload": encode(body).decode(),
                    "store_id": invoice.store_id,
                    "webhook_id": webhook.id,
                }
            )
    return rows


class GreenfieldAnnouncer:
    """Announces every watched invoice's changes to its store's webhooks."""

    def __init__(
        self,
        repo: AnnouncementRepository,
        invoices: InvoiceReader,
        *,
        delivered: Callable[[], None] = lambda: None,
        wake: asyncio.Event | None = None,
        every: float = ANNOUNCE_EVERY,
    ) -> None:
        """``delivered`` wakes the callback worker once deliveries were written; ``wake``
        is set by whoever saw something change (a sync tick that wrote events)."""
        self._repo = repo
        self._invoices = invoices
        self._delivered = delivered
        self._every = every
        self._wake = wake or asyncio.Event()

    def wake(self) -> None:
        """Something changed (a sync tick wrote events, a mark): read again now."""
        self._wake.set()

    async def announce_all(self) -> int:
        """One round over the watched invoices that may have changed; the deliveries
        written."""
        written = 0
        now = datetime.now(UTC)
        for watched in await self._repo.watched():
            if not may_have_changed(watched, now):
                continue
            try:
                written += await self._announce(watched)
            except NotFound:
                continue  # its request was deleted: the row goes with it
        if written:
            self._delivered()
        return written

    async def _announce(self, watched: Watched) -> int:
        found = await self._invoices.view(watched.store_id, watched.invoice_id)
        if found is None:
            return 0
        view, account = found
        events, after, watching = invoice_events(view, account, watched.announced)
        if after == watched.announced and watching:
            return 0
        rows = delivery_rows(view, events, await self._repo.webhooks(watched.store_id))
        if await self._repo.announce(watched.invoice_id, watched.announced, after, watching, rows):
            return len(rows)
        return 0

    async def run(self, stop: asyncio.Event) -> None:
        """Announce after each wake-up and every ``every`` seconds, until ``stop``."""
        while not stop.is_set():
            self._wake.clear()
            try:
                await self.announce_all()
            except XmrgateError as exc:
                log.warning("greenfield: announcing invoices failed: %s", exc.message)
            waiter = asyncio.create_task(self._wake.wait())
            stopper = asyncio.create_task(stop.wait())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED),
                    timeout=self._every,
                )
            waiter.cancel()
            stopper.cancel()
