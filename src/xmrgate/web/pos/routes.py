"""``GET /pos`` and its static files: the point-of-sale shell (mounted with the dashboard).

The shell holds no data: ``static/pos.js`` calls ``/pos/config`` and ``/pos/sales`` with
the till's key. Its Content-Security-Policy is the dashboard's, plus images from this
origin (the checkout's QR code, ``/pay/<address>/qr.svg``).
"""

from __future__ import annotations

import functools
from importlib.resources import files
from string import Template

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from xmrgate import __version__
from xmrgate.domain.errors import NotFound
from xmrgate.web.admin.routes import StaticFile, headers
from xmrgate.web.pos import SHELL_PATH, STATIC_FILES, STATIC_PREFIX

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ]
)


@functools.cache
def shell() -> bytes:
    """The HTML page (the same for everyone: it is rendered once)."""
    text = (files("xmrgate.web.pos") / "templates" / "index.html").read_text("utf-8")
    return Template(text).substitute(version=__version__).encode("utf-8")


@functools.cache
def static_file(name: str) -> StaticFile:
    """A file of the shell by name; NotFound for any name not in ``STATIC_FILES``."""
    found = STATIC_FILES.get(name)
    if found is None:
        raise NotFound("no such file")
    package, media_type = found
    return StaticFile((files(package) / "static" / name).read_bytes(), media_type)


def build_router() -> APIRouter:
    """The routes of the shell (public: ``web/api/security.py`` lets exactly these through)."""
    router = APIRouter(include_in_schema=False)

    @router.get(SHELL_PATH, response_class=HTMLResponse)
    async def pos_page() -> HTMLResponse:
        """The till's single page; the sale being paid is in the URL's #fragment."""
        return HTMLResponse(shell(), headers=headers(CONTENT_SECURITY_POLICY))

    @router.get(STATIC_PREFIX + "{name}")
    async def pos_static(name: str, request: Request) -> Response:
        """``pos.js``, ``format.js`` or ``pos.css``; 304 when the browser has it."""
        found = static_file(name)
        sent = headers()
        sent["ETag"] = found.etag
        if request.headers.get("if-none-match") == found.etag:
            return Response(status_code=304, headers=sent)
        return Response(found.body, media_type=found.media_type, headers=sent)

    return router
