"""The app's routes are its routers' own routes, added as they are (web/route_table.py):
no router is included through FastAPI's lazy wrapper, which built every route again on
each app's first request."""

from __future__ import annotations

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute

from tests.unit.gateway_builder import fake_app, fake_gateway
from xmrgate.config import Settings
from xmrgate.web.route_table import add_routes


def test_the_app_holds_no_included_router() -> None:
    app = fake_app(Settings(metrics=True), fake_gateway())
    wrapped = [route for route in app.router.routes if hasattr(route, "original_router")]
    assert wrapped == []
    paths = {route.path for route in app.router.routes if isinstance(route, APIRoute)}
    # Greenfield's parts keep their prefix; the other parts are there too.
    assert {"/api/v1/stores", "/api/v1/server/info", "/status", "/metrics"} <= paths


def test_a_router_that_includes_another_is_refused() -> None:
    inner = APIRouter()

    @inner.get("/inner")
    async def endpoint() -> dict[str, str]:
        return {}

    outer = APIRouter(prefix="/outer")
    outer.include_router(inner)
    app = FastAPI()
    before = list(app.router.routes)
    with pytest.raises(TypeError, match="without included routers"):
        add_routes(app, outer)
    assert app.router.routes == before  # nothing added


def test_routes_are_added_in_order_with_their_router_s_prefix() -> None:
    router = APIRouter(prefix="/p", include_in_schema=False)

    @router.get("/a")
    async def a() -> dict[str, str]:
        return {}

    @router.get("/b")
    async def b() -> dict[str, str]:
        return {}

    app = FastAPI()
    before = len(app.router.routes)
    add_routes(app, router)
    added = app.router.routes[before:]
    assert [(r.path, r.include_in_schema) for r in added] == [("/p/a", False), ("/p/b", False)]
