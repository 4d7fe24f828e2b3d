"""Adding a router's routes to the app as they are, not through ``include_router``.

FastAPI 0.165's ``include_router`` keeps the router behind a lazy wrapper that, on the
app's first request, builds every route of every router tried before the match a second
time (each dependant and each pydantic ``TypeAdapter`` again): 90-100 ms of CPU per app,
where its routes were built already when their router was. A gateway pays that once per
worker, on the first customer's request; the tests, which build over a thousand apps,
paid it for nearly every one (about a sixth of the unit tier's Python CPU). The routes
added here are the router's own ``APIRoute`` objects, with the router's prefix, tags,
dependencies and ``include_in_schema`` already in them (``APIRouter.add_api_route``).
One thing is lost: ``app.dependency_overrides`` does not reach them (their provider is
their router's, not the app); nothing in xmrgate or its tests overrides a dependency.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI


def add_routes(app: FastAPI, router: APIRouter) -> None:
    """Append ``router``'s routes to ``app``'s, in order. A router that includes another
    is refused: the included routes would lose the prefix that only the wrapper holds."""
    nested = [route for route in router.routes if hasattr(route, "original_router")]
    if nested:
        raise TypeError(
            "add_routes takes a router without included routers; give each its prefix "
            "and add them one by one"
        )
    app.router.routes.extend(router.routes)
