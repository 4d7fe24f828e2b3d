"""A shop plugin's life over BTCPay's Greenfield API, on regtest and both databases: the
calls in the order the WooCommerce plugin makes them (docs/greenfield.md, "Connecting a
shop plugin"; keys/current, server/info, payment methods, an invoice in EUR with an order
id and a redirect), the buyer's link to the checkout page, the payment on regtest, and
the invoice Settled with its payment; the same invoice as a payment request of the
MoneroPay API (one ledger, two APIs).

No webhook here (``test_greenfield_webhooks.py`` has them): the plugin reads the state by
``GET .../invoices/{id}``, as it does when it reuses an invoice.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import BACKENDS
from testsupport.fake_rates import FakeRates
from testsupport.gateway import Gateway, close_gateway, start_gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

OPERATOR = "greenfield-operator-key-0123456789"
OPERATOR_AUTH = {"Authorization": f"Bearer {OPERATOR}"}
WOO_PERMISSIONS = {
    "btcpay.store.canviewinvoices",
    "btcpay.store.cancreateinvoice",
    "btcpay.store.canviewstoresettings",
    "btcpay.store.canmodifyinvoices",
}


@pytest.fixture(scope="module")
def rates() -> Iterator[FakeRates]:
    """The three providers agree on EUR: 150.00."""
    with FakeRates() as fake:
        for source in ("coingecko", "kraken", "cryptocompare"):
            fake.set(source, "EUR", "150.00")
        yield fake


@pytest.fixture(scope="module", params=BACKENDS)
def gateway(
    request: pytest.FixtureRequest,
    devnet: Devnet,
    rates: FakeRates,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Gateway]:
    args = [
        "--api-key",
        OPERATOR,
        "--rate-currencies",
        "EUR",
        "--rate-source-url",
        rates.option(),
        "--rate-refresh",
        "1s",
        "--rate-lock",
        "10m",
    ]
    workdir: Path = tmp_path_factory.mktemp(f"greenfield-{request.param}")
    gw = start_gateway(devnet, request.param, workdir, args)
    try:
        gw.wait_for(
            "the EUR rate",
            lambda: gw.get("/rates", params={"currency": "EUR"}, headers=OPERATOR_AUTH).json(),
            lambda body: body.get("rate") is not None,
            timeout=20,
        )
        yield gw
    finally:
        close_gateway(gw)


def _ok(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()


def _plugin_key(gw: Gateway) -> dict[str, str]:
    """A key of the default store with WooCommerce's permissions (read + receive), sent
    the way BTCPay's PHP client sends it (``token``)."""
    made = _ok(
        gw.post("/stores/default/keys", json={"scopes": ["read", "receive"]}, headers=OPERATOR_AUTH)
    )
    return {"Authorization": f"token {made['key']}", "Accept": "application/json"}


def test_a_plugins_life_from_key_to_settled_invoice(gateway: Gateway, devnet: Devnet) -> None:
    key = _plugin_key(gateway)
    # B1: the key's permissions, each scoped to one store (hasSingleStore).
    current = _ok(gateway.get("/api/v1/api-keys/current", headers=key))
    names = {p.split(":")[0] for p in current["permissions"]}
    assert names >= WOO_PERMISSIONS
    assert {p.split(":")[1] for p in current["permissions"]} == {"default"}
    # B2: a synced server of a version with refunds.
    info = gateway.wait_for(
        "server/info to say fully synched",
        lambda: _ok(gateway.get("/api/v1/server/info", headers=key)),
        lambda body: body["fullySynched"] is True,
        timeout=30,
    )
    assert tuple(int(n) for n in info["version"].split(".")[:2]) >= (1, 7)
    # A3 and B4: the store, and its one payment method.
    assert [s["id"] for s in _ok(gateway.get("/api/v1/stores", headers=key))] == ["default"]
    methods = _ok(gateway.get("/api/v1/stores/default/payment-methods", headers=key))
    assert methods == [{"enabled": True, "paymentMethodId": "XMR-CHAIN"}]

    # D1: the invoice, priced in EUR, with the shop's order and where to send the buyer.
    body = {
        "amount": "19.99",
        "currency": "EUR",
        "metadata": {"orderId": "1001", "posData": '{"WooCommerce":{"Order ID":1001}}'},
        "checkout": {
            "speedPolicy": None,
            "paymentMethods": ["XMR_CHAIN"],
            "expirationMinutes": None,
            "monitoringMinutes": None,
            "paymentTolerance": None,
            "redirectURL": "https://shop.example/order-received/{OrderId}/?invoice={InvoiceId}",
            "redirectAutomatically": None,
            "defaultLanguage": None,
        },
    }
    invoice = _ok(gateway.post("/api/v1/stores/default/invoices", json=body, headers=key))
    invoice_id = invoice["id"]
    assert (invoice["status"], invoice["amount"], invoice["currency"]) == ("New", "19.99", "EUR")
    assert invoice["checkoutLink"].endswith(f"/i/{invoice_id}")
    [method] = _ok(
        gateway.get(f"/api/v1/stores/default/invoices/{invoice_id}/payment-methods", headers=key)
    )
    assert Decimal(method["rate"]) == Decimal("150.00")
    address, due = method["destination"], int(Decimal(method["due"]) * 10**12)
    assert due == 133266666667  # 19.99 / 150.00, rounded up to the piconero

    # The buyer's link leads to the checkout page, whose way back is the shop's page.
    link = httpx.get(invoice["checkoutLink"], follow_redirects=False)
    assert link.status_code == 303 and link.headers["location"] == f"/pay/{address}"
    page = gateway.get(f"/pay/{address}")
    back = f"https://shop.example/order-received/1001/?invoice={invoice_id}"
    assert page.status_code == 200 and back.replace("&", "&amp;") in page.text

    # One ledger: the same request on the MoneroPay API, its price in EUR.
    mp = _ok(gateway.get(f"/receive/{address}", headers=OPERATOR_AUTH))
    assert mp["amount"]["expected"] == due and mp["price"]["currency"] == "EUR"

    # Paid on regtest, one block: MediumSpeed (the store's default) settles it.
    tx_hash = devnet.pay(address, due, mine_blocks=1)
    url = f"/api/v1/stores/default/invoices/{invoice_id}"
    settled = gateway.wait_for(
        "the invoice to be Settled",
        lambda: _ok(gateway.get(url, headers=key)),
        lambda found: found["status"] == "Settled",
        timeout=60,
    )
    assert settled["additionalStatus"] == "None" and settled["paidAmount"] == "19.99"
    [method] = _ok(gateway.get(f"{url}/payment-methods", headers=key))
    [payment] = method["payments"]
    assert payment["id"].startswith(f"{tx_hash}#0#")
    assert payment["status"] == "Settled" and method["due"] == "0"
    # Found by its order id, as the plugin looks an order's invoice up.
    listed = _ok(gateway.get("/api/v1/stores/default/invoices?orderId=1001", headers=key))
    assert [i["id"] for i in listed] == [invoice_id]

    # F: a refund. The plugin's key cannot (no pull-payment permission); BTC is refused;
    # the operator's makes one of what the invoice received, claimed at its viewLink.
    refund_url = f"{url}/refund"
    denied = gateway.post(refund_url, json={"paymentMethod": "XMR-CHAIN"}, headers=key)
    assert denied.status_code == 403
    assert denied.json()["missingPermission"] == "btcpay.store.cancreatenonapprovedpullpayments"
    operator = {**OPERATOR_AUTH, "Accept": "application/json"}
    btc = gateway.post(refund_url, json={"paymentMethod": "BTC"}, headers=operator)
    assert btc.status_code == 422 and btc.json()[0]["path"] == "paymentMethod"
    pull = _ok(
        gateway.post(
            refund_url,
            json={"paymentMethod": "XMR_CHAIN", "refundVariant": "RateThen", "name": "Order 1001"},
            headers=operator,
        )
    )
    assert (pull["currency"], pull["amount"]) == ("XMR", "0.133266666667")
    assert isinstance(pull["id"], str) and isinstance(pull["expiresAt"], int)
    claim = httpx.get(pull["viewLink"])
    assert claim.status_code == 200 and "text/html" in claim.headers["content-type"]
    # Everything it received is reserved: a second full refund has nothing left.
    again = gateway.post(refund_url, json={"paymentMethod": "XMR"}, headers=operator)
    assert again.status_code in (400, 422), again.text
    # WooCommerce's own refund path: a pull payment without payout methods, 422 as BTCPay.
    pulled = gateway.post(
        "/api/v1/stores/default/pull-payments",
        json={
            "name": "Refund of order 1001",
            "amount": "5.00",
            "currency": "EUR",
            "paymentMethods": [],
            "payoutMethods": [],
        },
        headers=operator,
    )
    assert pulled.status_code == 422 and pulled.json()[0]["path"] == "payoutMethods"


def test_a_key_of_another_store_and_bad_input(gateway: Gateway) -> None:
    """Another store's invoice is 404 to the operator on the wrong store and 403 to a
    store key on another store's path; bad input is 422 and makes nothing."""
    _ok(
        gateway.post(
            "/stores", json={"id": "other", "wallet": {"account": "new"}}, headers=OPERATOR_AUTH
        )
    )
    key = _plugin_key(gateway)
    made = _ok(
        gateway.post(
            "/api/v1/stores/default/invoices",
            json={"amount": "0.5", "currency": "XMR"},
            headers=key,
        )
    )
    wrong = gateway.get(f"/api/v1/stores/other/invoices/{made['id']}", headers=OPERATOR_AUTH)
    assert wrong.status_code == 404 and wrong.json()["code"] == "invoice-not-found"
    refused = gateway.get(f"/api/v1/stores/other/invoices/{made['id']}", headers=key)
    assert refused.status_code == 403
    before = len(
        _ok(gateway.get("/receive", params={"limit": 100}, headers=OPERATOR_AUTH))["requests"]
    )
    for bad in (
        {"amount": "1", "currency": "XMR", "checkout": {"paymentMethods": ["BTC"]}},
        {"amount": "-1", "currency": "XMR"},
        {"amount": "1", "currency": "GBP"},
        {"amount": "1", "currency": "XMR", "checkout": {"redirectURL": "ftp://x"}},
    ):
        answer = gateway.post("/api/v1/stores/default/invoices", json=bad, headers=key)
        assert answer.status_code == 422, answer.text
        assert isinstance(answer.json(), list) and answer.json()[0]["path"]
    after = len(
        _ok(gateway.get("/receive", params={"limit": 100}, headers=OPERATOR_AUTH))["requests"]
    )
    assert after == before
