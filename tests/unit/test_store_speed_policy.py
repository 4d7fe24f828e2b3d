"""A store's default speed policy (``speed_policy``): the confirmations its
Greenfield invoices made without ``checkout.speedPolicy`` need.

On the real app over a seeded copy of the migrated SQLite database (the stores of
``test_stores_http``: ``default``, ``shop-a``, ``shop-b``), its registry loaded as the
lifespan's first load does:

- every store has ``MediumSpeed`` (the migration's server default, the default store's
  row too); ``PATCH /stores/{id}`` sets one of BTCPay's four names, and Greenfield's
  ``GET /api/v1/stores/{id}`` and the store's invoices follow at once (no restart);
- anything else (another spelling, a number, null) is 400 in the API's
  ``{"status", "message"}``, nothing changed or made.

Over the in-memory Greenfield site (``greenfield_site.py``, wired as the product is):
``POST /stores`` takes it; an invoice without a policy records the store's default when
it is made (a later change leaves it as it was); an explicit policy is kept.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.greenfield_site import OPERATOR as SITE_OPERATOR
from tests.unit.greenfield_site import SHOP_B, GreenfieldSite, auth
from tests.unit.test_stores_http import NO_WALLET, OPERATOR, _as, _seed
from testsupport.migrated import MigratedTemplates
from xmrgate.config import Settings
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services

STORES = ("default", "shop-a", "shop-b")


@pytest.fixture
def served(tmp_path: Path, migrated_templates: MigratedTemplates) -> tuple[TestClient, Services]:
    """The app over the seeded database, and its services (to look at what was built)."""
    path = tmp_path / "stores.sqlite3"
    _seed(migrated_templates.sqlite_copy(path))
    settings = Settings(sqlite=str(path), api_keys=OPERATOR, rpc_address=NO_WALLET)
    services = Services.build(settings)

    async def load() -> None:
        # Its connections belong to this loop: closed with it, not left to a worker
        # thread that would post to a closed loop later.
        await services.stores.load()
        await services.db.dispose()

    asyncio.run(load())
    return TestClient(build_app(settings, services)), services


def refused(answer: Any, status: int, words: str = "") -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == status and words in body["message"], body


def bad_value(answer: Any) -> None:
    """400 for the value of a known setting (never "Extra inputs are not permitted")."""
    refused(answer, 400, "speed_policy")
    assert "not permitted" not in answer.json()["message"]


def greenfield_policy(client: TestClient, store: str) -> str:
    """The store's ``speedPolicy`` as a shop plugin reads it."""
    answer = client.get(f"/api/v1/stores/{store}", headers=_as(OPERATOR))
    assert answer.status_code == 200, answer.text
    found: str = answer.json()["speedPolicy"]
    return found


def invoice_default(services: Services, store: str) -> int:
    """The confirmations the store's built Greenfield invoices give one made now without
    a policy (their ``confirmations`` callable: there is no wallet here to make one)."""
    greenfield = services.stores.gateway(store, writes=False).greenfield
    found: int = greenfield._default_confirmations()
    return found


def test_every_store_starts_at_medium_speed_and_a_patch_reaches_greenfield(
    served: tuple[TestClient, Services],
) -> None:
    client, services = served
    listed = client.get("/stores", headers=_as(OPERATOR)).json()["stores"]
    assert {s["id"]: s["speed_policy"] for s in listed} == dict.fromkeys(STORES, "MediumSpeed")
    assert [greenfield_policy(client, s) for s in STORES] == ["MediumSpeed"] * 3
    assert [invoice_default(services, s) for s in STORES] == [1, 1, 1]
    changes = (("shop-a", "LowSpeed"), ("default", "HighSpeed"), ("shop-b", "LowMediumSpeed"))
    for store, policy in changes:
        body = {"speed_policy": policy}
        answer = client.patch(f"/stores/{store}", json=body, headers=_as(OPERATOR))
        assert answer.status_code == 200, answer.text
        assert answer.json()["speed_policy"] == policy
    assert [greenfield_policy(client, s) for s in STORES] == [
        "HighSpeed",
        "LowSpeed",
        "LowMediumSpeed",
    ]
    listed = client.get("/api/v1/stores", headers=_as(OPERATOR)).json()
    assert [s["speedPolicy"] for s in listed] == ["HighSpeed", "LowSpeed", "LowMediumSpeed"]
    assert [invoice_default(services, s) for s in STORES] == [0, 6, 2]
    assert client.get("/stores/shop-a", headers=_as(OPERATOR)).json()["speed_policy"] == "LowSpeed"


# Other spellings too: our API says BTCPay's names one way (Greenfield's invoices read
# any case, as Json.NET does).
SPELLINGS = ["mediumspeed", "LOWSPEED", "Medium", " LowSpeed", "Low Speed", ""]
BAD: list[Any] = [*SPELLINGS, 6, True, None, ["LowSpeed"]]


@pytest.mark.parametrize("value", BAD)
def test_a_bad_value_is_400_and_changes_nothing(
    served: tuple[TestClient, Services], value: Any
) -> None:
    client, services = served
    bad_value(client.patch("/stores/shop-a", json={"speed_policy": value}, headers=_as(OPERATOR)))
    assert greenfield_policy(client, "shop-a") == "MediumSpeed"
    assert invoice_default(services, "shop-a") == 1


@pytest.mark.parametrize("value", ["Fast", "lowspeed", 2, None])
def test_a_new_store_with_a_bad_value_is_400_and_not_made(
    served: tuple[TestClient, Services], value: Any
) -> None:
    client, _ = served
    body = {"id": "shop-c", "wallet": {"account": "new"}, "speed_policy": value}
    bad_value(client.post("/stores", json=body, headers=_as(OPERATOR)))
    refused(client.get("/stores/shop-c", headers=_as(OPERATOR)), 404)


@pytest.fixture
def site() -> GreenfieldSite:
    made = GreenfieldSite()
    made.synced()
    return made


def _ok(answer: Any) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()


def _set_default(client: TestClient, store: str, policy: str) -> None:
    body = {"speed_policy": policy}
    answer = client.patch(f"/stores/{store}", json=body, headers=auth(SITE_OPERATOR, "Bearer"))
    assert _ok(answer)["speed_policy"] == policy


def _invoice(client: TestClient, checkout: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"amount": "1.5", "currency": "XMR"}
    if checkout is not None:
        body["checkout"] = checkout
    made: dict[str, Any] = _ok(
        client.post("/api/v1/stores/shop-b/invoices", json=body, headers=auth(SHOP_B))
    )
    return made


def _threshold(client: TestClient, invoice_id: str) -> int:
    """The confirmations the invoice's XMR method says it settles at."""
    url = f"/api/v1/stores/shop-b/invoices/{invoice_id}/payment-methods"
    [method] = _ok(client.get(url, headers=auth(SHOP_B)))
    found: int = method["additionalData"]["invoiceSettledConfirmationThreshold"]
    return found


def test_a_new_store_takes_its_policy(site: GreenfieldSite) -> None:
    client = TestClient(site.app)
    body = {"id": "shop-d", "wallet": {"account": "new"}, "speed_policy": "LowSpeed"}
    made = _ok(client.post("/stores", json=body, headers=auth(SITE_OPERATOR, "Bearer")))
    assert made["speed_policy"] == "LowSpeed"
    plain = {"id": "shop-e", "wallet": {"account": "new"}}
    made = _ok(client.post("/stores", json=plain, headers=auth(SITE_OPERATOR, "Bearer")))
    assert made["speed_policy"] == "MediumSpeed"
    seen = _ok(client.get("/api/v1/stores/shop-d", headers=auth(SITE_OPERATOR)))
    assert seen["speedPolicy"] == "LowSpeed"
    assert site.stores.directory.confirmations("shop-d") == 6
    assert site.stores.directory.confirmations("shop-e") == 1


def test_an_invoice_without_a_policy_records_the_stores_default_when_made(
    site: GreenfieldSite,
) -> None:
    client = TestClient(site.app)
    _set_default(client, "shop-b", "LowSpeed")
    slow = _invoice(client, {"speedPolicy": None})  # what PHPLIB sends: the store's
    assert slow["checkout"]["speedPolicy"] == "LowSpeed"
    assert _threshold(client, slow["id"]) == 6
    row = site.invoice_rows[slow["id"]]
    assert (row.speed_policy, row.confirmations) == (None, 6)
    # A later change of the store's default is for the invoices made after it.
    _set_default(client, "shop-b", "HighSpeed")
    fast = _invoice(client)
    assert fast["checkout"]["speedPolicy"] == "HighSpeed"
    assert _threshold(client, fast["id"]) == 0
    again = _ok(client.get(f"/api/v1/stores/shop-b/invoices/{slow['id']}", headers=auth(SHOP_B)))
    assert again["checkout"]["speedPolicy"] == "LowSpeed"
    assert _threshold(client, slow["id"]) == 6
    assert site.invoice_rows[slow["id"]].confirmations == 6


def test_an_explicit_policy_is_kept_whatever_the_store_default(site: GreenfieldSite) -> None:
    client = TestClient(site.app)
    _set_default(client, "shop-b", "LowSpeed")
    made = _invoice(client, {"speedPolicy": "HighSpeed"})
    assert made["checkout"]["speedPolicy"] == "HighSpeed"
    assert _threshold(client, made["id"]) == 0
    row = site.invoice_rows[made["id"]]
    assert (row.speed_policy, row.confirmations) == ("HighSpeed", 0)
    _set_default(client, "shop-b", "MediumSpeed")
    assert _threshold(client, made["id"]) == 0
