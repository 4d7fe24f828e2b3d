"""``HttpMetrics``: counts and times every HTTP answer by route template and status.

A plain ASGI middleware (no BaseHTTPMiddleware: the read path is benchmarked): it
notes the status of ``http.response.start`` and hands route, method, status and
duration to the observer once the app returns. The route is the template Starlette
matched (``/receive/{address}``), never the raw path, so label values stay few; a
request refused before routing (401, 413, 431) is matched here against the routes,
and a path no route knows is counted as ``(unmatched)``.
"""

from __future__ import annotations

import time

from starlette.routing import BaseRoute, Match, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from xmrgate.core.observer import Observer

UNMATCHED = "(unmatched)"


class HttpMetrics:
    """Reports each HTTP request to ``observer.http_request``."""

    def __init__(self, app: ASGIApp, observer: Observer, router: Router) -> None:
        self.app = app
        self.observer = observer
        self.router = router
        self._flat: list[BaseRoute] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers if the app raises before answering

        async def noting_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noting_send)
        finally:
            self.observer.http_request(
                self._route(scope), scope["method"], status, time.perf_counter() - started
            )

    def _route(self, scope: Scope) -> str:
        route = scope.get("route")
        if isinstance(route, BaseRoute):
            return str(getattr(route, "path", UNMATCHED))
        # Not routed (refused by a guard first, or unknown): find the template ourselves.
        if self._flat is None:
            # The app's routes are flat, each with its whole template (web/route_table.py).
            self._flat = [route for route in self.router.routes if hasattr(route, "path")]
        for candidate in self._flat:
            match, _ = candidate.matches(scope)
            if match is not Match.NONE:
                return str(getattr(candidate, "path", UNMATCHED))
        return UNMATCHED
