"""Keys that carry Greenfield permissions, over the fake site.

``POST /stores/{id}/keys`` with ``permissions``: answered once, the scopes they map to,
and ``GET /api/v1/api-keys/current`` with that key reports exactly them as
``name:storeId``, never more; unknown names and mixed bodies are 400 naming the problem;
no permission ever maps to ``transfer`` or ``admin``.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.greenfield_site import OPERATOR, GreenfieldSite, auth
from xmrgate.domain.greenfield.key_permissions import (
    PERMISSION_KEY_SCOPES,
    check_key_permissions,
    key_scopes,
)
from xmrgate.domain.greenfield.permissions import STORE_POLICIES, UNRESTRICTED

WOO = [
    "btcpay.store.canviewinvoices",
    "btcpay.store.cancreateinvoice",
    "btcpay.store.canviewstoresettings",
    "btcpay.store.canmodifyinvoices",
    "btcpay.store.cancreatenonapprovedpullpayments",
    "btcpay.store.webhooks.canmodifywebhooks",
]
BEARER = {"Authorization": f"Bearer {OPERATOR}"}


@pytest.fixture(scope="module")
def site() -> GreenfieldSite:
    return GreenfieldSite()


def _make(client: TestClient, store: str, body: dict[str, Any]) -> Any:
    return client.post(f"/stores/{store}/keys", json=body, headers=BEARER)


def test_a_permission_key_reports_exactly_what_was_granted(site: GreenfieldSite) -> None:
    with TestClient(site.app) as client:
        made = _make(client, "shop-a", {"permissions": WOO})
        assert made.status_code == 200, made.text
        assert made.headers["cache-control"] == "no-store"
        answer = made.json()
        assert answer["permissions"] == WOO
        assert answer["scopes"] == ["read", "receive", "refund"]
        current = client.get("/api/v1/api-keys/current", headers=auth(answer["key"]))
        assert current.status_code == 200
        assert current.json()["permissions"] == [f"{name}:shop-a" for name in WOO]
        # The listing shows the names, never the key; the key works on our API too.
        listed = client.get("/stores/shop-a/keys", headers=BEARER).json()["keys"]
        mine = next(k for k in listed if k["id"] == answer["id"])
        assert mine["permissions"] == WOO and "key" not in mine
        assert client.get("/api/v1/stores", headers=auth(answer["key"])).status_code == 200


def test_a_narrow_key_is_refused_what_it_was_not_granted(site: GreenfieldSite) -> None:
    with TestClient(site.app) as client:
        made = _make(client, "shop-b", {"permissions": ["btcpay.store.canviewinvoices"]}).json()
        current = client.get("/api/v1/api-keys/current", headers=auth(made["key"])).json()
        assert current["permissions"] == ["btcpay.store.canviewinvoices:shop-b"]
        assert made["scopes"] == ["read"]
        # Another store's path: 403, as every store key.
        other = client.get("/api/v1/stores/shop-a/invoices/x", headers=auth(made["key"]))
        assert other.status_code == 403


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"permissions": ["btcpay.store.canviewinvoices", "btcpay.store.nope"]}, "nope"),
        ({"permissions": ["unrestricted"]}, "unrestricted"),
        ({"permissions": ["btcpay.server.canmodifyserversettings"]}, "canmodifyserver"),
        ({"permissions": ["btcpay.store.canviewinvoices:shop-b"]}, "another store"),
        ({"permissions": []}, "non-empty"),
        ({"permissions": ["btcpay.store.canviewinvoices"], "scopes": ["read"]}, "not both"),
    ],
)
def test_bad_permissions_are_refused_naming_them(
    site: GreenfieldSite, body: dict[str, Any], named: str
) -> None:
    with TestClient(site.app) as client:
        before = len(site.stores.keys())
        refused = _make(client, "shop-a", body)
        assert refused.status_code == 400, refused.text
        assert named in refused.json()["message"]
        assert len(site.stores.keys()) == before


def test_a_name_limited_to_the_keys_own_store_is_taken() -> None:
    assert check_key_permissions(["btcpay.store.canviewinvoices:shop"], "shop") == (
        "btcpay.store.canviewinvoices",
    )


def test_no_permission_ever_maps_to_transfer_or_admin() -> None:
    assert "transfer" not in PERMISSION_KEY_SCOPES and "admin" not in PERMISSION_KEY_SCOPES
    for policy in STORE_POLICIES:
        assert key_scopes((policy,)) <= PERMISSION_KEY_SCOPES
    assert key_scopes(tuple(sorted(STORE_POLICIES))) <= PERMISSION_KEY_SCOPES
    with pytest.raises(ValueError, match="unrestricted"):
        check_key_permissions([UNRESTRICTED], "shop")
