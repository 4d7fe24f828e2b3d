"""``/api/v1/stores/{storeId}/webhooks``: a store's webhooks and their deliveries (§2.6, §2.7).

Thin routes over ``core.greenfield_webhooks.GreenfieldWebhooks`` (the store's Gateway
part), all under the one permission ``btcpay.store.webhooks.canmodifywebhooks``. 200 on
every success, DELETE included (the PHP client refuses 201 and 204).

Shapes, as BTCPay's models and the PHP client's getters read them:

- ``StoreWebhookData``: ``{id, enabled, automaticRedelivery, url, authorizedEvents:
  {everything, specificEvents}}``, and ``secret`` in the create answer only;
- ``WebhookDeliveryData``: ``{id, timestamp (Unix s), httpCode (int|null), errorMessage
  (string|null), status}``. ``status`` is one of BTCPay's three: ``HttpSuccess`` (a 2xx
  came back), ``HttpError`` (another HTTP status came back), ``Failed`` (no answer, or
  not tried yet: BTCPay has no pending state, and ``Failed`` is its default). A
  delivery not tried yet says so in ``errorMessage``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Response

from xmrgate.core.greenfield_webhooks import (
    MAX_SECRET,
    Delivery,
    DeliveryNotFound,
    Webhook,
    WebhookInput,
    WebhookNotFound,
)
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.events import parse_event_filter
from xmrgate.domain.greenfield.permissions import MODIFY_WEBHOOKS
from xmrgate.web.greenfield import PREFIX
from xmrgate.web.greenfield.access import StoreAccess, require_permission
from xmrgate.web.greenfield.errors import KindNotFound

router = APIRouter(prefix=PREFIX, include_in_schema=False)
Modifying = Annotated[StoreAccess, require_permission(MODIFY_WEBHOOKS)]
# The outbox's statuses (``adapters/store/outbox``) as far as this module tells them apart.
_DELIVERED = "delivered"
_PENDING = "pending"
NOT_TRIED = "Not delivered yet: pending"
_HOOK = "/stores/{storeId}/webhooks/{webhookId}"
_DELIVERY = _HOOK + "/deliveries/{deliveryId}"


@contextmanager
def _found() -> Iterator[None]:
    """The use case's not-found as Greenfield's 404 codes: on a delivery's path, an
    unknown webhook is still ``webhook-not-found`` (the path alone cannot tell)."""
    try:
        yield
    except WebhookNotFound as exc:
        raise KindNotFound("webhook", exc.message) from None
    except DeliveryNotFound as exc:
        raise KindNotFound("webhookdelivery", exc.message) from None


def _flag(body: dict[str, Any], name: str) -> bool:
    """An optional boolean field; absent or null is true (BTCPay's defaults for both)."""
    value = body.get(name)
    if value is None:
        return True
    if not isinstance(value, bool):
        raise FieldError(name, f"{name} must be true or false", value)
    return value


def parse_webhook(body: object) -> WebhookInput:
    """The body of a create or a PUT (each field checked, 422 at its path)."""
    if not isinstance(body, dict):
        raise FieldError("", "the body must be a JSON object", body)
    url = body.get("url")
    if not isinstance(url, str) or not url.strip():
        raise FieldError("url", "Invalid Url: url is required", url)
    secret = body.get("secret")
    if secret is not None and not isinstance(secret, str):
        raise FieldError("secret", "secret must be a string", secret)
    if secret is not None and len(secret) > MAX_SECRET:
        raise FieldError("secret", f"secret is longer than {MAX_SECRET} characters", secret)
    return WebhookInput(
        url=url.strip(),
        secret=secret or None,
        enabled=_flag(body, "enabled"),
        automatic_redelivery=_flag(body, "automaticRedelivery"),
        events=parse_event_filter(body.get("authorizedEvents")),
    )


def webhook_data(webhook: Webhook, *, with_secret: bool = False) -> dict[str, Any]:
    """``StoreWebhookData``; the secret only when asked (the create answer)."""
    data: dict[str, Any] = {
        "id": webhook.id,
        "enabled": webhook.enabled,
        "automaticRedelivery": webhook.automatic_redelivery,
        "url": webhook.url,
        "authorizedEvents": webhook.events.to_json(),
    }
    if with_secret:
        data["secret"] = webhook.secret
    return data


def delivery_status(delivery: Delivery) -> str:
    """BTCPay's ``WebhookDeliveryStatus`` of one delivery (module docstring)."""
    if delivery.status == _DELIVERED:
        return "HttpSuccess"
    return "Failed" if delivery.last_status is None else "HttpError"


def delivery_data(delivery: Delivery) -> dict[str, Any]:
    """``WebhookDeliveryData``."""
    error = delivery.last_error
    if delivery.status == _PENDING and delivery.attempts == 0:
        error = NOT_TRIED
    elif error is None and delivery.status != _DELIVERED:
        error = "Failed" if delivery.last_status is None else f"HTTP {delivery.last_status}"
    return {
        "id": delivery.id,
        "timestamp": int(delivery.created_at.timestamp()),
        "httpCode": delivery.last_status,
        "errorMessage": None if delivery.status == _DELIVERED else error,
        "status": delivery_status(delivery),
    }


@router.post("/stores/{storeId}/webhooks")
async def create_webhook(access: Modifying, body: Annotated[Any, Body()] = None) -> dict[str, Any]:
    """A new webhook; the answer carries its secret (given or generated), once."""
    webhook = await access.gateway.webhooks.create(parse_webhook(body))
    return webhook_data(webhook, with_secret=True)


@router.get("/stores/{storeId}/webhooks")
async def list_webhooks(access: Modifying) -> list[dict[str, Any]]:
    """The store's webhooks, without their secrets."""
    return [webhook_data(w) for w in await access.gateway.webhooks.listing()]


@router.get(_HOOK)
async def get_webhook(webhookId: str, access: Modifying) -> dict[str, Any]:
    """One webhook of the store, without its secret."""
    with _found():
        return webhook_data(await access.gateway.webhooks.get(webhookId))


@router.put(_HOOK)
async def update_webhook(
    webhookId: str, access: Modifying, body: Annotated[Any, Body()] = None
) -> dict[str, Any]:
    """Replace the webhook's fields; an empty or null secret keeps the old one."""
    given = parse_webhook(body)
    with _found():
        return webhook_data(await access.gateway.webhooks.update(webhookId, given))


@router.delete(_HOOK)
async def delete_webhook(webhookId: str, access: Modifying) -> dict[str, Any]:
    """Delete the webhook and its deliveries not sent yet; ``{}`` (the client wants 200)."""
    with _found():
        await access.gateway.webhooks.delete(webhookId)
    return {}


@router.get(_HOOK + "/deliveries")
async def list_deliveries(
    webhookId: str,
    access: Modifying,
    count: Annotated[int, Query(ge=0)] = 50,
) -> list[dict[str, Any]]:
    """The webhook's ``count`` newest deliveries, newest first."""
    with _found():
        found = await access.gateway.webhooks.deliveries(webhookId, count)
    return [delivery_data(d) for d in found]


@router.get(_DELIVERY)
async def get_delivery(webhookId: str, deliveryId: str, access: Modifying) -> dict[str, Any]:
    """One delivery of the webhook."""
    with _found():
        return delivery_data(await access.gateway.webhooks.delivery(webhookId, deliveryId))


@router.get(_DELIVERY + "/request")
async def get_delivery_request(webhookId: str, deliveryId: str, access: Modifying) -> Response:
    """The delivery's body, byte for byte as it is (or was) sent."""
    with _found():
        found = await access.gateway.webhooks.delivery(webhookId, deliveryId)
    return Response(found.payload.encode(), media_type="application/json")


@router.post(_DELIVERY + "/redeliver")
async def redeliver(webhookId: str, deliveryId: str, access: Modifying) -> str:
    """Send the delivery again as a new one, pending at once; a JSON string, its id."""
    with _found():
        return await access.gateway.webhooks.redeliver(webhookId, deliveryId)
