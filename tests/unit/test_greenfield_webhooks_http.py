"""Greenfield store webhooks over HTTP, in process (``web/greenfield/webhooks.py``): what
BTCPay's PHP client and the plugins read (WooCommerce §1.A5/B3/G, Magento, PrestaShop),
field by field and type by type, 200 on every success, the secret shown by the create
answer only, 422 in Greenfield's shape, 403 for another store's key, 404 codes, and the
deliveries (as the announcer would write them) listed, read and redelivered.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.greenfield_site import OPERATOR, RECEIVE_A, SHOP_A, SHOP_B, GreenfieldSite, auth
from xmrgate.core.greenfield_webhooks import Delivery
from xmrgate.domain.greenfield.deliveries import delivery_body, encode, first_try
from xmrgate.domain.greenfield.events import EventType, InvoiceEvent

HOOKS = "/api/v1/stores/shop-a/webhooks"
WC_EVENTS = [
    "InvoiceReceivedPayment",
    "InvoicePaymentSettled",
    "InvoiceProcessing",
    "InvoiceExpired",
    "InvoiceSettled",
    "InvoiceInvalid",
]
# WooCommerce's create (§1.A5): no secret.
WOO: dict[str, Any] = {
    "enabled": True,
    "automaticRedelivery": True,
    "url": "https://shop.example/?wc-api=btcpaygf_default",
    "authorizedEvents": {"everything": False, "specificEvents": WC_EVENTS},
}


@pytest.fixture
def site() -> GreenfieldSite:
    return GreenfieldSite()


@pytest.fixture
def client(site: GreenfieldSite) -> TestClient:
    return TestClient(site.app)


def _ok(answer: Any) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()


def _created(client: TestClient, body: dict[str, Any] | None = None) -> dict[str, Any]:
    made: dict[str, Any] = _ok(client.post(HOOKS, json=body or WOO, headers=auth(SHOP_A)))
    return made


def _assert_webhook(data: dict[str, Any]) -> None:
    """The types the PHP client's strict getters read (Result/Webhook.php)."""
    assert isinstance(data["id"], str) and data["id"]
    assert isinstance(data["enabled"], bool)
    assert isinstance(data["automaticRedelivery"], bool)
    assert isinstance(data["url"], str)
    events = data["authorizedEvents"]
    assert isinstance(events["everything"], bool)
    assert isinstance(events["specificEvents"], list)


def test_create_without_secret_answers_a_generated_one_shown_once(client: TestClient) -> None:
    made = _created(client)
    _assert_webhook(made)
    assert isinstance(made["secret"], str) and len(made["secret"]) >= 16
    assert made["url"] == WOO["url"]
    assert made["authorizedEvents"] == {"everything": False, "specificEvents": WC_EVENTS}
    # B3: the plugin reads it back by id; the secret is never shown again.
    again = _ok(client.get(f"{HOOKS}/{made['id']}", headers=auth(SHOP_A)))
    _assert_webhook(again)
    assert "secret" not in again
    assert again == {k: v for k, v in made.items() if k != "secret"}
    listed = _ok(client.get(HOOKS, headers=auth(SHOP_A)))
    assert listed == [again]
    # Two creates, two secrets.
    assert _created(client)["secret"] != made["secret"]


def test_create_with_secret_echoes_it_and_defaults_what_is_absent(client: TestClient) -> None:
    # Magento: everything, its own secret (PrestaShop checks the echo).
    body = {"url": "https://shop.example/btcpay/webhook", "secret": "s3cr3t-of-the-shop"}
    body["authorizedEvents"] = {"everything": True}  # type: ignore[assignment]
    made = _created(client, body)
    assert made["secret"] == "s3cr3t-of-the-shop"
    assert made["enabled"] is True and made["automaticRedelivery"] is True
    assert made["authorizedEvents"] == {"everything": True, "specificEvents": []}


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"url": "/relative/hook"}, "url"),
        ({"url": "ftp://shop.example/hook"}, "url"),
        ({"url": "https:///no-host"}, "url"),
        ({"url": "http://127.0.0.1:8080/hook"}, "url"),
        ({"url": "http://localhost/hook"}, "url"),
        ({}, "url"),
        ({"url": "https://shop.example/h", "secret": 5}, "secret"),
        ({"url": "https://shop.example/h", "enabled": "yes"}, "enabled"),
        (
            {"url": "https://shop.example/h", "authorizedEvents": {"specificEvents": ["Nope"]}},
            "authorizedEvents.specificEvents[0]",
        ),
        (
            {
                "url": "https://shop.example/h",
                "authorizedEvents": {"specificEvents": ["invoicesettled"]},
            },
            "authorizedEvents.specificEvents[0]",
        ),
    ],
)
def test_bad_input_is_422_at_its_path_and_makes_nothing(
    client: TestClient, site: GreenfieldSite, body: dict[str, Any], path: str
) -> None:
    answer = client.post(HOOKS, json=body, headers=auth(SHOP_A))
    assert answer.status_code == 422, answer.text
    items = answer.json()
    assert isinstance(items, list) and items[0]["path"] == path
    assert isinstance(items[0]["message"], str) and items[0]["message"]
    assert site.webhook_rows.webhooks == {}


def test_other_stores_keys_get_403_and_unknown_ids_404(client: TestClient) -> None:
    made = _created(client)
    for key in (SHOP_B, RECEIVE_A):  # another store's key; a key without the permission
        answer = client.get(f"{HOOKS}/{made['id']}", headers=auth(key))
        assert answer.status_code == 403, answer.text
        assert answer.json()["code"] == "missing-permission"
        assert client.post(HOOKS, json=WOO, headers=auth(key)).status_code == 403
    unknown = client.get(f"{HOOKS}/nope", headers=auth(SHOP_A))
    assert unknown.status_code == 404 and unknown.json()["code"] == "webhook-not-found"
    # The operator sees every store, but shop-a's webhook is not shop-b's.
    elsewhere = f"/api/v1/stores/shop-b/webhooks/{made['id']}"
    for method in ("GET", "PUT", "DELETE"):
        answer = client.request(method, elsewhere, json=WOO, headers=auth(OPERATOR))
        assert answer.status_code == 404 and answer.json()["code"] == "webhook-not-found"
    assert _ok(client.get("/api/v1/stores/shop-b/webhooks", headers=auth(OPERATOR))) == []
    for path in ("deliveries", "deliveries/d1", "deliveries/d1/request"):
        answer = client.get(f"{HOOKS}/nope/{path}", headers=auth(SHOP_A))
        assert answer.json()["code"] == "webhook-not-found", path
    answer = client.get(f"{HOOKS}/{made['id']}/deliveries/d1", headers=auth(SHOP_A))
    assert answer.status_code == 404 and answer.json()["code"] == "webhookdelivery-not-found"
    answer = client.post(f"{HOOKS}/{made['id']}/deliveries/d1/redeliver", headers=auth(SHOP_A))
    assert answer.status_code == 404 and answer.json()["code"] == "webhookdelivery-not-found"


def test_put_replaces_and_keeps_the_secret_unless_one_is_given(
    client: TestClient, site: GreenfieldSite
) -> None:
    made = _created(client)
    path = f"{HOOKS}/{made['id']}"
    for secret in (None, ""):  # null or empty: kept (§2.6)
        body = {**WOO, "enabled": False, "secret": secret, "url": "https://shop.example/new"}
        changed = _ok(client.put(path, json=body, headers=auth(SHOP_A)))
        _assert_webhook(changed)
        assert "secret" not in changed
        assert changed["enabled"] is False and changed["url"] == "https://shop.example/new"
        assert site.webhook_rows.webhooks[made["id"]].secret == made["secret"]
    # update-1.0.3 (§1.G): the stored secret sent back, events changed to everything.
    body = {**WOO, "secret": "typed-by-hand", "authorizedEvents": {"everything": True}}
    changed = _ok(client.put(path, json=body, headers=auth(SHOP_A)))
    assert changed["authorizedEvents"] == {"everything": True, "specificEvents": []}
    assert site.webhook_rows.webhooks[made["id"]].secret == "typed-by-hand"
    refused = client.put(path, json={**WOO, "url": "http://10.0.0.5/"}, headers=auth(SHOP_A))
    assert refused.status_code == 422 and refused.json()[0]["path"] == "url"
    assert site.webhook_rows.webhooks[made["id"]].url == WOO["url"]


def _delivery(
    site: GreenfieldSite,
    webhook_id: str,
    delivery_id: str,
    *,
    status: str = "pending",
    code: int | None = None,
    error: str | None = None,
    attempts: int = 0,
) -> dict[str, Any]:
    """A delivery of InvoiceSettled as the announcer writes one; its body."""
    event = InvoiceEvent(EventType.SETTLED, {"manuallyMarked": False, "overPaid": False})
    body = delivery_body(
        first_try(delivery_id, webhook_id, 1_750_000_000),
        event,
        store_id="shop-a",
        invoice_id="inv-1",
        metadata={"orderId": "123"},
    )
    site.webhook_rows.deliver(
        "shop-a",
        Delivery(
            id=delivery_id,
            webhook_id=webhook_id,
            created_at=datetime.fromtimestamp(1_750_000_000, UTC),
            status=status,
            attempts=attempts,
            last_status=code,
            last_error=error,
            payload=encode(body).decode(),
        ),
    )
    return body


def test_deliveries_listed_read_as_sent_and_redelivered(
    client: TestClient, site: GreenfieldSite
) -> None:
    made = _created(client)
    path = f"{HOOKS}/{made['id']}"
    first = _delivery(site, made["id"], "d1", status="delivered", code=200, attempts=1)
    _delivery(site, made["id"], "d2", status="failed", code=500, error="HTTP 500", attempts=7)
    _delivery(site, made["id"], "d3", status="pending", attempts=1, error="timeout")
    _delivery(site, made["id"], "d4")
    listed = _ok(client.get(f"{path}/deliveries", params={"count": "10"}, headers=auth(SHOP_A)))
    assert [d["id"] for d in listed] == ["d4", "d3", "d2", "d1"]  # newest first
    for item in listed:
        assert set(item) == {"id", "timestamp", "httpCode", "errorMessage", "status"}
        assert isinstance(item["timestamp"], int) and item["timestamp"] == 1_750_000_000
    by_id = {d["id"]: d for d in listed}
    assert by_id["d1"] | {"id": ""} == {
        "id": "",
        "timestamp": 1_750_000_000,
        "httpCode": 200,
        "errorMessage": None,
        "status": "HttpSuccess",
    }
    assert (by_id["d2"]["status"], by_id["d2"]["httpCode"]) == ("HttpError", 500)
    assert (by_id["d3"]["status"], by_id["d3"]["errorMessage"]) == ("Failed", "timeout")
    assert by_id["d4"]["status"] == "Failed" and by_id["d4"]["httpCode"] is None
    assert isinstance(by_id["d4"]["errorMessage"], str)
    two = _ok(client.get(f"{path}/deliveries", params={"count": 2}, headers=auth(SHOP_A)))
    assert [d["id"] for d in two] == ["d4", "d3"]
    assert _ok(client.get(f"{path}/deliveries/d2", headers=auth(SHOP_A))) == by_id["d2"]
    # The request: the very bytes sent (they are what the signature covers).
    sent = client.get(f"{path}/deliveries/d1/request", headers=auth(SHOP_A))
    assert sent.status_code == 200 and sent.content == encode(first)
    # Redeliver: a bare JSON string (the PHP client returns it as string).
    answer = client.post(f"{path}/deliveries/d1/redeliver", headers=auth(SHOP_A))
    new_id = _ok(answer)
    assert isinstance(new_id, str) and new_id not in ("", "d1")
    again = _ok(client.get(f"{path}/deliveries", params={"count": 1}, headers=auth(SHOP_A)))
    assert again[0]["id"] == new_id and again[0]["status"] == "Failed"
    body = json.loads(client.get(f"{path}/deliveries/{new_id}/request", headers=auth(SHOP_A)).text)
    assert body["deliveryId"] == new_id and body["isRedelivery"] is True
    assert body["originalDeliveryId"] == "d1" and body["webhookId"] == made["id"]
    assert body["timestamp"] > first["timestamp"]
    rest = {k: v for k, v in body.items() if k not in ("deliveryId", "isRedelivery", "timestamp")}
    assert rest == {k: v for k, v in first.items() if k in rest} and list(body) == list(first)


def test_delete_answers_200_and_drops_pending_deliveries(
    client: TestClient, site: GreenfieldSite
) -> None:
    made = _created(client)
    kept = _created(client)
    _delivery(site, made["id"], "d1", status="delivered", code=200, attempts=1)
    _delivery(site, made["id"], "d2")
    _delivery(site, kept["id"], "d3")
    answer = client.delete(f"{HOOKS}/{made['id']}", headers=auth(SHOP_A))
    assert answer.status_code == 200 and answer.json() == {}
    gone = client.get(f"{HOOKS}/{made['id']}", headers=auth(SHOP_A))
    assert gone.status_code == 404 and gone.json()["code"] == "webhook-not-found"
    assert [d.id for _, d in site.webhook_rows.deliveries] == ["d1", "d3"]
    assert client.delete(f"{HOOKS}/{made['id']}", headers=auth(SHOP_A)).status_code == 404
    assert [w["id"] for w in _ok(client.get(HOOKS, headers=auth(SHOP_A)))] == [kept["id"]]
