"""The store's payment methods over HTTP (§2.5, §4), and the Greenfield error mapping.

The payment methods: the one ``XMR-CHAIN``, ``config`` only when asked for and allowed,
BTCPay 1.x's ``OnChain``/``LightningNetwork`` lists still answered 200 (PrestaShop hides
its payment option otherwise). The errors: our exception tree as Greenfield's bodies, and
FastAPI's validation as the 422 list with the field's path.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.greenfield_site import OP_READER, OPERATOR, SHOP_A, SHOP_B, GreenfieldSite, auth
from xmrgate.domain.errors import (
    AlreadyExists,
    Conflict,
    DatabaseFault,
    InvalidInput,
    NotFound,
    RatesUnavailable,
    Unauthorized,
    Unprocessable,
    WalletTimeout,
    XmrgateError,
)
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.web.greenfield.errors import KindNotFound, MissingPermission, answer, field_path

METHODS = "/api/v1/stores/{}/payment-methods"


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(GreenfieldSite().app)


def _get(client: TestClient, path: str, key: str, status: int = 200) -> Any:
    answer = client.get(path, headers=auth(key))
    assert answer.status_code == status, answer.text
    return answer.json()


def test_the_one_payment_method_without_config(client: TestClient) -> None:
    body = _get(client, METHODS.format("shop-a"), SHOP_A)
    assert body == [{"enabled": True, "paymentMethodId": "XMR-CHAIN"}]
    only_enabled = _get(client, METHODS.format("shop-a") + "?onlyEnabled=true", SHOP_A)
    assert only_enabled == body


def test_config_needs_the_store_settings_permission(client: TestClient) -> None:
    refused = _get(client, METHODS.format("shop-a") + "?includeConfig=true", SHOP_A, 403)
    assert refused["missingPermission"] == "btcpay.store.canmodifystoresettings"
    body = _get(client, METHODS.format("shop-b") + "?includeConfig=true", OPERATOR)
    assert body == [
        {
            "enabled": True,
            "paymentMethodId": "XMR-CHAIN",
            "config": {"accountIndex": 2, "invoiceSettledConfirmationThreshold": None},
        }
    ]


def test_a_disabled_store_lists_its_method_disabled(client: TestClient) -> None:
    assert _get(client, METHODS.format("shop-c"), OPERATOR) == [
        {"enabled": False, "paymentMethodId": "XMR-CHAIN"}
    ]
    assert _get(client, METHODS.format("shop-c") + "?onlyEnabled=true", OPERATOR) == []


def test_legacy_on_chain_and_lightning_lists_answer_200(client: TestClient) -> None:
    on_chain = _get(client, METHODS.format("shop-b") + "/OnChain", SHOP_B)
    assert on_chain == [{"enabled": True, "cryptoCode": "XMR", "paymentMethodId": "XMR-CHAIN"}]
    assert _get(client, METHODS.format("shop-b") + "/OnChain/XMR", SHOP_B) == on_chain[0]
    assert _get(client, METHODS.format("shop-b") + "/LightningNetwork", SHOP_B) == []
    missing = _get(client, METHODS.format("shop-b") + "/OnChain/BTC", SHOP_B, 404)
    assert missing["code"] == "paymentmethod-not-found"


@pytest.mark.parametrize("spelling", ["XMR-CHAIN", "XMR_CHAIN", "xmr", "XMR-MoneroLike"])
def test_one_method_by_any_spelling_btcpay_parses(client: TestClient, spelling: str) -> None:
    body = _get(client, f"{METHODS.format('shop-a')}/{spelling}", SHOP_A)
    assert body == {"enabled": True, "paymentMethodId": "XMR-CHAIN"}


@pytest.mark.parametrize("spelling", ["BTC-CHAIN", "XMR-LN", "BTC"])
def test_another_method_is_404(client: TestClient, spelling: str) -> None:
    body = _get(client, f"{METHODS.format('shop-a')}/{spelling}", SHOP_A, 404)
    assert body["code"] == "paymentmethod-not-found"


def test_a_refused_query_value_is_the_422_list_with_its_path(client: TestClient) -> None:
    body = _get(client, METHODS.format("shop-a") + "?includeConfig=maybe", OP_READER, 422)
    assert isinstance(body, list) and len(body) == 1
    assert body[0]["path"] == "includeConfig"
    assert set(body[0]) == {"path", "message"}


def test_a_wrong_method_is_greenfield_shaped(client: TestClient) -> None:
    answer = client.delete("/api/v1/stores", headers=auth(OPERATOR))
    assert answer.status_code == 405
    assert answer.json()["code"] == "method-not-allowed"


# --- the mapping itself ----------------------------------------------------------------

INVOICE = "/api/v1/stores/shop-a/invoices/abc"


@pytest.mark.parametrize(
    ("error", "path", "status", "code"),
    [
        (InvalidInput("bad"), INVOICE, 400, "invalid-request"),
        (Unprocessable("no"), INVOICE, 400, "unprocessable"),
        (Conflict("clash"), INVOICE, 400, "conflict"),
        (AlreadyExists("twice"), INVOICE, 400, "conflict"),
        (Unauthorized("who"), INVOICE, 401, "unauthenticated"),
        (NotFound("gone"), INVOICE, 404, "invoice-not-found"),
        (NotFound("gone"), "/api/v1/stores/s/webhooks/w", 404, "webhook-not-found"),
        (NotFound("gone"), "/api/v1/stores/s/webhooks/w/deliveries/d", 404, "delivery-not-found"),
        (NotFound("gone"), "/api/v1/stores/s", 404, "store-not-found"),
        (NotFound("gone"), "/api/v1/server/info", 404, "not-found"),
        (KindNotFound("webhook"), INVOICE, 404, "webhook-not-found"),
        (WalletTimeout("slow"), INVOICE, 504, "wallet-timeout"),
        (RatesUnavailable("none"), INVOICE, 503, "rates-unavailable"),
        (DatabaseFault("bug"), INVOICE, 500, "internal-error"),
    ],
)
def test_our_errors_as_greenfield_bodies(
    error: XmrgateError, path: str, status: int, code: str
) -> None:
    got_status, body = answer(error, path)
    assert (got_status, body["code"]) == (status, code)
    assert set(body) == {"code", "message"}


def test_a_field_error_is_the_422_list_and_a_missing_permission_names_it() -> None:
    error = FieldError("checkout.paymentMethods[0]", "Invalid payment method 'BTC'", "BTC")
    assert answer(error, INVOICE) == (
        422,
        [{"path": "checkout.paymentMethods[0]", "message": "Invalid payment method 'BTC'"}],
    )
    status, body = answer(MissingPermission("btcpay.store.cancreateinvoice"), INVOICE)
    assert (status, body["missingPermission"]) == (403, "btcpay.store.cancreateinvoice")


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (("body", "amount"), "amount"),
        (("body", "checkout", "paymentMethods", 0), "checkout.paymentMethods[0]"),
        (("query", "take"), "take"),
        (("metadata",), "metadata"),
    ],
)
def test_field_paths_read_as_greenfield_writes_them(loc: tuple[int | str, ...], path: str) -> None:
    assert field_path(loc) == path
