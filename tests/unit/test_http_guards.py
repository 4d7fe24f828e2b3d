"""The HTTP guards against small leaks, on the real app (in-process ASGI, SQLite).

No wallet is needed: every answer here is decided before a use case runs, or by a
read of an empty SQLite database, so the app runs without its lifespan.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.unit.test_invoice_api import ADDRESS as STORED
from tests.unit.test_invoice_api import _seed as seed_two_requests
from xmrgate.config import Settings
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services

READ_KEY = "reader-key-0123456789"
RECEIVE_KEY = "receiver-key-0123456789"
ADDRESS = "8" + "A" * 94


def _client(tmp_path: Path, keys: str | None) -> tuple[TestClient, Services]:
    settings = Settings(sqlite=str(tmp_path / "x.sqlite3"), api_keys=keys)
    services = Services.build(settings)
    services.gateway.identity.primary_address = "4PrimaryAddress"
    return TestClient(build_app(settings, services)), services


@pytest.fixture
def keyed(tmp_path: Path) -> TestClient:
    client, _ = _client(tmp_path, f"{READ_KEY}:read {RECEIVE_KEY}:receive")
    return client


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("path", ["/openapi.json", "/docs", "/redoc"])
def test_api_description_needs_the_read_scope(keyed: TestClient, path: str) -> None:
    assert keyed.get(path).status_code == 401
    # /redoc is gone (Swagger UI's self-contained page is /docs): 404 once authenticated.
    refused = keyed.get(path, headers=_bearer(RECEIVE_KEY))
    assert refused.status_code == (404 if path == "/redoc" else 403)
    allowed = keyed.get(path, headers=_bearer(READ_KEY))
    assert allowed.status_code == (404 if path == "/redoc" else 200)


def test_docs_page_loads_nothing_from_another_host(keyed: TestClient) -> None:
    page = keyed.get("/docs", headers=_bearer(READ_KEY))
    assert "/receive" in page.text and "<script" not in page.text
    assert "http://" not in page.text and "https://" not in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'")


def test_malformed_json_without_a_key_is_401(keyed: TestClient) -> None:
    r = keyed.post("/receive", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 401
    assert r.json()["status"] == 401


def test_moneropay_header_only_for_authenticated_callers(keyed: TestClient) -> None:
    assert "x-moneropay-address" not in keyed.get("/receive/" + ADDRESS).headers
    assert "x-moneropay-address" not in keyed.get("/health").headers
    # No lifespan: the database is not migrated, so the read is a 503; still authenticated.
    authed = keyed.get("/receive/" + ADDRESS, headers=_bearer(READ_KEY))
    assert authed.status_code == 503
    assert authed.headers["x-moneropay-address"] == "4PrimaryAddress"


def test_moneropay_header_everywhere_without_keys(tmp_path: Path) -> None:
    client, _ = _client(tmp_path, None)
    assert client.get("/receive/" + ADDRESS).headers["x-moneropay-address"] == "4PrimaryAddress"


def test_checkout_cannot_be_framed(tmp_path: Path) -> None:
    """A real checkout page (a stored request), its status JSON and its 404 page."""
    path = tmp_path / "framed.sqlite3"
    seed_two_requests(f"sqlite+aiosqlite:///{path}")
    settings = Settings(sqlite=str(path))
    client = TestClient(build_app(settings, Services.build(settings)))
    page = client.get(f"/pay/{STORED}")
    assert page.status_code == 200 and STORED in page.text
    missing = client.get("/pay/" + "x" * 200)
    assert missing.status_code == 404
    for answer in (page, missing):
        assert answer.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert client.get(f"/pay/{STORED}/status.json").headers["x-frame-options"] == "DENY"


def test_too_many_headers_is_431(keyed: TestClient) -> None:
    headers = {f"x-h{i}": "v" for i in range(150)}
    r = keyed.get("/health", headers=headers)
    assert r.status_code == 431 and r.json()["status"] == 431
    big = keyed.get("/health", headers={"x-big": "v" * 20_000})
    assert big.status_code == 431
