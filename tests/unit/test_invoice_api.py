"""The invoice fields and endpoints on the real app (in-process ASGI, SQLite, no wallet):
bad values are 400 JSON, the list and the feed answer in their documented shapes."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from testsupport.migrated import MigratedTemplates
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.config import Settings
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services

ADDRESS = "8" + "A" * 94
OTHER = "8" + "B" * 94


def _seed(url: str) -> None:
    """Two requests (one with expiry and tolerance, already expired) and two events."""

    async def main() -> None:
        db = Database(url)
        try:
            await db.migrate()
            store = PaymentStore(db)
            old = await store.create(
                address=ADDRESS,
                subaddr_index=1,
                amount=100,
                description="old",
                callback_url=None,
                return_url=None,
                expires_at=utcnow() - timedelta(seconds=1),
                underpay_tolerance=10,
            )
            await store.create(
                address=OTHER,
                subaddr_index=2,
                amount=5,
                description="new",
                callback_url=None,
                return_url=None,
            )
            async with db.write() as conn:
                await insert_events(
                    conn,
                    [
                        {
                            "id": f"00000000-0000-0000-0000-00000000000{n}",
                            "request_id": old.id,
                            "kind": "request.expired",
                            "tx_hash": "",
                            "callback_url": None,
                            "payload": json.dumps({"n": n}),
                        }
                        for n in (1, 2)
                    ],
                )
        finally:
            await db.dispose()

    asyncio.run(main())


@pytest.fixture
def client(tmp_path: Path, migrated_templates: MigratedTemplates) -> TestClient:
    path = tmp_path / "x.sqlite3"
    # A copy of the migrated template: _seed's migrate() then finds nothing to do.
    _seed(migrated_templates.sqlite_copy(path))
    settings = Settings(sqlite=str(path))
    services = Services.build(settings)
    services.gateway.identity.primary_address = "4PrimaryAddress"
    return TestClient(build_app(settings, services))


def _is_400(answer: Any) -> None:
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["status"] == 400 and body["message"]


@pytest.mark.parametrize(
    "extra",
    [
        {"expires_in": 0},
        {"expires_in": 2_592_001},
        {"expires_in": -5},
        {"expires_in": "60"},
        {"expires_in": 1.5},
        {"underpay_tolerance": -1},
        {"underpay_tolerance": 101},
        {"underpay_tolerance": "1"},
    ],
)
def test_bad_invoice_fields_are_400(client: TestClient, extra: dict[str, Any]) -> None:
    """Out-of-range or non-integer expires_in / underpay_tolerance: 400 JSON, never 500."""
    _is_400(client.post("/receive", json={"amount": 100, **extra}))


@pytest.mark.parametrize(
    "query",
    [
        "status=bogus",
        "status=paid&status=nope",
        "limit=0",
        "limit=501",
        "cursor=%21%21not-ours",
        "cursor=MTIz",
        "created_after=yesterday",
        "created_after=2030-01-02T00:00:00Z&created_before=2030-01-01T00:00:00Z",
        # A bare number is not an RFC 3339 time (pydantic's datetime took it as Unix time).
        "created_before=456075261",
        "created_after=2030-13-01T00:00:00Z",
        # A cursor is only ever a next_cursor: never empty.
        "cursor=",
    ],
)
def test_bad_list_queries_are_400(client: TestClient, query: str) -> None:
    """Unknown statuses, limits out of 1..500, foreign cursors, bad times: 400 JSON."""
    _is_400(client.get(f"/receive?{query}"))


@pytest.mark.parametrize("query", ["after=-1", "limit=0", "limit=501", "after=x"])
def test_bad_feed_queries_are_400(client: TestClient, query: str) -> None:
    """The feed refuses negative positions and limits out of 1..500."""
    _is_400(client.get(f"/events?{query}"))


def test_list_shape_and_expiry(client: TestClient) -> None:
    """Newest first; an open request past expires_at is listed as expired."""
    body = client.get("/receive").json()
    assert body["next_cursor"] is None
    assert [r["address"] for r in body["requests"]] == [OTHER, ADDRESS]
    newest, oldest = body["requests"]
    assert set(newest) == {"address", "amount", "description", "created_at", "expires_at", "status"}
    assert (newest["status"], newest["expires_at"]) == ("waiting", None)
    assert oldest["status"] == "expired" and oldest["expires_at"].endswith("Z")
    only = client.get("/receive?status=expired").json()["requests"]
    assert [r["address"] for r in only] == [ADDRESS]
    first = client.get("/receive?limit=1").json()
    assert [r["address"] for r in first["requests"]] == [OTHER]
    rest = client.get(f"/receive?limit=1&cursor={first['next_cursor']}").json()
    assert [r["address"] for r in rest["requests"]] == [ADDRESS]
    assert rest["next_cursor"] is None


def test_status_has_invoice_fields(client: TestClient) -> None:
    """GET /receive/:address adds expires_at, status and amount.due (tolerance applied)."""
    body = client.get(f"/receive/{ADDRESS}").json()
    assert body["status"] == "expired"
    assert body["amount"] == {"expected": 100, "covered": {"total": 0, "unlocked": 0}, "due": 90}
    assert body["complete"] is False
    plain = client.get(f"/receive/{OTHER}").json()
    assert (plain["status"], plain["expires_at"], plain["amount"]["due"]) == ("waiting", None, 5)


def test_feed_pages(client: TestClient) -> None:
    """Events in seq order with address and parsed payload; next_after continues."""
    body = client.get("/events?limit=1").json()
    (event,) = body["events"]
    assert event == {"seq": 1, "address": ADDRESS, "event": "request.expired", "payload": {"n": 1}}
    assert body["next_after"] == 1
    body = client.get("/events?after=1").json()
    assert [e["seq"] for e in body["events"]] == [2]
    assert client.get("/events?after=2").json() == {"events": [], "next_after": None}


def test_openapi_documents_the_invoice_fields_and_endpoints(client: TestClient) -> None:
    """The new request fields, the six statuses, the list and the feed are in /openapi.json."""
    doc = client.get("/openapi.json").json()
    body = doc["components"]["schemas"]["ReceiveRequest"]["properties"]
    assert body["expires_in"]["anyOf"][0]["maximum"] == 2_592_000
    assert body["underpay_tolerance"]["anyOf"][0]["minimum"] == 0
    statuses = doc["components"]["schemas"]["InvoiceStatus"]["enum"]
    assert statuses == ["waiting", "partial", "paid", "complete", "expired", "paid_late"]
    listing = doc["paths"]["/receive"]["get"]
    assert {p["name"] for p in listing["parameters"]} >= {
        "status",
        "created_after",
        "created_before",
        "limit",
        "cursor",
    }
    assert {p["name"] for p in doc["paths"]["/events"]["get"]["parameters"]} == {"after", "limit"}
    schemas = doc["components"]["schemas"]
    for name in ("ReceiveStatus", "CreatedRequest", "RequestList", "EventPage"):
        assert name in schemas, name
    assert set(schemas["Amount"]["properties"]) == {"expected", "covered", "due"}


def test_answers_have_the_documented_fields(client: TestClient) -> None:
    """Real answers carry exactly the fields their OpenAPI models list."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]

    def fields(name: str) -> set[str]:
        return set(schemas[name]["properties"])

    assert set(client.get(f"/receive/{ADDRESS}").json()) == fields("ReceiveStatus")
    page = client.get("/receive").json()
    assert set(page) == fields("RequestList")
    assert set(page["requests"][0]) == fields("ListedRequest")
    feed = client.get("/events").json()
    assert set(feed) == fields("EventPage")
    assert set(feed["events"][0]) == fields("FeedEvent")
