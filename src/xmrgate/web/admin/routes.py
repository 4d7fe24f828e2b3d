"""``GET /admin`` and its static files: the dashboard's shell (mounted unless ``--no-admin``).

The shell holds no data: the JS in ``static/`` calls the API from the browser. Its
Content-Security-Policy allows scripts, styles and fetches from this origin only (no
inline code, nothing from another host), forbids framing, and sends no referrer.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib.resources import files
from string import Template

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from xmrgate import __version__
from xmrgate.domain.errors import NotFound
from xmrgate.web.admin import SHELL_PATH, STATIC_FILES, STATIC_PREFIX
from xmrgate.web.checkout.page import security_headers

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src data:",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ]
)


@dataclass(frozen=True, slots=True)
class StaticFile:
    """One file of the shell, read once, with its ETag."""

    body: bytes
    media_type: str

    @property
    def etag(self) -> str:
        """A strong validator: the browser revalidates and gets 304 while it is unchanged."""
        return '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'


def _read(folder: str, name: str) -> bytes:
    return (files("xmrgate.web.admin") / folder / name).read_bytes()


@functools.cache
def shell() -> bytes:
    """The HTML page (the same for everyone: it is rendered once)."""
    page = Template(_read("templates", "index.html").decode("utf-8"))
    return page.substitute(version=__version__).encode("utf-8")


@functools.cache
def static_file(name: str) -> StaticFile:
    """A file of ``static/`` by name; NotFound for any name not in ``STATIC_FILES``."""
    media_type = STATIC_FILES.get(name)
    if media_type is None:
        raise NotFound("no such file")
    return StaticFile(_read("static", name), media_type)


def headers(csp: str | None = None) -> dict[str, str]:
    """The checkout's security headers; the shell's files may be kept and revalidated."""
    found = security_headers(csp)
    found["Cache-Control"] = "no-cache"
    return found


def build_router() -> APIRouter:
    """The routes of the shell (public: ``web/api/security.py`` lets exactly these through)."""
    router = APIRouter(include_in_schema=False)

    @router.get(SHELL_PATH, response_class=HTMLResponse)
    async def admin_page() -> HTMLResponse:
        """The dashboard's single page; its JS picks the view from the URL's #fragment."""
        return HTMLResponse(shell(), headers=headers(CONTENT_SECURITY_POLICY))

    @router.get(STATIC_PREFIX + "{name}")
    async def admin_static(name: str, request: Request) -> Response:
        """``admin.js``, ``format.js`` or ``admin.css``; 304 when the browser has it."""
        found = static_file(name)
        sent = headers()
        sent["ETag"] = found.etag
        if request.headers.get("if-none-match") == found.etag:
            return Response(status_code=304, headers=sent)
        return Response(found.body, media_type=found.media_type, headers=sent)

    return router
