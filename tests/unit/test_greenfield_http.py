"""The Greenfield facade's foundation over HTTP: auth, permissions, errors, read routes.

In process, over ``GreenfieldSite`` (tests/unit/greenfield_site.py: the default store,
shop-a, shop-b and a disabled shop-c, operator and store keys). Every 200 body is held
to the JSON types BTCPay's PHP client reads through its strict getters (a string where
it returns string, an int where int, a bool where bool: /tmp/gf-php's getter list).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.greenfield_site import (
    OP_READER,
    OPERATOR,
    RECEIVE_A,
    SHOP_A,
    SHOP_B,
    TILL_A,
    GreenfieldSite,
    auth,
)

VIEW_STORE = "btcpay.store.canviewstoresettings"
WC_PERMISSIONS_A = [
    "btcpay.store.canviewinvoices:shop-a",
    "btcpay.store.cancreateinvoice:shop-a",
    "btcpay.store.canviewstoresettings:shop-a",
    "btcpay.store.canmodifyinvoices:shop-a",
    "btcpay.store.webhooks.canmodifywebhooks:shop-a",
]
# StoreData fields and the JSON type the PHP client's getter needs (None: null here).
STORE_TYPES: dict[str, type | None] = {
    "id": str,
    "name": str,
    "defaultCurrency": str,
    "invoiceExpiration": int,
    "monitoringExpiration": int,
    "speedPolicy": str,
    "paymentTolerance": int,
    "anyoneCanCreateInvoice": bool,
    "requiresRefundEmail": bool,
    "lightningAmountInSatoshi": bool,
    "lightningPrivateRouteHints": bool,
    "onChainWithLnInvoiceFallback": bool,
    "redirectAutomatically": bool,
    "showRecommendedFee": bool,
    "recommendedFeeBlockTarget": int,
    "defaultLang": str,
    "networkFeeMode": str,
    "payJoinEnabled": bool,
    "lazyPaymentMethods": bool,
    "defaultPaymentMethod": str,
    "archived": bool,
    "website": None,
    "lightningDescriptionTemplate": None,
}


@pytest.fixture(scope="module")
def site() -> GreenfieldSite:
    return GreenfieldSite()


@pytest.fixture(scope="module")
def client(site: GreenfieldSite) -> TestClient:
    return TestClient(site.app)


def _exact_type(value: Any, wanted: type | None) -> bool:
    """JSON types as PHP reads them: a bool is no int, an int no bool, null only if None."""
    if wanted is None:
        return value is None
    return type(value) is wanted


def _problem(client: TestClient, path: str, key: str | None, status: int) -> Any:
    headers = auth(key) if key else {}
    answer = client.get(path, headers=headers)
    assert answer.status_code == status, answer.text
    return answer.json()


# --- authentication ---------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["token", "Token", "TOKEN", "Bearer", "bearer"])
def test_token_and_bearer_schemes_are_accepted_in_any_case(client: TestClient, scheme: str) -> None:
    answer = client.get("/api/v1/api-keys/current", headers=auth(SHOP_A, scheme))
    assert answer.status_code == 200
    assert answer.json()["apiKey"] == SHOP_A


@pytest.mark.parametrize(
    ("headers", "message_part"),
    [
        ({}, "required"),
        (auth("not-a-key-of-this-gateway"), "not known"),
        (auth(SHOP_A, "Basic"), "required"),  # no users here, no passwords
        ({"Authorization": "token"}, "required"),
    ],
)
def test_missing_or_unknown_key_is_401_in_greenfield_shape(
    client: TestClient, headers: dict[str, str], message_part: str
) -> None:
    answer = client.get("/api/v1/stores", headers=headers)
    assert answer.status_code == 401
    body = answer.json()
    assert set(body) == {"code", "message"}
    assert body["code"] == "unauthenticated"
    assert message_part in body["message"]


def test_an_unknown_greenfield_route_needs_a_key_before_it_is_404(client: TestClient) -> None:
    assert _problem(client, "/api/v1/nothing", None, 401)["code"] == "unauthenticated"
    body = _problem(client, "/api/v1/nothing", OPERATOR, 404)
    assert set(body) == {"code", "message"}


def test_moneropay_paths_keep_bearer_only_and_their_own_shape(client: TestClient) -> None:
    """The ``token`` scheme is Greenfield's: ``/receive`` still wants ``Bearer``."""
    refused = client.get("/receive", headers=auth(OPERATOR, "token"))
    assert refused.status_code == 401
    assert refused.json()["status"] == 401
    assert client.get("/receive", headers=auth(OPERATOR, "Bearer")).status_code == 200


def test_an_open_gateway_still_wants_a_key_on_greenfield_paths() -> None:
    """No --api-key (loopback): MoneroPay is open, Greenfield is not; store keys work."""
    client = TestClient(GreenfieldSite(operator=False).app)
    assert client.get("/receive").status_code == 200
    assert _problem(client, "/api/v1/stores", None, 401)["code"] == "unauthenticated"
    assert [s["id"] for s in _problem(client, "/api/v1/stores", SHOP_A, 200)] == ["shop-a"]


def test_greenfield_routes_are_not_in_the_openapi_schema(site: GreenfieldSite) -> None:
    paths = site.app.openapi()["paths"]
    assert "/receive" in paths
    assert not [p for p in paths if p.startswith("/api/v1")]


def test_a_too_large_body_is_refused_in_greenfield_shape(client: TestClient) -> None:
    body = b"x" * (2 * 1024 * 1024)
    answer = client.post("/api/v1/stores", content=body, headers=auth(OPERATOR))
    assert answer.status_code == 413
    assert answer.json()["code"] == "body-too-large"


# --- api-keys/current and server/info ---------------------------------------------------


def test_current_key_of_a_store_key_lists_store_scoped_permissions(client: TestClient) -> None:
    body = _problem(client, "/api/v1/api-keys/current", SHOP_A, 200)
    assert body == {
        "apiKey": SHOP_A,
        "label": "store-key:0000000000000001",
        "permissions": WC_PERMISSIONS_A,
    }
    refunds = _problem(client, "/api/v1/api-keys/current", SHOP_B, 200)["permissions"]
    assert "btcpay.store.cancreatenonapprovedpullpayments:shop-b" in refunds
    assert all(p.endswith(":shop-b") for p in refunds)


def test_current_key_of_operator_keys_lists_unscoped_names(client: TestClient) -> None:
    assert _problem(client, "/api/v1/api-keys/current", OPERATOR, 200)["permissions"] == [
        "unrestricted"
    ]
    reader = _problem(client, "/api/v1/api-keys/current", OP_READER, 200)
    assert reader["permissions"] == ["btcpay.store.canviewinvoices", VIEW_STORE]
    assert type(reader["label"]) is str
    assert _problem(client, "/api/v1/api-keys/current", TILL_A, 200)["permissions"] == []


def test_server_info_types_and_unsynced_wallet(client: TestClient) -> None:
    body = _problem(client, "/api/v1/server/info", RECEIVE_A, 200)
    assert body["version"] == "2.0.0" and type(body["version"]) is str
    assert body["onion"] is None
    assert body["supportedPaymentMethods"] == ["XMR-CHAIN"]
    # The wallet was never checked: not synched, and a bool (WooCommerce casts it to int).
    assert body["fullySynched"] is False
    (status,) = body["syncStatus"]
    assert status["paymentMethodId"] == "XMR-CHAIN"
    assert status["available"] is False


def test_server_info_is_fully_synched_only_when_the_wallet_is_usable_and_synced() -> None:
    site = GreenfieldSite()
    client = TestClient(site.app)
    site.synced()
    body = _problem(client, "/api/v1/server/info", SHOP_A, 200)
    assert body["fullySynched"] is True
    assert body["syncStatus"][0]["available"] is True
    assert body["syncStatus"][0]["syncHeight"] == 100

    site.heights.wallet = 110  # the gateway is 10 blocks behind its wallet
    assert _problem(client, "/api/v1/server/info", SHOP_A, 200)["fullySynched"] is False


def test_server_info_is_not_synched_with_the_wrong_wallet_open() -> None:
    site = GreenfieldSite()
    site.synced()
    site.identity.mismatch = "another wallet is open"
    body = _problem(TestClient(site.app), "/api/v1/server/info", OPERATOR, 200)
    assert body["fullySynched"] is False
    assert body["syncStatus"][0]["available"] is False


# --- stores -------------------------------------------------------------------------------


def test_operator_sees_every_store_default_first(client: TestClient) -> None:
    stores = _problem(client, "/api/v1/stores", OPERATOR, 200)
    assert [s["id"] for s in stores] == ["default", "shop-a", "shop-b", "shop-c"]
    assert [s["archived"] for s in stores] == [False, False, False, True]


def test_a_store_key_sees_its_own_store_only(client: TestClient) -> None:
    (store,) = _problem(client, "/api/v1/stores", SHOP_A, 200)
    assert store["id"] == "shop-a"
    assert store["name"] == "Café Alpha"
    assert store["brandColor"] == "#0f766e"


@pytest.mark.parametrize("key", [OPERATOR, SHOP_A, SHOP_B])
def test_store_fields_have_the_types_the_php_client_reads(client: TestClient, key: str) -> None:
    for store in _problem(client, "/api/v1/stores", key, 200):
        wrong = {f: store.get(f, "missing") for f, t in STORE_TYPES.items()}
        wrong = {f: v for f, v in wrong.items() if not _exact_type(v, STORE_TYPES[f])}
        assert wrong == {}, store["id"]


def test_store_values_come_from_the_store_and_its_rates(client: TestClient) -> None:
    a = _problem(client, "/api/v1/stores/shop-a", SHOP_A, 200)
    b = _problem(client, "/api/v1/stores/shop-b", SHOP_B, 200)
    assert (a["defaultCurrency"], b["defaultCurrency"]) == ("EUR", "XMR")
    # A fiat store's invoices expire with the rate lock (600 s here), XMR ones in 15 min.
    assert (a["invoiceExpiration"], b["invoiceExpiration"]) == (600, 900)
    assert a["speedPolicy"] == "MediumSpeed"
    assert a["defaultPaymentMethod"] == "XMR-CHAIN"


@pytest.mark.parametrize("key", [RECEIVE_A, TILL_A])
def test_a_key_that_may_see_no_store_is_403_naming_the_permission(
    client: TestClient, key: str
) -> None:
    body = _problem(client, "/api/v1/stores", key, 403)
    assert body["code"] == "missing-permission"
    assert body["missingPermission"] == VIEW_STORE
    assert _problem(client, "/api/v1/stores/shop-a", key, 403)["missingPermission"] == VIEW_STORE


@pytest.mark.parametrize("path", ["/api/v1/stores/shop-b", "/api/v1/stores/shop-b/payment-methods"])
def test_a_key_of_another_store_is_403(client: TestClient, path: str) -> None:
    body = _problem(client, path, SHOP_A, 403)
    assert body == {
        "code": "missing-permission",
        "message": body["message"],
        "missingPermission": VIEW_STORE,
    }


def test_an_unknown_store_is_404_for_an_operator_and_403_for_a_store_key(
    client: TestClient,
) -> None:
    """A store key cannot learn which store ids exist: it is refused before the lookup."""
    body = _problem(client, "/api/v1/stores/no-such-store", OPERATOR, 404)
    assert body["code"] == "store-not-found"
    assert _problem(client, "/api/v1/stores/no-such-store/payment-methods", OP_READER, 404)[
        "code"
    ] == ("store-not-found")
    assert _problem(client, "/api/v1/stores/no-such-store", SHOP_A, 403)["missingPermission"]
