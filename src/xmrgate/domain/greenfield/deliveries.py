"""One webhook delivery try: its body, the exact bytes sent, and ``BTCPay-Sig`` (§2.7, §1.E).

The outbox keeps the event (``events.InvoiceEvent``) and the invoice it is about; each try
gets its own ``deliveryId`` (a retry or a redelivery has a new one and points back with
``originalDeliveryId``), and its body is made, encoded once, signed over those very
bytes, and sent as they are.

The signature is not ``signatures.sign``: that one signs ``"<t>.<body>"`` and answers
``t=..,v1=..`` (our callbacks' scheme, with a timestamp against replays), while
BTCPay's plugins check ``sha256=<lowercase hex HMAC-SHA256(secret, body)>`` over the
body alone, compared byte for byte (PHP's ``hash_equals``), so the hex must be lower case.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xmrgate.domain.greenfield.events import InvoiceEvent

SIGNATURE_HEADER = "BTCPay-Sig"
_PREFIX = "sha256="


@dataclass(frozen=True, slots=True)
class DeliveryTry:
    """The identity of one try: ids, and the Unix second it is made."""

    delivery_id: str
    webhook_id: str
    original_delivery_id: str
    timestamp: int

    @property
    def is_redelivery(self) -> bool:
        """A try that is not the first: it has an id of its own (BTCPay's rule)."""
        return self.delivery_id != self.original_delivery_id


def first_try(delivery_id: str, webhook_id: str, timestamp: int) -> DeliveryTry:
    """The first try of an event: ``originalDeliveryId`` is its own id."""
    return DeliveryTry(delivery_id, webhook_id, delivery_id, timestamp)


def retry(previous: DeliveryTry, delivery_id: str, timestamp: int) -> DeliveryTry:
    """A later try (automatic retry or a redeliver): a new id, the original kept."""
    if delivery_id == previous.original_delivery_id:
        raise ValueError("a retry needs a delivery id of its own")
    return DeliveryTry(delivery_id, previous.webhook_id, previous.original_delivery_id, timestamp)


def delivery_body(
    attempt: DeliveryTry,
    event: InvoiceEvent,
    *,
    store_id: str,
    invoice_id: str,
    metadata: Mapping[str, Any],
) -> dict[str, Any]:
    """The body of one try: the common fields, the event's own, then the invoice's
    (the key order of BTCPay's bodies; JSON readers do not care, people reading logs do).
    ``metadata`` is the invoice's, as the merchant gave it."""
    return {
        "deliveryId": attempt.delivery_id,
        "webhookId": attempt.webhook_id,
        "originalDeliveryId": attempt.original_delivery_id,
        "isRedelivery": attempt.is_redelivery,
        "type": event.type.value,
        "timestamp": attempt.timestamp,
        **event.extras,
        "storeId": store_id,
        "invoiceId": invoice_id,
        "metadata": dict(metadata),
    }


def encode(body: Mapping[str, Any]) -> bytes:
    """The bytes sent: indented JSON as BTCPay sends it, UTF-8, non-ASCII kept as is.

    Decimals must already be strings (``amounts``): a float here would be a bug, and
    ``json`` refuses a ``Decimal``, so it cannot slip through as a number.
    """
    return json.dumps(body, indent=2, ensure_ascii=False, allow_nan=False).encode()


def sign(secret: str, body: bytes) -> str:
    """The ``BTCPay-Sig`` value: ``sha256=`` and the lower-case hex HMAC-SHA256 of
    ``body`` keyed with the UTF-8 bytes of ``secret``."""
    return _PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, header: str, body: bytes) -> bool:
    """Check a ``BTCPay-Sig`` value as a plugin does (constant time, exact match)."""
    return hmac.compare_digest(sign(secret, body).encode(), header.strip().encode())
