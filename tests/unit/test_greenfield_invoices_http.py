"""Greenfield invoices over HTTP, in process (``web/greenfield/invoices.py``): what BTCPay's
PHP client and the WooCommerce plugin read, field by field and type by type, 200 on every
success, 422 in Greenfield's shape for bad input with nothing made, another store's
invoice 404, and the states as payments arrive (the fake payment store's transfers).

The same expectations hold the gateway on regtest in
``tests/integration/test_greenfield_invoices.py``; here the failure paths are reached
with in-memory fakes (``tests/unit/greenfield_site.py``).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.greenfield_site import OP_READER, OPERATOR, SHOP_A, SHOP_B, GreenfieldSite, auth
from xmrgate.domain.ledger import Transfer, TransferState

XMR = 10**12
WOO_BODY: dict[str, Any] = {
    "amount": "12.34",
    "currency": "EUR",
    "metadata": {
        "posData": '{"WooCommerce":{"Order ID":123}}',
        "taxIncluded": 1.5,
        "orderUrl": "https://shop.example/wp-admin/post.php?post=123",
        "orderId": "123",
    },
    "checkout": {
        "speedPolicy": None,
        "paymentMethods": ["XMR_CHAIN"],
        "expirationMinutes": None,
        "monitoringMinutes": None,
        "paymentTolerance": None,
        "redirectURL": "https://shop.example/checkout/order-received/123/?key=wc_order_abc",
        "redirectAutomatically": None,
        "defaultLanguage": None,
    },
}


@pytest.fixture
def site() -> GreenfieldSite:
    made = GreenfieldSite()
    made.synced()
    return made


@pytest.fixture
def client(site: GreenfieldSite) -> TestClient:
    return TestClient(site.app)


def _ok(answer: Any) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()


def _invoice(client: TestClient, store: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    made: dict[str, Any] = _ok(
        client.post(f"/api/v1/stores/{store}/invoices", json=body, headers=auth(key))
    )
    return made


def _check_invoice_types(body: dict[str, Any]) -> None:
    """The types the PHP client's strict getters read (Result/Invoice.php)."""
    for name in ("id", "storeId", "amount", "paidAmount", "currency", "type", "checkoutLink"):
        assert isinstance(body[name], str), name
    for name in ("createdTime", "expirationTime", "monitoringExpiration"):
        assert isinstance(body[name], int) and not isinstance(body[name], bool), name
    assert isinstance(body["archived"], bool)
    assert body["status"] in {"New", "Processing", "Settled", "Expired", "Invalid"}
    assert body["additionalStatus"] in {"None", "PaidPartial", "PaidOver", "PaidLate", "Marked"}
    assert set(body["availableStatusesForManualMarking"]) <= {"Settled", "Invalid"}
    assert isinstance(body["metadata"], dict) and isinstance(body["checkout"], dict)
    assert body["checkout"]["paymentMethods"] == ["XMR-CHAIN"]
    for decimal in (body["amount"], body["paidAmount"]):
        assert "e" not in decimal.lower()


def test_a_woocommerce_invoice_in_eur(client: TestClient) -> None:
    made = _invoice(client, "shop-a", SHOP_A, WOO_BODY)
    _check_invoice_types(made)
    assert made["storeId"] == "shop-a" and made["currency"] == "EUR"
    assert made["amount"] == "12.34" and made["paidAmount"] == "0.00"
    assert made["status"] == "New" and made["additionalStatus"] == "None"
    assert made["type"] == "Standard"
    assert made["checkoutLink"] == f"http://testserver/i/{made['id']}"
    assert made["metadata"] == WOO_BODY["metadata"]  # echoed as given
    assert made["checkout"]["redirectURL"] == WOO_BODY["checkout"]["redirectURL"]
    assert made["checkout"]["speedPolicy"] == "MediumSpeed"  # the store's default
    assert made["expirationTime"] - made["createdTime"] <= 600  # the rate lock bounds it
    assert made["availableStatusesForManualMarking"] == ["Settled", "Invalid"]
    # The same invoice read back, and found by its order id.
    assert (
        _ok(client.get(f"/api/v1/stores/shop-a/invoices/{made['id']}", headers=auth(SHOP_A)))["id"]
        == made["id"]
    )
    listed = _ok(client.get("/api/v1/stores/shop-a/invoices?orderId=123", headers=auth(SHOP_A)))
    assert [i["id"] for i in listed] == [made["id"]]
    assert _ok(client.get("/api/v1/stores/shop-a/invoices?orderId=9", headers=auth(SHOP_A))) == []


def test_the_payment_methods_of_an_invoice(client: TestClient, site: GreenfieldSite) -> None:
    made = _invoice(client, "shop-a", SHOP_A, WOO_BODY)
    [method] = _ok(
        client.get(
            f"/api/v1/stores/shop-a/invoices/{made['id']}/payment-methods", headers=auth(SHOP_A)
        )
    )
    for name in (
        "paymentMethodId",
        "destination",
        "paymentLink",
        "rate",
        "paymentMethodPaid",
        "totalPaid",
        "due",
        "amount",
        "paymentMethodFee",
    ):
        assert isinstance(method[name], str), name
    assert method["paymentMethodId"] == "XMR-CHAIN" and method["rate"] == "150"
    # 12.34 EUR at 150 EUR per XMR, rounded up to the piconero.
    request = next(iter(site.payments["shop-a"].requests.values()))
    assert method["destination"] == request.address
    assert method["amount"] == method["due"] and method["totalPaid"] == "0"
    assert method["additionalData"]["accountIndex"] == 1
    assert method["additionalData"]["invoiceSettledConfirmationThreshold"] == 1
    assert method["payments"] == []


def _pay(site: GreenfieldSite, store: str, amount: int, height: int, state: TransferState) -> str:
    payments = site.payments[store]
    request = next(iter(payments.requests.values()))
    now = int(time.time())
    payments.transfers[request.address] = [
        Transfer("ab" * 32, request.subaddr_index, amount, 10**8, height, now, 0, False, state)
    ]
    return request.address


def test_paid_then_settled_as_the_speed_policy_asks(
    client: TestClient, site: GreenfieldSite
) -> None:
    body = {"amount": "1.5", "currency": "XMR", "checkout": {"speedPolicy": "LowMediumSpeed"}}
    made = _invoice(client, "shop-b", SHOP_B, body)
    assert made["checkout"]["speedPolicy"] == "LowMediumSpeed"
    url = f"/api/v1/stores/shop-b/invoices/{made['id']}"
    # Seen in the pool: paid, not settled (2 confirmations asked).
    _pay(site, "shop-b", 3 * XMR // 2, 0, TransferState.POOL)
    seen = _ok(client.get(url, headers=auth(SHOP_B)))
    assert (seen["status"], seen["additionalStatus"]) == ("Processing", "None")
    assert seen["paidAmount"] == "1.500000000000"
    # One confirmation (chain at 100, mined at 99): still Processing; two: Settled.
    _pay(site, "shop-b", 3 * XMR // 2, 99, TransferState.CONFIRMED)
    assert _ok(client.get(url, headers=auth(SHOP_B)))["status"] == "Processing"
    _pay(site, "shop-b", 3 * XMR // 2, 98, TransferState.CONFIRMED)
    settled = _ok(client.get(url, headers=auth(SHOP_B)))
    assert settled["status"] == "Settled" and settled["availableStatusesForManualMarking"] == []
    [method] = _ok(client.get(f"{url}/payment-methods", headers=auth(SHOP_B)))
    [payment] = method["payments"]
    assert payment["id"] == f"{'ab' * 32}#2#{200}"  # txid#account#index
    assert payment["status"] == "Settled" and payment["value"] == "1.5" and payment["fee"] == "0"
    assert isinstance(payment["receivedDate"], int)
    assert method["due"] == "0"


def test_overpaid_and_partial(client: TestClient, site: GreenfieldSite) -> None:
    made = _invoice(client, "shop-b", SHOP_B, {"amount": 1, "currency": "XMR"})
    url = f"/api/v1/stores/shop-b/invoices/{made['id']}"
    _pay(site, "shop-b", XMR // 2, 90, TransferState.CONFIRMED)
    partial = _ok(client.get(url, headers=auth(SHOP_B)))
    assert (partial["status"], partial["additionalStatus"]) == ("New", "PaidPartial")
    _pay(site, "shop-b", 2 * XMR, 90, TransferState.CONFIRMED)
    over = _ok(client.get(url, headers=auth(SHOP_B)))
    assert (over["status"], over["additionalStatus"]) == ("Settled", "PaidOver")
    [method] = _ok(client.get(f"{url}/payment-methods", headers=auth(SHOP_B)))
    assert method["due"] == "-1"  # negative when overpaid


def test_the_merchant_marks_an_invoice(client: TestClient) -> None:
    made = _invoice(client, "shop-b", SHOP_B, {"amount": "2", "currency": "XMR"})
    url = f"/api/v1/stores/shop-b/invoices/{made['id']}/status"
    invalid = _ok(client.post(url, json={"status": "Invalid"}, headers=auth(SHOP_B)))
    assert (invalid["status"], invalid["additionalStatus"]) == ("Invalid", "Marked")
    settled = _ok(client.post(url, json={"status": "Settled"}, headers=auth(SHOP_B)))
    assert settled["status"] == "Settled"
    again = client.post(url, json={"status": "Settled"}, headers=auth(SHOP_B))
    assert again.status_code == 422 and again.json()[0]["path"] == "status"
    bad = client.post(url, json={"status": "Complete"}, headers=auth(SHOP_B))
    assert bad.status_code == 422 and bad.json()[0]["path"] == "status"


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"checkout": {"paymentMethods": ["BTC-CHAIN"]}}, "checkout.paymentMethods[0]"),
        ({"checkout": {"paymentMethods": ["XMR", "BTC-LN"]}}, "checkout.paymentMethods[1]"),
        ({"amount": "-1"}, "amount"),
        ({"amount": "1e3"}, "amount"),
        ({"amount": "1" * 20}, "amount"),
        ({"amount": None}, "amount"),  # a top-up in fiat
        ({"currency": "GBP"}, "currency"),
        ({"currency": None}, "currency"),
        ({"metadata": "not an object"}, "metadata"),
        ({"checkout": {"redirectURL": "/relative"}}, "checkout.redirectURL"),
        ({"checkout": {"redirectURL": "javascript:alert(1)"}}, "checkout.redirectURL"),
        ({"checkout": {"speedPolicy": "Warp"}}, "checkout.speedPolicy"),
        ({"checkout": {"expirationMinutes": 0}}, "checkout.expirationMinutes"),
        ({"checkout": {"paymentTolerance": 150}}, "checkout.paymentTolerance"),
    ],
)
def test_bad_input_is_422_and_makes_nothing(
    client: TestClient, site: GreenfieldSite, change: dict[str, Any], path: str
) -> None:
    body = {**WOO_BODY, **change}
    answer = client.post("/api/v1/stores/shop-a/invoices", json=body, headers=auth(SHOP_A))
    assert answer.status_code == 422, answer.text
    [error] = answer.json()
    assert error["path"] == path and error["message"]
    assert site.payments["shop-a"].requests == {} and site.invoice_rows == {}


def test_metadata_over_64_kib_is_refused_and_makes_nothing(
    client: TestClient, site: GreenfieldSite
) -> None:
    """Over the body limit (64 KiB by default) the body is not even read: 413 in
    Greenfield's shape. (With a larger --max-body-bytes the use case still refuses
    metadata over 64 KiB with a 422 at ``metadata``: tests/db/test_greenfield_invoice_store.)"""
    body = {**WOO_BODY, "metadata": {"blob": "x" * 70000}}
    answer = client.post("/api/v1/stores/shop-a/invoices", json=body, headers=auth(SHOP_A))
    assert answer.status_code == 413
    assert answer.json()["code"] == "body-too-large"
    assert site.payments["shop-a"].requests == {} and site.invoice_rows == {}


def test_a_body_that_is_not_json_is_422(client: TestClient) -> None:
    answer = client.post(
        "/api/v1/stores/shop-a/invoices",
        content=b"{not json",
        headers={**auth(SHOP_A), "Content-Type": "application/json"},
    )
    assert answer.status_code == 422
    assert isinstance(answer.json(), list)


def test_another_stores_invoice_is_not_found(client: TestClient) -> None:
    made = _invoice(client, "shop-b", SHOP_B, {"amount": "2", "currency": "XMR"})
    # The operator reaches shop-a's path, where shop-b's invoice does not exist.
    for path in (f"/invoices/{made['id']}", f"/invoices/{made['id']}/payment-methods"):
        answer = client.get(f"/api/v1/stores/shop-a{path}", headers=auth(OPERATOR))
        assert answer.status_code == 404
        assert answer.json()["code"] == "invoice-not-found"
    assert _ok(client.get("/api/v1/stores/shop-a/invoices", headers=auth(OPERATOR))) == []
    # shop-a's key on shop-b's path: 403, not a look at the invoice.
    answer = client.get(f"/api/v1/stores/shop-b/invoices/{made['id']}", headers=auth(SHOP_A))
    assert answer.status_code == 403


def test_permissions_of_each_invoice_route(client: TestClient) -> None:
    made = _invoice(client, "shop-b", SHOP_B, {"amount": "2", "currency": "XMR"})
    refused = client.post(
        "/api/v1/stores/shop-b/invoices",
        json={"amount": "1", "currency": "XMR"},
        headers=auth(OP_READER),
    )
    assert refused.status_code == 403
    assert refused.json()["missingPermission"] == "btcpay.store.cancreateinvoice"
    marked = client.post(
        f"/api/v1/stores/shop-b/invoices/{made['id']}/status",
        json={"status": "Invalid"},
        headers=auth(OP_READER),
    )
    assert marked.json()["missingPermission"] == "btcpay.store.canmodifyinvoices"
    read = client.get(f"/api/v1/stores/shop-b/invoices/{made['id']}", headers=auth(OP_READER))
    assert read.status_code == 200


#: A number as JSON writes one, exponent included; strings that read so are amounts.
NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def numbers_as_written(text: str) -> list[str]:
    """Every number of a JSON text as the text spells it, and every string that reads
    as a number (the decimals Greenfield sends as strings)."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and NUMBER.fullmatch(value):
            found.append(value)

    # Numbers kept as the text spells them: a float parsed would lose how it was written.
    walk(json.loads(text, parse_float=str, parse_int=str))
    return found


def test_decimals_are_plain_strings_everywhere(client: TestClient) -> None:
    """An amount sent as 1e-06 comes back "0.000001", and no number or decimal string of
    the answer is written with an exponent. Only numbers are looked at: a random id may
    hold "e-" (one run in about a hundred did, "75mwnne-u-…", when the whole text was)."""
    answer = client.post(
        "/api/v1/stores/shop-b/invoices",
        json={"amount": 0.000001, "currency": "XMR"},
        headers=auth(SHOP_B),
    )
    made = _ok(answer)
    assert made["amount"] == "0.000001"
    numbers = numbers_as_written(answer.text)
    assert {"0.000001", "0.000000000000"} <= set(numbers), numbers
    assert [n for n in numbers if "e" in n.lower()] == []


def test_numbers_as_written_sees_exponents_and_not_ids() -> None:
    """The check above would see an exponent where the answer wrote one."""
    text = '{"id": "ab-e-1e-5x", "amount": "1e-06", "rate": 2.5E+3, "n": 7, "a": ["0.1"]}'
    assert numbers_as_written(text) == ["1e-06", "2.5E+3", "7", "0.1"]


def test_a_pull_payment_without_an_invoice_is_422(client: TestClient) -> None:
    """WooCommerce strips XMR from the payout methods: 422 as BTCPay answers; asked for
    XMR, the answer names the invoice refund route (a refund is always of a request)."""
    url = "/api/v1/stores/shop-b/pull-payments"
    for methods, words in (([], "At least one payout method"), (["XMR_CHAIN"], "/refund")):
        body = {"name": "Refund", "amount": "1", "currency": "XMR", "payoutMethods": methods}
        answer = client.post(url, json=body, headers=auth(SHOP_B))
        assert answer.status_code == 422, answer.text
        [error] = answer.json()
        assert error["path"] == "payoutMethods" and words in error["message"]
    refused = client.post(url, json={}, headers=auth(SHOP_A))
    assert refused.status_code == 403  # another store's path


def test_a_refund_in_another_coin_is_422(client: TestClient) -> None:
    made = _invoice(client, "shop-b", SHOP_B, {"amount": "2", "currency": "XMR"})
    url = f"/api/v1/stores/shop-b/invoices/{made['id']}/refund"
    answer = client.post(url, json={"paymentMethod": "BTC"}, headers=auth(SHOP_B))
    assert answer.status_code == 422 and answer.json()[0]["path"] == "paymentMethod"
    variant = client.post(
        url, json={"paymentMethod": "XMR", "refundVariant": "Everything"}, headers=auth(SHOP_B)
    )
    assert variant.status_code == 422 and variant.json()[0]["path"] == "refundVariant"
