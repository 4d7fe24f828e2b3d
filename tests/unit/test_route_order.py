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

from starlette.routing import BaseRoute

from tests.unit.gateway_builder import fake_app, fake_gateway
from xmrgate.config import Settings


@dataclass(frozen=True)
class Placed:
    """A route as the router tries it."""

    path: str
    regex: re.Pattern[str]
    methods: frozenset[str]
    endpoint: Any


def _in_order(routes: Iterable[BaseRoute]) -> Iterator[Placed]:
    """The routes with a path, in the order the router tries them (the app's are flat:
    web/route_table.py)."""
    for route in routes:
        if hasattr(route, "path_regex"):
            methods = frozenset(getattr(route, "methods", None) or {"GET"})
            yield Placed(route.path, route.path_regex, methods, route.endpoint)


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
