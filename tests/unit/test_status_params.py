"""``GET /receive/:address`` reads its parameters itself (web/api/status_params.py):
documented and validated exactly as FastAPI did when it solved them.

The reference is a FastAPI route declared the way the gateway's route was
(``address: str``, ``min``/``max``: ``Annotated[int | None, Query(ge=0, le=2**31 - 1)]``).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from starlette.routing import Route

from tests.unit.gateway_builder import fake_app, fake_gateway
from xmrgate.config import Settings
from xmrgate.web.api.status_params import height_bound

reference = FastAPI()
Height = Annotated[int | None, Query(ge=0, le=2**31 - 1)]


@reference.get("/receive/{address}")
async def as_fastapi_read_them(address: str, min: Height = None, max: Height = None) -> Any:
    return {"min": min, "max": max}


QUERIES = [
    "",
    "min=5",
    "max=7&min=0",
    "min=-1",
    "min=abc",
    "max=1.5",
    "max=2147483647",
    "max=2147483648",
    "min=99999999999999999999999999",
    "min=NaN",
    "max=Infinity",
    "min=1e3",
    "min=&max=",
    "min=%00",
    "min=1&min=2&max=3&max=4",
    "min=-0",
    "min=+1",
    "min=%201%20",
    "min=" + quote("١٢٣"),
    "min=" + "9" * 4000,
    "min[]=1&max[x]=2",
]


def test_the_parameters_are_documented_as_fastapi_would() -> None:
    ours = fake_app(Settings(), fake_gateway()).openapi()["paths"]["/receive/{address}"]["get"]
    theirs = reference.openapi()["paths"]["/receive/{address}"]["get"]
    assert ours["parameters"] == theirs["parameters"]


def _ours(query: str) -> tuple[int, Any]:
    request = Request({"type": "http", "query_string": query.encode(), "headers": []})
    try:
        return 200, {"min": height_bound(request, "min"), "max": height_bound(request, "max")}
    except RequestValidationError as exc:
        return 422, sorted(str(error["loc"]) for error in exc.errors())


@pytest.mark.parametrize("query", QUERIES)
def test_min_and_max_are_read_as_fastapi_read_them(query: str) -> None:
    with TestClient(reference) as client:
        answer = client.get(f"/receive/x?{query}")
    status, ours = _ours(query)
    assert status == answer.status_code
    if status == 200:
        assert ours == answer.json()
    else:
        # The first bad parameter is named as FastAPI names it.
        named = {tuple(error["loc"]) for error in answer.json()["detail"]}
        assert any(str(loc) in ours for loc in named)


def test_the_read_is_answered_by_a_plain_route_tried_first() -> None:
    """FastAPI's route documents it; the plain one before it answers, GET only."""
    app = fake_app(Settings(), fake_gateway())
    first = app.router.routes[0]
    assert type(first) is Route
    assert (first.path, first.methods) == ("/receive/{address}", {"GET"})
    with TestClient(app) as client:
        address = client.post("/receive", json={"amount": 5}).json()["address"]
        answer = client.get(f"/receive/{address}")
        assert answer.status_code == 200 and answer.json()["amount"]["expected"] == 5
        assert client.get(f"/receive/{address}?min=-1").json()["status"] == 400
        for method in ("HEAD", "PUT"):  # as FastAPI's GET-only route answered them
            assert client.request(method, f"/receive/{address}").status_code == 405
        assert client.delete(f"/receive/{address}").json()["deleted"] is True
