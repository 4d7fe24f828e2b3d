"""A store's ``pos_confirmations`` over HTTP: the fewest confirmations its POS
screens wait for before "Paid".

The real app in process on a seeded copy of the migrated SQLite database (the stores of
``test_stores_http``: ``shop-a``, ``shop-b``, each with a store key, and the default
store), its store registry loaded as the lifespan's first load does:

- every store has 1 (the default store's row too: the migration's server default);
  ``PATCH /stores/{id}`` sets 0 to 10 and ``GET /pos/config`` answers it at once, each
  store its own;
- ``POST /stores`` takes it, checked before anything is made;
- a value outside 0..10, a string, a float, a boolean or null is 400 with the API's
  ``{"status", "message"}``; an unknown store is 404; a store key (even its own store)
  is 403: it never manages stores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.test_stores_http import A_KEY, OPERATOR, READER, _app, _as
from testsupport.migrated import MigratedTemplates


@pytest.fixture
def keyed(tmp_path: Path, migrated_templates: MigratedTemplates) -> TestClient:
    return _app(tmp_path, migrated_templates, f"{OPERATOR} {READER}:read")


def refused(answer: Any, status: int, words: str = "") -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == status and words in body["message"], body


def bad_value(answer: Any) -> None:
    """400 for the value of a known setting (never "Extra inputs are not permitted")."""
    refused(answer, 400, "pos_confirmations")
    assert "not permitted" not in answer.json()["message"]


def confirmations(client: TestClient, store: str) -> int:
    """What the POS screens of ``store`` are told (an operator key picks the store)."""
    answer = client.get("/pos/config", headers=_as(OPERATOR, store))
    assert answer.status_code == 200, answer.text
    found: int = answer.json()["confirmations"]
    return found


def test_every_store_starts_at_one_and_a_patch_reaches_the_pos(keyed: TestClient) -> None:
    stores = keyed.get("/stores", headers=_as(OPERATOR)).json()["stores"]
    assert {s["id"]: s["pos_confirmations"] for s in stores} == {
        "default": 1,
        "shop-a": 1,
        "shop-b": 1,
    }
    assert confirmations(keyed, "default") == 1
    for store, value in (("shop-a", 3), ("default", 0), ("shop-b", 10)):
        answer = keyed.patch(
            f"/stores/{store}", json={"pos_confirmations": value}, headers=_as(OPERATOR)
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["pos_confirmations"] == value
    assert [confirmations(keyed, s) for s in ("default", "shop-a", "shop-b")] == [0, 3, 10]
    again = keyed.get("/stores/shop-a", headers=_as(OPERATOR)).json()
    assert again["pos_confirmations"] == 3


@pytest.mark.parametrize("value", [-1, 11, 100, "2", 1.5, True, None])
def test_a_bad_value_is_400_and_changes_nothing(keyed: TestClient, value: Any) -> None:
    answer = keyed.patch("/stores/shop-a", json={"pos_confirmations": value}, headers=_as(OPERATOR))
    bad_value(answer)
    assert confirmations(keyed, "shop-a") == 1


@pytest.mark.parametrize("value", [-1, 11, "2", None])
def test_a_new_store_with_a_bad_value_is_400_and_not_made(keyed: TestClient, value: Any) -> None:
    body = {"id": "shop-c", "wallet": {"account": "new"}, "pos_confirmations": value}
    bad_value(keyed.post("/stores", json=body, headers=_as(OPERATOR)))
    refused(keyed.get("/stores/shop-c", headers=_as(OPERATOR)), 404)


def test_only_operators_set_it(keyed: TestClient) -> None:
    body = {"pos_confirmations": 5}
    refused(keyed.patch("/stores/shop-a", json=body, headers=_as(A_KEY)), 403)
    refused(keyed.patch("/stores/shop-b", json=body, headers=_as(A_KEY)), 403)
    refused(keyed.patch("/stores/shop-a", json=body, headers=_as(READER)), 403)
    refused(keyed.patch("/stores/nope", json=body, headers=_as(OPERATOR)), 404)
    assert confirmations(keyed, "shop-a") == 1
