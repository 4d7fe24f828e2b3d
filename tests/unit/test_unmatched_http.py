"""Unmatched receipts over HTTP, on the real app (in-process ASGI, a migrated SQLite copy,
no wallet): scopes, another store's receipt 404 (never 403), bad input 400 with nothing
written, 409 on a second dismissal, the cursor, and the feed's event with its address."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import insert, select

from testsupport.migrated import MigratedTemplates
from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.outbox import insert_events
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.tables import unmatched_receipts
from xmrgate.config import Settings
from xmrgate.domain.stores import Store, StoreKey
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services

OPERATOR = "operator-key-0123456789"
READER = "operator-reader-0123456789"
A_KEY = "xgs_shop-a-key-0123456789abcdef"
NO_WALLET = "http://127.0.0.1:9/json_rpc"


def _receipt(store: str, index: int) -> dict[str, Any]:
    now = utcnow()
    return {
        "store_id": store,
        "subaddr_index": index,
        "address": f"8{store[:1].upper()}{index:03d}" + "x" * 90,
        "tx_hash": f"{index:064x}",
        "amount": 1000 * index,
        "fee": 1,
        "height": 100,
        "timestamp": 1_800_000_000,
        "unlock_time": 0,
        "double_spend_seen": False,
        "state": "confirmed",
        "first_seen": 1_800_000_000,
        "status": "open",
        "created_at": now,
        "updated_at": now,
    }


def _seed(url: str) -> dict[str, list[int]]:
    """Store shop-a with a key; three receipts of the default store, one of shop-a, and
    the default store's first receipt's event in the feed."""

    async def main() -> dict[str, list[int]]:
        db = Database(url)
        try:
            stores = SqlStores(db)
            await stores.insert(Store(id="shop-a", name="shop-a", account_index=1))
            await stores.add_key(
                StoreKey(
                    id="0" * 15 + "1",
                    store_id="shop-a",
                    digest=hashlib.sha256(A_KEY.encode()).digest(),
                    scopes=frozenset({"read", "receive"}),
                )
            )
            ids: dict[str, list[int]] = {"default": [], "shop-a": []}
            async with db.write() as conn:
                for store, index in (("default", 1), ("default", 2), ("default", 3), ("shop-a", 1)):
                    made = await conn.execute(
                        insert(unmatched_receipts)
                        .values(_receipt(store, index))
                        .returning(unmatched_receipts.c.id)
                    )
                    ids[store].append(int(made.scalar_one()))
                await insert_events(
                    conn,
                    [
                        {
                            "id": "00000000-0000-0000-0000-0000000000e1",
                            "request_id": None,
                            "receipt_id": ids["default"][0],
                            "kind": "transfer.unmatched",
                            "tx_hash": "1" * 64,
                            "callback_url": None,
                            "payload": json.dumps({"event": "transfer.unmatched"}),
                            "store_id": "default",
                        }
                    ],
                )
            return ids
        finally:
            await db.dispose()

    return asyncio.run(main())


@pytest.fixture
def seeded(
    tmp_path: Path, migrated_templates: MigratedTemplates
) -> tuple[TestClient, dict[str, list[int]], str]:
    path = tmp_path / "unmatched.sqlite3"
    url = migrated_templates.sqlite_copy(path)
    ids = _seed(url)
    settings = Settings(
        sqlite=str(path), api_keys=f"{OPERATOR} {READER}:read", rpc_address=NO_WALLET
    )
    services = Services.build(settings)
    asyncio.run(services.stores.load())
    return TestClient(build_app(settings, services)), ids, url


def _as(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _stored(url: str) -> list[tuple[Any, ...]]:
    async def main() -> list[tuple[Any, ...]]:
        db = Database(url)
        try:
            async with db.read() as conn:
                rows = await conn.execute(
                    select(
                        unmatched_receipts.c.id,
                        unmatched_receipts.c.status,
                        unmatched_receipts.c.note,
                    ).order_by(unmatched_receipts.c.id)
                )
                return [tuple(r) for r in rows]
        finally:
            await db.dispose()

    return asyncio.run(main())


def test_the_list_pages_newest_first_and_keeps_to_the_store(seeded: Any) -> None:
    client, ids, _url = seeded
    first = client.get("/unmatched", params={"limit": 2}, headers=_as(OPERATOR))
    assert first.status_code == 200, first.text
    assert [r["id"] for r in first.json()["unmatched"]] == ids["default"][::-1][:2]
    rest = client.get(
        "/unmatched",
        params={"limit": 2, "cursor": first.json()["next_cursor"]},
        headers=_as(OPERATOR),
    )
    assert [r["id"] for r in rest.json()["unmatched"]] == [ids["default"][0]]
    assert rest.json()["next_cursor"] is None
    mine = client.get("/unmatched", headers=_as(A_KEY)).json()["unmatched"]
    assert [r["id"] for r in mine] == ids["shop-a"]
    item = mine[0]
    assert (item["amount"], item["subaddr_index"], item["state"], item["locked"]) == (
        1000,
        1,
        "confirmed",
        True,
    )


def test_another_stores_receipt_is_not_found(seeded: Any) -> None:
    client, ids, url = seeded
    theirs = ids["default"][0]
    before = _stored(url)
    assert client.get(f"/unmatched/{theirs}", headers=_as(A_KEY)).status_code == 404
    r = client.post(f"/unmatched/{theirs}/dismiss", json={"note": "x"}, headers=_as(A_KEY))
    assert r.status_code == 404 and r.json()["message"], r.text
    assert _stored(url) == before


def test_dismiss_needs_the_receive_scope_and_a_note_and_happens_once(seeded: Any) -> None:
    client, ids, url = seeded
    target = ids["default"][1]
    path = f"/unmatched/{target}/dismiss"
    before = _stored(url)
    assert client.post(path, json={"note": "x"}, headers=_as(READER)).status_code == 403
    assert client.post(path, json={"note": "x"}).status_code == 401
    for body in (
        {},
        {"note": ""},
        {"note": "   "},
        {"note": "x" * 501},
        {"note": 5},
        {"note": "a\x00b"},
        {"note": "x", "other": 1},
    ):
        r = client.post(path, json=body, headers=_as(OPERATOR))
        assert r.status_code == 400, (body, r.status_code, r.text)
        assert r.json()["message"], r.text
    assert client.post(
        "/unmatched/0/dismiss", json={"note": "x"}, headers=_as(OPERATOR)
    ).status_code in (400, 404)
    assert client.get("/unmatched/abc", headers=_as(OPERATOR)).status_code == 400
    assert _stored(url) == before

    done = client.post(path, json={"note": "a test payment"}, headers=_as(OPERATOR))
    assert done.status_code == 200, done.text
    assert (done.json()["status"], done.json()["note"]) == ("dismissed", "a test payment")
    again = client.post(path, json={"note": "again"}, headers=_as(OPERATOR))
    assert again.status_code == 409 and "dismissed" in again.json()["message"], again.text
    listed = client.get("/unmatched", params={"status": "dismissed"}, headers=_as(READER))
    assert [r["id"] for r in listed.json()["unmatched"]] == [target]
    bad = client.get("/unmatched", params={"status": "lost"}, headers=_as(READER))
    assert bad.status_code == 400, bad.text


def test_the_feed_shows_a_receipts_event_with_its_address(seeded: Any) -> None:
    client, _ids, _url = seeded
    events = client.get("/events", headers=_as(OPERATOR)).json()["events"]
    assert [(e["event"], e["address"]) for e in events] == [
        ("transfer.unmatched", "8D001" + "x" * 90)
    ]
    assert client.get("/events", headers=_as(A_KEY)).json()["events"] == []
