"""Webhook delivery bodies and BTCPay-Sig (``xmrgate.domain.greenfield.deliveries``; §2.7)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from xmrgate.domain.greenfield.deliveries import (
    delivery_body,
    encode,
    first_try,
    retry,
    sign,
    verify,
)
from xmrgate.domain.greenfield.events import EventType, InvoiceEvent, payment_events
from xmrgate.domain.greenfield.payments import PaymentStatus

COMMON = {
    "deliveryId", "webhookId", "originalDeliveryId", "isRedelivery", "type", "timestamp",
    "storeId", "invoiceId", "metadata",
}  # fmt: skip
PAYMENT = {
    "id": "ab#0#7",
    "receivedDate": 1750000000,
    "value": "0.08123456789",
    "fee": "0",
    "status": "Processing",
    "destination": "8...",
}


def body_of(event: InvoiceEvent, attempt_id: str = "D1") -> dict[str, object]:
    return delivery_body(
        first_try(attempt_id, "W1", 1_750_000_000),
        event,
        store_id="shop",
        invoice_id="INV",
        metadata={"orderId": "123"},
    )


def test_a_first_delivery_of_a_payment_event() -> None:
    (event,) = payment_events(None, PaymentStatus.PROCESSING, PAYMENT, after_expiration=False)
    body = body_of(event)
    assert body == {
        "deliveryId": "D1",
        "webhookId": "W1",
        "originalDeliveryId": "D1",
        "isRedelivery": False,
        "type": "InvoiceReceivedPayment",
        "timestamp": 1_750_000_000,
        "afterExpiration": False,
        "paymentMethodId": "XMR-CHAIN",
        "payment": PAYMENT,
        "storeId": "shop",
        "invoiceId": "INV",
        "metadata": {"orderId": "123"},
    }


@pytest.mark.parametrize(
    ("event", "extras"),
    [
        (InvoiceEvent(EventType.CREATED), set()),
        (InvoiceEvent(EventType.PROCESSING, {"overPaid": True}), {"overPaid"}),
        (
            InvoiceEvent(EventType.SETTLED, {"manuallyMarked": False, "overPaid": False}),
            {"manuallyMarked", "overPaid"},
        ),
        (InvoiceEvent(EventType.INVALID, {"manuallyMarked": True}), {"manuallyMarked"}),
        (InvoiceEvent(EventType.EXPIRED, {"partiallyPaid": True}), {"partiallyPaid"}),
        (InvoiceEvent(EventType.REFUND, {"pullPaymentId": "pp1"}), {"pullPaymentId"}),
    ],
)
def test_each_type_carries_the_common_fields_and_its_own(
    event: InvoiceEvent, extras: set[str]
) -> None:
    assert set(body_of(event)) == COMMON | extras


def test_a_retry_has_its_own_id_and_points_back() -> None:
    first = first_try("D1", "W1", 100)
    again = retry(first, "D2", 160)
    assert (again.delivery_id, again.original_delivery_id, again.timestamp) == ("D2", "D1", 160)
    assert again.is_redelivery and not first.is_redelivery
    third = retry(again, "D3", 220)
    assert third.original_delivery_id == "D1"
    with pytest.raises(ValueError):
        retry(again, "D1", 300)
    body = delivery_body(
        third, InvoiceEvent(EventType.CREATED), store_id="s", invoice_id="i", metadata={}
    )
    assert body["isRedelivery"] is True and body["originalDeliveryId"] == "D1"


def test_the_bytes_are_indented_utf8_json() -> None:
    body = body_of(InvoiceEvent(EventType.CREATED)) | {"metadata": {"buyerName": "Jürgen"}}
    raw = encode(body)
    assert json.loads(raw) == body
    assert b'\n  "deliveryId": "D1",' in raw
    assert "Jürgen".encode() in raw  # not \u00fc


@pytest.mark.parametrize("bad", [Decimal("1.5"), float("nan")])
def test_a_number_that_should_be_a_string_cannot_slip_through(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        encode({"value": bad})


def test_the_signature_is_lowercase_hex_hmac_sha256_of_the_body() -> None:
    # A published HMAC-SHA256 vector (key "key", the quick brown fox).
    body = b"The quick brown fox jumps over the lazy dog"
    assert sign("key", body) == (
        "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
    )


def test_the_signature_holds_for_the_exact_bytes_only() -> None:
    body = body_of(InvoiceEvent(EventType.CREATED))
    raw = encode(body)
    header = sign("s3cret", raw)
    assert verify("s3cret", header, raw)
    assert not verify("other", header, raw)
    assert not verify("s3cret", header.upper(), raw)  # PHP's hash_equals: lower case only
    assert not verify("s3cret", header, raw.replace(b'"D1"', b'"D2"'))
    # the same JSON with other whitespace is other bytes: the receiver checks the bytes
    assert not verify("s3cret", header, json.dumps(body).encode())
    assert sign("sécret", raw) != sign("secret", raw)  # the secret's UTF-8 bytes are the key
