"""The app's routes are tried in an order chosen for speed (web/app.py: the hottest
read first, then the customers' pages, then the API, the dashboard last). Whatever the
order, each route must answer its own paths: for every route and each of its methods, a
path made from its template is matched first by that route and no other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from starlette.routing import BaseRoute, compile_path

from tests.unit.gateway_builder import fake_app, fake_gateway
from xmrgate.config import Settings


@dataclass(frozen=True)
class Placed:
    """A route with the prefixes of the routers it was included through."""

    path: str
    regex: re.Pattern[str]
    methods: frozenset[str]
    endpoint: Any


def _in_order(routes: Iterable[BaseRoute], prefix: str = "") -> Iterator[Placed]:
    """The routes as the router tries them, included routers opened in place."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            inner = prefix + getattr(included, "prefix", "")
            inner += getattr(getattr(route, "include_context", None), "prefix", "")
            yield from _in_order(included.routes, inner)
        elif hasattr(route, "path_regex"):
            path = prefix + route.path
            regex = compile_path(path)[0]
            methods = frozenset(getattr(route, "methods", None) or {"GET"})
            yield Placed(path, regex, methods, route.endpoint)


def _sample(template: str) -> str:
    # Path parameters of any converter become one plain segment.
    return re.sub(r"\{[^}]+\}", "x1", template)


def test_every_route_answers_its_own_paths_first() -> None:
    app = fake_app(Settings(), fake_gateway())
    routes = list(_in_order(app.router.routes))
    assert len(routes) > 80  # every part of the app is there (checkout, dashboard, ...)
    wrong = []
    for route in routes:
        path = _sample(route.path)
        for method in sorted(route.methods):
            first = next(r for r in routes if r.regex.match(path) and method in r.methods)
            if first.endpoint is not route.endpoint:
                wrong.append(f"{method} {route.path} answered by {first.path}")
    assert wrong == []


def test_the_customers_pages_come_before_the_api() -> None:
    app = fake_app(Settings(), fake_gateway())
    paths = [placed.path for placed in _in_order(app.router.routes)]
    assert paths.index("/l/{slug:path}") < paths.index("/links")
    assert paths.index("/pay/{address}") < paths.index("/payouts")
