"""Greenfield store webhooks: where a shop is told of its invoices.

A webhook is a URL of the shop, a secret (the key of ``BTCPay-Sig``), on or off,
whether failed deliveries are retried, and which event types it wants. This use case
registers, reads, changes and deletes one store's webhooks, and reads and redelivers
their deliveries; *when* an invoice's events happen and which deliveries they make is
decided elsewhere (the announcer), and sending them is the outbox worker's job.

A delivery is one row of the outbox (``events``, the same durable retries as our
callbacks): its id is the ``deliveryId``, its payload the exact JSON body sent. A
redeliver is a new row, pending at once, whose body is the original's with a new
``deliveryId``, ``isRedelivery`` true, ``originalDeliveryId`` kept and the time of now
(BTCPay's rule, ``domain/greenfield/deliveries.retry``).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from xmrgate.core.ports import UrlGuard
from xmrgate.domain.errors import InvalidInput, NotFound
from xmrgate.domain.greenfield.deliveries import DeliveryTry, encode, retry
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.events import EventFilter

# Longer is no URL a shop means (and it is stored and sent on every delivery).
MAX_URL = 2048
MAX_SECRET = 512
# The most deliveries one list answers (BTCPay's ``count`` has no bound; ours does).
MAX_COUNT = 500


class WebhookNotFound(NotFound):
    """No webhook of that id in this store (Greenfield: 404 ``webhook-not-found``)."""

    def __init__(self) -> None:
        super().__init__("The webhook was not found")


class DeliveryNotFound(NotFound):
    """No delivery of that id for this webhook (404 ``webhookdelivery-not-found``)."""

    def __init__(self) -> None:
        super().__init__("The webhook delivery was not found")


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a store (a row of ``greenfield_webhooks``)."""

    id: str
    store_id: str
    url: str
    secret: str
    enabled: bool
    automatic_redelivery: bool
    events: EventFilter
    created_at: datetime


@dataclass(frozen=True, slots=True)
class WebhookInput:
    """A create or update (``POST``/``PUT``) once parsed; ``secret`` None or empty: a
    new one on create, the old one kept on update (BTCPay's rule, §2.6)."""

    url: str
    secret: str | None = None
    enabled: bool = True
    automatic_redelivery: bool = True
    events: EventFilter = field(default_factory=EventFilter)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivery of a webhook: its outbox row as far as Greenfield shows it."""

    id: str
    webhook_id: str
    created_at: datetime
    # The outbox's status (``adapters/store/outbox``: pending, delivered, failed).
    status: str
    attempts: int
    # The last try's HTTP status (None: no answer, or not tried yet) and error text.
    last_status: int | None
    last_error: str | None
    # The exact JSON body text sent.
    payload: str


class WebhookRepository(Protocol):
    """One store's webhooks and their deliveries (``adapters/store/greenfield_webhooks``).

    Every read and write is scoped by the store the repository was made for.
    """

    async def insert(self, webhook: Webhook) -> None:
        """Add a webhook."""
        ...

    async def all(self) -> list[Webhook]:
        """The store's webhooks, oldest first."""
        ...

    async def get(self, webhook_id: str) -> Webhook | None:
        """The store's webhook of that id, or None."""
        ...

    async def update(self, webhook: Webhook) -> bool:
        """Replace the webhook's fields (not its id, store or creation); False if absent."""
        ...

    async def delete(self, webhook_id: str) -> bool:
        """Delete the webhook and its pending deliveries in one transaction (a deleted
        webhook is never called again); its past deliveries stay. False if absent."""
        ...

    async def deliveries(self, webhook_id: str, count: int) -> list[Delivery]:
        """The webhook's ``count`` newest deliveries, newest first."""
        ...

    async def delivery(self, webhook_id: str, delivery_id: str) -> Delivery | None:
        """One delivery of the webhook, or None."""
        ...

    async def add_redelivery(
        self, original: Delivery, delivery_id: str, payload: str, url: str
    ) -> bool:
        """A new pending delivery like ``original`` (same invoice, same kind of event)
        with its own id, body and the webhook's current URL; False if the original is
        gone."""
        ...


def new_id() -> str:
    """22 characters from 16 random bytes: as long as BTCPay's Base58 ids and secrets."""
    return secrets.token_urlsafe(16)


def check_url_form(url: str) -> None:
    """An absolute http or https URL with a host, else 422 at ``url``."""
    if len(url) > MAX_URL:
        raise FieldError("url", f"url is longer than {MAX_URL} characters", url)
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        raise FieldError("url", "Invalid Url: not a URL", url) from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise FieldError("url", "Invalid Url: an absolute http or https URL is needed", url)


def redelivery_body(payload: str, delivery_id: str, timestamp: int) -> str:
    """The original body with a new ``deliveryId``, ``isRedelivery`` true, the original's
    ``originalDeliveryId`` and ``timestamp`` now; every other field as it was, in order."""
    body: dict[str, Any] = json.loads(payload)
    before = DeliveryTry(
        delivery_id=str(body["deliveryId"]),
        webhook_id=str(body["webhookId"]),
        original_delivery_id=str(body.get("originalDeliveryId") or body["deliveryId"]),
        timestamp=int(body.get("timestamp", 0)),
    )
    after = retry(before, delivery_id, timestamp)
    body.update(
        deliveryId=after.delivery_id,
        webhookId=after.webhook_id,
        originalDeliveryId=after.original_delivery_id,
        isRedelivery=after.is_redelivery,
        timestamp=after.timestamp,
    )
    return encode(body).decode()


class GreenfieldWebhooks:
    """One store's webhooks: register, read, change, delete; deliveries and redeliver."""

    def __init__(
        self,
        repo: WebhookRepository,
        url_guard: UrlGuard,
        *,
        store_id: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._repo = repo
        self._url_guard = url_guard
        self._store_id = store_id
        self._clock = clock

    async def _check_url(self, url: str) -> None:
        check_url_form(url)
        try:
            # The SSRF guard: deliveries are POSTed from inside the gateway's network.
            await self._url_guard.check(url, "url")
        except InvalidInput as exc:
            raise FieldError("url", exc.message, url) from None

    async def create(self, given: WebhookInput) -> Webhook:
        """A new webhook; its secret is the one given, or a new one. The answer is the only
        place the secret is shown (the route puts it in the create answer only)."""
        await self._check_url(given.url)
        webhook = Webhook(
            id=new_id(),
            store_id=self._store_id,
            url=given.url,
            secret=given.secret or new_id(),
            enabled=given.enabled,
            automatic_redelivery=given.automatic_redelivery,
            events=given.events,
            created_at=self._clock(),
        )
        await self._repo.insert(webhook)
        return webhook

    async def listing(self) -> list[Webhook]:
        """The store's webhooks, oldest first."""
        return await self._repo.all()

    async def get(self, webhook_id: str) -> Webhook:
        """One webhook of the store (``WebhookNotFound`` otherwise)."""
        found = await self._repo.get(webhook_id)
        if found is None:
            raise WebhookNotFound
        return found

    async def update(self, webhook_id: str, given: WebhookInput) -> Webhook:
        """PUT: every field replaced, except an empty or absent secret (the old one kept)."""
        current = await self.get(webhook_id)
        await self._check_url(given.url)
        changed = replace(
            current,
            url=given.url,
            secret=given.secret or current.secret,
            enabled=given.enabled,
            automatic_redelivery=given.automatic_redelivery,
            events=given.events,
        )
        if not await self._repo.update(changed):  # deleted meanwhile
            raise WebhookNotFound
        return changed

    async def delete(self, webhook_id: str) -> None:
        """Delete the webhook and its deliveries not sent yet (404 if unknown)."""
        if not await self._repo.delete(webhook_id):
            raise WebhookNotFound

    async def deliveries(self, webhook_id: str, count: int) -> list[Delivery]:
        """The webhook's ``count`` newest deliveries (at most ``MAX_COUNT``), newest first."""
        await self.get(webhook_id)
        return await self._repo.deliveries(webhook_id, max(0, min(count, MAX_COUNT)))

    async def delivery(self, webhook_id: str, delivery_id: str) -> Delivery:
        """One delivery (``WebhookNotFound``, then ``DeliveryNotFound``)."""
        await self.get(webhook_id)
        found = await self._repo.delivery(webhook_id, delivery_id)
        if found is None:
            raise DeliveryNotFound
        return found

    async def redeliver(self, webhook_id: str, delivery_id: str) -> str:
        """Send a delivery again, as a new delivery pending at once; its id."""
        webhook = await self.get(webhook_id)
        original = await self.delivery(webhook_id, delivery_id)
        fresh = new_id()
        payload = redelivery_body(original.payload, fresh, int(self._clock().timestamp()))
        if not await self._repo.add_redelivery(original, fresh, payload, webhook.url):
            raise DeliveryNotFound
        return fresh
