"""Greenfield store webhooks on regtest and both databases: the webhook
a WooCommerce plugin registers (no secret: one is made and answered once), an invoice
paid on regtest, and its events delivered by the outbox, each once, in order, signed
``BTCPay-Sig: sha256=<hex HMAC of the exact bytes>`` with that secret; the receiver down,
then up: the event comes later, once; a redelivery is a new delivery of the same event.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import BACKENDS
from tests.integration.receiver import Received, Receiver, start_receiver
from testsupport.gateway import Gateway, close_gateway, start_gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

OPERATOR = "greenfield-webhooks-operator-0123456789"
OPERATOR_AUTH = {"Authorization": f"Bearer {OPERATOR}"}
WOO_EVENTS = [
    "InvoiceReceivedPayment",
    "InvoicePaymentSettled",
    "InvoiceProcessing",
    "InvoiceExpired",
    "InvoiceSettled",
    "InvoiceInvalid",
]
WOO_PERMISSIONS = [
    "btcpay.store.canviewinvoices",
    "btcpay.store.cancreateinvoice",
    "btcpay.store.canviewstoresettings",
    "btcpay.store.canmodifyinvoices",
    "btcpay.store.webhooks.canmodifywebhooks",
]


@pytest.fixture(scope="module", params=BACKENDS)
def gateway(
    request: pytest.FixtureRequest, devnet: Devnet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    args = ["--api-key", OPERATOR, "--callback-allow", "127.0.0.1", "--callback-retry-base", "1s"]
    workdir: Path = tmp_path_factory.mktemp(f"greenfield-hooks-{request.param}")
    gw = start_gateway(devnet, request.param, workdir, args)
    try:
        yield gw
    finally:
        close_gateway(gw)


def _ok(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()


def _plugin_key(gw: Gateway) -> dict[str, str]:
    made = _ok(
        gw.post(
            "/stores/default/keys", json={"permissions": WOO_PERMISSIONS}, headers=OPERATOR_AUTH
        )
    )
    return {"Authorization": f"token {made['key']}"}


def _webhook(gw: Gateway, key: dict[str, str], url: str, events: list[str] | None) -> Any:
    body = {
        "enabled": True,
        "automaticRedelivery": True,
        "url": url,
        "authorizedEvents": {"everything": events is None, "specificEvents": events or []},
    }
    made = _ok(gw.post("/api/v1/stores/default/webhooks", json=body, headers=key))
    assert isinstance(made["secret"], str) and len(made["secret"]) >= 16
    return made


def _signed(secret: str, received: Received) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), received.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(received.headers.get("btcpay-sig", ""), expected)


def _of(receiver: Receiver, invoice_id: str) -> list[Received]:
    return [r for r in receiver.delivered() if r.json.get("invoiceId") == invoice_id]


@dataclass
class Clock:
    """Invoices made when the module starts, checked by its last test: a minute to pay
    passes while the other tests run (``expirationMinutes`` is at least 1)."""

    receiver: Receiver
    secret: str
    partial: str  # half paid at once, then expired: Expired, PaidPartial
    late: str  # paid after its expiry: Expired, PaidLate
    over: str  # paid more than asked: Settled, PaidOver
    late_address: str
    late_due: int


@pytest.fixture(scope="module")
def clock(gateway: Gateway, devnet: Devnet) -> Iterator[Clock]:
    key = _plugin_key(gateway)
    shop = start_receiver()
    try:
        hook = _webhook(gateway, key, shop.url, None)

        def invoice(amount: str, minutes: int | None) -> tuple[str, str, int]:
            body = {"amount": amount, "currency": "XMR", "checkout": {"expirationMinutes": minutes}}
            made = _ok(gateway.post("/api/v1/stores/default/invoices", json=body, headers=key))
            [method] = _ok(
                gateway.get(
                    f"/api/v1/stores/default/invoices/{made['id']}/payment-methods", headers=key
                )
            )
            return made["id"], method["destination"], int(Decimal(method["due"]) * 10**12)

        partial, partial_address, partial_due = invoice("0.2", 1)
        late, late_address, late_due = invoice("0.2", 1)
        over, over_address, over_due = invoice("0.2", None)
        devnet.pay_many([(partial_address, partial_due // 2), (over_address, 2 * over_due)], 1)
        yield Clock(shop, hook["secret"], partial, late, over, late_address, late_due)
    finally:
        shop.close()


def test_a_paid_invoices_events_reach_the_shop_signed_and_in_order(
    gateway: Gateway, devnet: Devnet, receiver: Receiver, clock: Clock
) -> None:
    key = _plugin_key(gateway)
    hook = _webhook(gateway, key, receiver.url, WOO_EVENTS)
    # B3: the plugin reads its webhook back (no secret shown again).
    again = _ok(gateway.get(f"/api/v1/stores/default/webhooks/{hook['id']}", headers=key))
    assert again["id"] == hook["id"] and receiver.url in again["url"] and "secret" not in again
    invoice = _ok(
        gateway.post(
            "/api/v1/stores/default/invoices",
            json={"amount": "0.25", "currency": "XMR", "metadata": {"orderId": "77"}},
            headers=key,
        )
    )
    [method] = _ok(
        gateway.get(f"/api/v1/stores/default/invoices/{invoice['id']}/payment-methods", headers=key)
    )
    due = int(Decimal(method["due"]) * 10**12)
    tx_hash = devnet.pay(method["destination"], due, mine_blocks=1)
    receiver.wait_for(
        lambda _d: any(r.json["type"] == "InvoiceSettled" for r in _of(receiver, invoice["id"])),
        timeout=60,
        what="InvoiceSettled",
    )
    got = _of(receiver, invoice["id"])
    types = [r.json["type"] for r in got]
    # Each once; the payment's before the invoice's, Settled last (InvoiceCreated is not
    # in the plugin's list).
    assert sorted(types) == sorted(
        ["InvoiceReceivedPayment", "InvoicePaymentSettled", "InvoiceProcessing", "InvoiceSettled"]
    ), types
    assert types.index("InvoiceReceivedPayment") < types.index("InvoiceProcessing")
    assert types[-1] == "InvoiceSettled"
    assert all(_signed(hook["secret"], r) for r in got)
    assert len({r.json["deliveryId"] for r in got}) == len(got)
    settled = got[-1].json
    assert settled["storeId"] == "default" and settled["metadata"] == {"orderId": "77"}
    assert settled["webhookId"] == hook["id"] and settled["manuallyMarked"] is False
    payment = next(r.json for r in got if r.json["type"] == "InvoiceReceivedPayment")["payment"]
    assert payment["id"].startswith(f"{tx_hash}#0#")
    # The invoice says the same.
    found = _ok(gateway.get(f"/api/v1/stores/default/invoices/{invoice['id']}", headers=key))
    assert found["status"] == "Settled"


def test_a_receiver_that_is_down_gets_the_event_later_once(gateway: Gateway) -> None:
    key = _plugin_key(gateway)
    down = start_receiver(listening=False)
    hook = _webhook(gateway, key, down.url, None)  # everything: InvoiceCreated too
    try:
        invoice = _ok(
            gateway.post(
                "/api/v1/stores/default/invoices",
                json={"amount": "0.5", "currency": "XMR"},
                headers=key,
            )
        )
        deliveries_url = f"/api/v1/stores/default/webhooks/{hook['id']}/deliveries"
        gateway.wait_for(
            "a failed try of InvoiceCreated",
            lambda: _ok(gateway.get(deliveries_url, headers=key)),
            lambda found: bool(found) and found[0]["status"] != "HttpSuccess",
            timeout=30,
        )
        down.listen()
        down.wait_for(
            lambda _d: len(_of(down, invoice["id"])) == 1, timeout=60, what="InvoiceCreated"
        )
        [created] = _of(down, invoice["id"])
        assert created.json["type"] == "InvoiceCreated" and _signed(hook["secret"], created)
        assert created.json["isRedelivery"] is False
        # A redelivery: a new delivery id, the original named, the same event.
        original = created.json["deliveryId"]
        new_id = _ok(gateway.post(f"{deliveries_url}/{original}/redeliver", headers=key))
        assert isinstance(new_id, str) and new_id != original
        down.wait_for(
            lambda _d: len(_of(down, invoice["id"])) == 2, timeout=30, what="the redelivery"
        )
        redelivered = _of(down, invoice["id"])[1].json
        assert redelivered["deliveryId"] == new_id
        assert redelivered["originalDeliveryId"] == original
        assert redelivered["isRedelivery"] is True and redelivered["type"] == "InvoiceCreated"
    finally:
        down.close()
        gateway.delete(f"/api/v1/stores/default/webhooks/{hook['id']}", headers=key)


def _state(gw: Gateway, invoice_id: str) -> tuple[str, str]:
    found = _ok(gw.get(f"/api/v1/stores/default/invoices/{invoice_id}", headers=OPERATOR_AUTH))
    return found["status"], found["additionalStatus"]


def _types_of(clock: Clock, invoice_id: str) -> list[str]:
    return [r.json["type"] for r in _of(clock.receiver, invoice_id)]


def test_expired_partly_paid_paid_late_and_overpaid(
    gateway: Gateway, devnet: Devnet, clock: Clock
) -> None:
    """Runs last: the minute of the two short invoices has passed (or passes now)."""
    gateway.wait_for(
        "the half-paid invoice to expire",
        lambda: _state(gateway, clock.partial),
        lambda state: state[0] == "Expired",
        timeout=90,
    )
    assert _state(gateway, clock.partial) == ("Expired", "PaidPartial")
    assert _state(gateway, clock.over) == ("Settled", "PaidOver")
    # Paid in full after its expiry: stays Expired, PaidLate (BTCPay's rule).
    gateway.wait_for(
        "the unpaid invoice to expire",
        lambda: _state(gateway, clock.late),
        lambda state: state[0] == "Expired",
        timeout=60,
    )
    devnet.pay(clock.late_address, clock.late_due, mine_blocks=1)
    gateway.wait_for(
        "the late payment",
        lambda: _state(gateway, clock.late),
        lambda state: state == ("Expired", "PaidLate"),
        timeout=60,
    )
    clock.receiver.wait_for(
        lambda _d: "InvoicePaidAfterExpiration" in _types_of(clock, clock.late),
        timeout=30,
        what="InvoicePaidAfterExpiration",
    )
    partial = _of(clock.receiver, clock.partial)
    expired = next(r.json for r in partial if r.json["type"] == "InvoiceExpired")
    assert expired["partiallyPaid"] is True
    assert "InvoiceExpiredPaidPartial" in _types_of(clock, clock.partial)
    settled = next(
        r.json for r in _of(clock.receiver, clock.over) if r.json["type"] == "InvoiceSettled"
    )
    assert settled["overPaid"] is True
    late = _types_of(clock, clock.late)
    assert late[0] == "InvoiceCreated" and late.count("InvoicePaidAfterExpiration") == 1
    assert late.index("InvoiceExpired") < late.index("InvoicePaidAfterExpiration")
    everything = [
        r for i in (clock.partial, clock.late, clock.over) for r in _of(clock.receiver, i)
    ]
    assert all(_signed(clock.secret, r) for r in everything)
