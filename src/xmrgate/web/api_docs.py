"""``/openapi.json`` and ``/docs``: the API description, behind the ``read`` scope.

``/docs`` is one self-contained page rendered here from the OpenAPI document: no
script, no stylesheet or font from another host (Swagger UI and ReDoc load theirs
from a CDN, which a payment service's operator page must not do).
"""

from __future__ import annotations

from html import escape
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse

from xmrgate.web.api.security import require

router = APIRouter(include_in_schema=False)

PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
METHODS = ("get", "post", "put", "patch", "delete")


@router.get("/openapi.json", dependencies=[require("read")])
async def openapi_document(request: Request) -> JSONResponse:
    """The OpenAPI 3 document of the API."""
    return JSONResponse(request.app.openapi())


@router.get("/docs", dependencies=[require("read")])
async def api_reference(request: Request) -> HTMLResponse:
    """A plain HTML reference of every operation, from the OpenAPI document."""
    html = render_reference(request.app.openapi())
    return HTMLResponse(html, headers={"Content-Security-Policy": PAGE_CSP})


def render_reference(schema: dict[str, Any]) -> str:
    """The reference page: each path, method, summary and description, escaped."""
    info = schema.get("info", {})
    rows = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            rows.append(
                "<section><h2><code>{} {}</code></h2><p>{}</p><p>{}</p></section>".format(
                    method.upper(),
                    escape(path),
                    escape(str(operation.get("summary", ""))),
                    escape(str(operation.get("description", ""))),
                )
            )
    return (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width">'
        f"<title>{escape(str(info.get('title', 'API')))} API</title>"
        "<style>body{font:16px system-ui,sans-serif;max-width:60rem;margin:2rem auto;"
        "padding:0 1rem}h2{font-size:1.1rem;margin-bottom:.2rem}</style>"
        f"<h1>{escape(str(info.get('title', '')))} {escape(str(info.get('version', '')))}</h1>"
        f"<p>{escape(str(info.get('description', '')))}</p>"
        '<p>The machine-readable document: <a href="openapi.json">openapi.json</a>.</p>'
        + "".join(rows)
    )
