"""Stores over HTTP, on the real app (in-process ASGI, a migrated SQLite copy, no wallet).

Two stores on accounts of the main wallet (``shop-a``, ``shop-b``), each with a key and
a request, and a request of the default store, are written to the database and read by
the app's store registry, as the lifespan's first load would. Nothing here needs the
wallet: every answer is decided by a key, a scope, the header, or a database read. The
wallet-rpc address points at a closed port, so a route that did ask it would fail.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from testsupport.migrated import MigratedTemplates
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.config import Settings
from xmrgate.domain.stores import DEFAULT_STORE, Store, StoreKey
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services

OPERATOR = "operator-key-0123456789"  # no scopes listed: every scope, admin included
READER = "operator-reader-0123456789"  # an operator key with read only
A_KEY = "xgs_shop-a-key-0123456789abcdef"
B_KEY = "xgs_shop-b-key-0123456789abcdef"
STORE_SCOPES = frozenset({"read", "receive", "transfer"})
DEFAULT_ADDRESS = "8" + "D" * 94
A_ADDRESS = "8" + "A" * 94
B_ADDRESS = "8" + "B" * 94
B_EVENT = "00000000-0000-0000-0000-0000000000b1"
# Nothing listens there: a route that asked the wallet would fail, not reach a real one.
NO_WALLET = "http://127.0.0.1:9/json_rpc"


def _seed(url: str) -> None:
    """The two stores, a key each, one request per store, a callback of shop-b's."""

    async def main() -> None:
        db = Database(url)
        try:
            stores = SqlStores(db)
            for number, (store_id, token) in enumerate(
                (("shop-a", A_KEY), ("shop-b", B_KEY)), start=1
            ):
                await stores.insert(Store(id=store_id, name=store_id, account_index=number))
                await stores.add_key(
                    StoreKey(
                        id=f"{number:016x}",
                        store_id=store_id,
                        digest=hashlib.sha256(token.encode()).digest(),
                        scopes=STORE_SCOPES,
                    )
                )
            for store_id, address in (
                (DEFAULT_STORE, DEFAULT_ADDRESS),
                ("shop-a", A_ADDRESS),
                ("shop-b", B_ADDRESS),
            ):
                request = await PaymentStore(db, store_id).create(
                    address=address,
                    subaddr_index=1,
                    amount=100,
                    description=store_id,
                    callback_url="https://shop.example/cb",
                    return_url=None,
                )
                if store_id == "shop-b":
                    async with db.write() as conn:
                        await insert_events(
                            conn,
                            [
                                {
                                    "id": B_EVENT,
                                    "request_id": request.id,
                                    "kind": "request.expired",
                                    "tx_hash": "",
                                    "callback_url": request.callback_url,
                                    "payload": json.dumps({"n": 1}),
                                    "store_id": store_id,
                                }
                            ],
                        )
        finally:
            await db.dispose()

    asyncio.run(main())


def _app(tmp_path: Path, templates: MigratedTemplates, keys: str | None) -> TestClient:
    """The app over a seeded copy of the migrated database, its stores loaded."""
    path = tmp_path / "stores.sqlite3"
    _seed(templates.sqlite_copy(path))
    settings = Settings(sqlite=str(path), api_keys=keys, rpc_address=NO_WALLET)
    services = Services.build(settings)
    asyncio.run(services.stores.load())
    return TestClient(build_app(settings, services))


@pytest.fixture
def keyed(tmp_path: Path, migrated_templates: MigratedTemplates) -> TestClient:
    return _app(tmp_path, migrated_templates, f"{OPERATOR} {READER}:read")


@pytest.fixture
def open_gateway(tmp_path: Path, migrated_templates: MigratedTemplates) -> TestClient:
    return _app(tmp_path, migrated_templates, None)


def _as(key: str, store: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {key}"}
    if store is not None:
        headers["X-Xmrgate-Store"] = store
    return headers


def _listed(answer: Any) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [r["address"] for r in answer.json()["requests"]]


def _stores(client: TestClient) -> Any:
    answer = client.get("/stores", headers=_as(OPERATOR))
    assert answer.status_code == 200, answer.text
    return answer.json()


def _refused(answer: Any, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    assert body["status"] == status and body["message"]
    return body


def test_the_seeded_stores_are_served(keyed: TestClient) -> None:
    """The setup itself: each key lists its own store's request, the operator the default's."""
    assert [s["id"] for s in _stores(keyed)["stores"]] == [DEFAULT_STORE, "shop-a", "shop-b"]
    assert _listed(keyed.get("/receive", headers=_as(A_KEY))) == [A_ADDRESS]
    assert _listed(keyed.get("/receive", headers=_as(B_KEY))) == [B_ADDRESS]
    assert _listed(keyed.get("/receive", headers=_as(OPERATOR))) == [DEFAULT_ADDRESS]
    assert _listed(keyed.get("/receive", headers=_as(OPERATOR, "shop-b"))) == [B_ADDRESS]


# --- the admin API is the operator's --------------------------------------------------

ADMIN_CALLS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/stores", None),
    ("POST", "/stores", {"id": "shop-c", "wallet": {"account": "new"}}),
    ("GET", "/stores/shop-a", None),
    ("PATCH", "/stores/shop-a", {"name": "Mine now"}),
    ("PATCH", "/stores/shop-b", {"enabled": False}),
    ("POST", "/stores/shop-a/keys", {"scopes": ["read"]}),
    ("GET", "/stores/shop-a/keys", None),
    ("DELETE", f"/stores/shop-a/keys/{1:016x}", None),
    ("DELETE", f"/stores/shop-b/keys/{2:016x}", None),
]


def test_a_store_key_cannot_manage_stores(keyed: TestClient) -> None:
    """403 on every /stores route, its own store's included; nothing changes."""
    before = _stores(keyed)
    for method, path, body in ADMIN_CALLS:
        answer = keyed.request(method, path, json=body, headers=_as(A_KEY))
        assert answer.status_code == 403, (method, path, answer.text)
        assert "lacks the 'admin' scope" in _refused(answer, 403)["message"]
    assert _stores(keyed) == before
    assert len(keyed.get("/stores/shop-a/keys", headers=_as(OPERATOR)).json()["keys"]) == 1
    assert _listed(keyed.get("/receive", headers=_as(A_KEY))) == [A_ADDRESS]  # key still works
    assert _listed(keyed.get("/receive", headers=_as(B_KEY))) == [B_ADDRESS]


def test_a_store_key_cannot_manage_stores_on_an_open_gateway(open_gateway: TestClient) -> None:
    """Without configured keys a keyless caller is the operator; a store key presented
    there still has its own scopes only (no admin)."""
    for method, path, body in ADMIN_CALLS:
        answer = open_gateway.request(method, path, json=body, headers=_as(A_KEY))
        _refused(answer, 403)
    assert [s["id"] for s in open_gateway.get("/stores").json()["stores"]] == [
        DEFAULT_STORE,
        "shop-a",
        "shop-b",
    ]


# --- bad input at POST /stores creates nothing ------------------------------------------


def test_a_duplicate_id_is_409_and_creates_nothing(keyed: TestClient) -> None:
    before = _stores(keyed)
    for taken in ("shop-a", DEFAULT_STORE):
        answer = keyed.post(
            "/stores",
            json={"id": taken, "name": "Again", "wallet": {"account": "new"}},
            headers=_as(OPERATOR),
        )
        body = _refused(answer, 409)
        assert set(body) == {"status", "message"} and taken in body["message"]
    assert _stores(keyed) == before


def test_a_bad_slug_is_400_and_creates_nothing(keyed: TestClient) -> None:
    before = _stores(keyed)
    for bad in ("Bad Id", "a/b", "a" * 40, ""):
        answer = keyed.post(
            "/stores", json={"id": bad, "wallet": {"account": "new"}}, headers=_as(OPERATOR)
        )
        assert answer.status_code == 400, (bad, answer.text)
        assert set(_refused(answer, 400)) == {"status", "message"}
    assert _stores(keyed) == before


# --- which store a caller acts on ----------------------------------------------------


def test_the_header_picks_the_store_on_an_open_gateway(open_gateway: TestClient) -> None:
    assert _listed(open_gateway.get("/receive")) == [DEFAULT_ADDRESS]
    assert _listed(open_gateway.get("/receive", headers={"X-Xmrgate-Store": "shop-a"})) == [
        A_ADDRESS
    ]
    picked = open_gateway.get("/store", headers={"X-Xmrgate-Store": "shop-b"})
    assert picked.json()["id"] == "shop-b"
    found = open_gateway.get(f"/receive/{B_ADDRESS}", headers={"X-Xmrgate-Store": "shop-b"})
    assert found.status_code == 200
    # ... and only that store: shop-b's address is not in shop-a.
    _refused(open_gateway.get(f"/receive/{B_ADDRESS}", headers={"X-Xmrgate-Store": "shop-a"}), 404)
    _refused(open_gateway.get("/receive", headers={"X-Xmrgate-Store": "no-such"}), 404)


@pytest.mark.parametrize("gateway", ["keyed", "open_gateway"])
def test_a_store_key_naming_another_store_is_refused(
    gateway: str, request: pytest.FixtureRequest
) -> None:
    """403 before anything is read, for another store and for one that does not exist
    alike (the answer tells nothing about which stores exist); its own store's name in
    the header is fine."""
    client: TestClient = request.getfixturevalue(gateway)
    calls: list[tuple[str, str, dict[str, Any] | None]] = [
        ("GET", "/receive", None),
        ("GET", "/store", None),
        ("GET", f"/receive/{B_ADDRESS}", None),
        ("GET", f"/receive/{B_ADDRESS}/callbacks", None),
        ("POST", f"/receive/{B_ADDRESS}/callbacks/{B_EVENT}/retry", None),
        ("DELETE", f"/receive/{B_ADDRESS}", None),
        ("POST", "/receive", {"amount": 1}),
        ("GET", "/events", None),
        ("GET", "/payouts", None),
    ]
    messages = set()
    for store in ("shop-b", "no-such"):
        for method, path, body in calls:
            answer = client.request(method, path, json=body, headers=_as(A_KEY, store))
            body_json = _refused(answer, 403)
            assert B_ADDRESS not in answer.text
            messages.add(body_json["message"])
    assert messages == {"a store's API key acts on its own store only"}
    assert _listed(client.get("/receive", headers=_as(A_KEY, "shop-a"))) == [A_ADDRESS]
    assert _listed(client.get("/receive", headers=_as(B_KEY))) == [B_ADDRESS]  # untouched
    assert client.get(f"/receive/{B_ADDRESS}", headers=_as(B_KEY)).status_code == 200


def test_another_stores_address_is_404_not_403(keyed: TestClient) -> None:
    """A store key asking about another store's request (no header) is told what an
    unknown address is told: 404, whatever it asks, and the request is untouched."""
    unknown = "8" + "C" * 94
    for address in (B_ADDRESS, unknown):
        _refused(keyed.get(f"/receive/{address}", headers=_as(A_KEY)), 404)
        _refused(keyed.get(f"/receive/{address}/callbacks", headers=_as(A_KEY)), 404)
        retry = keyed.post(f"/receive/{address}/callbacks/{B_EVENT}/retry", headers=_as(A_KEY))
        _refused(retry, 404)
        _refused(keyed.delete(f"/receive/{address}", headers=_as(A_KEY)), 404)
    # Same answers, so the 404 tells nothing about whether the address exists elsewhere.
    theirs = keyed.get(f"/receive/{B_ADDRESS}", headers=_as(A_KEY)).json()
    nobody = keyed.get(f"/receive/{unknown}", headers=_as(A_KEY)).json()
    assert theirs == nobody
    # Still there for its own store, its callback never retried by shop-a's call.
    assert keyed.get(f"/receive/{B_ADDRESS}", headers=_as(B_KEY)).status_code == 200
    [callback] = keyed.get(f"/receive/{B_ADDRESS}/callbacks", headers=_as(B_KEY)).json()[
        "callbacks"
    ]
    assert callback["attempts"] == 0
    # The operator reaches it only by naming its store.
    _refused(keyed.get(f"/receive/{B_ADDRESS}", headers=_as(OPERATOR)), 404)
    assert keyed.get(f"/receive/{B_ADDRESS}", headers=_as(OPERATOR, "shop-b")).status_code == 200


# --- an operator key picks any store; its scopes still hold there --------------------


def test_an_operator_key_with_read_only_reads_any_store_and_writes_none(
    keyed: TestClient,
) -> None:
    """The header is not the admin scope: a read-only operator key lists shop-a's
    requests with it, but cannot create a request there nor call /stores."""
    assert _listed(keyed.get("/receive", headers=_as(READER, "shop-a"))) == [A_ADDRESS]
    assert keyed.get(f"/receive/{A_ADDRESS}", headers=_as(READER, "shop-a")).status_code == 200
    refused = keyed.post("/receive", json={"amount": 1}, headers=_as(READER, "shop-a"))
    assert "lacks the 'receive' scope" in _refused(refused, 403)["message"]
    for headers in (_as(READER), _as(READER, "shop-a")):
        _refused(keyed.get("/stores", headers=headers), 403)
    _refused(
        keyed.post(
            "/stores", json={"id": "shop-c", "wallet": {"account": "new"}}, headers=_as(READER)
        ),
        403,
    )
    assert _listed(keyed.get("/receive", headers=_as(A_KEY))) == [A_ADDRESS]  # nothing added
    assert len(_stores(keyed)["stores"]) == 3


# --- every store has its overview: its own figures ------------------------------------


def test_a_store_keys_status_shows_its_own_store_only(keyed: TestClient) -> None:
    """Every store's Gateway has an overview (none was a 404 before): a store key's
    ``GET /status`` counts its store's requests and callbacks only; the operator's (the
    default store's) counts every store's; /metrics stays the operator's."""

    def requests(answer: Any) -> int:
        assert answer.status_code == 200, answer.text
        return sum(answer.json()["payment_requests"].values())

    assert requests(keyed.get("/status", headers=_as(OPERATOR))) == 3
    assert requests(keyed.get("/status", headers=_as(A_KEY))) == 1
    b_status = keyed.get("/status", headers=_as(B_KEY)).json()
    assert sum(b_status["payment_requests"].values()) == 1
    assert b_status["callbacks"] == {"pending": 1, "failed": 0}  # shop-b's own callback
    assert keyed.get("/status", headers=_as(A_KEY)).json()["callbacks"]["pending"] == 0
    _refused(keyed.get("/metrics", headers=_as(A_KEY)), 404)
    assert keyed.get("/metrics", headers=_as(OPERATOR)).status_code == 200
