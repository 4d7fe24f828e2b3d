"""A static single-page shell and its files: what ``web/admin`` and ``web/pos`` serve.

Both the dashboard and the point-of-sale screen are one HTML page plus a few CSS and JS
files that hold no data (their JS calls the API from the browser). This module serves
such a shell once for both, so its headers cannot drift apart between them:

- the page: rendered once from ``templates/index.html`` (``$version`` filled in), with
  the checkout's security headers and the shell's own Content-Security-Policy;
- its files: only the names in the table (an exact lookup, so no path can escape
  ``static/``), each read once, with a strong ``ETag`` and ``304`` on ``If-None-Match``;
- ``Cache-Control: no-cache`` on both, so a browser keeps them but asks again each time
  (a new release is picked up at once, and an unchanged file costs one 304).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from string import Template

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from xmrgate import __version__
from xmrgate.domain.errors import NotFound
from xmrgate.web.checkout.page import security_headers


def content_security_policy(img_src: str) -> str:
    """A shell's CSP: scripts, styles and fetches from this origin only (no inline code,
    nothing from another host), no forms, no framing, no ``<base>``; images as
    ``img_src`` says (the only directive the shells differ in)."""
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            f"img-src {img_src}",
            "form-action 'none'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ]
    )


def headers(csp: str | None = None) -> dict[str, str]:
    """The checkout's security headers; the shell's files may be kept and revalidated."""
    found = security_headers(csp)
    # The checkout says no-store (its pages hold a payment's state); a shell holds no
    # data, so the browser may keep it as long as it revalidates.
    found["Cache-Control"] = "no-cache"
    return found


@dataclass(frozen=True, slots=True)
class StaticFile:
    """One file of a shell, read once, with its ETag."""

    body: bytes
    media_type: str

    @property
    def etag(self) -> str:
        """A strong validator: the browser revalidates and gets 304 while it is unchanged."""
        return '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'


class StaticShell:
    """One shell: its page at ``shell_path`` and its files under ``static_prefix``.

    ``package`` holds ``templates/index.html``; its last part names the routes
    (``admin_page``, ``admin_static``, ``pos_page``, ``pos_static``). A
    ``static_files`` entry maps a file's name to (the package whose ``static/`` holds
    it, its media type), so one shell may serve another's file (the POS serves the
    dashboard's ``format.js``). ``csp`` is the page's Content-Security-Policy.
    """

    def __init__(
        self,
        package: str,
        shell_path: str,
        static_prefix: str,
        static_files: Mapping[str, tuple[str, str]],
        csp: str,
    ) -> None:
        self.package = package
        self.name = package.rpartition(".")[2]
        self.shell_path = shell_path
        self.static_prefix = static_prefix
        self.static_files = static_files
        self.csp = csp
        # Per instance (a functools.cache on the methods would hold every instance and
        # share one table): the page and each file are read from the package once.
        self.shell = functools.cache(self._render_shell)
        self.static_file = functools.cache(self._read_static_file)

    def _render_shell(self) -> bytes:
        """The HTML page (the same for everyone: it is rendered once)."""
        text = (files(self.package) / "templates" / "index.html").read_text("utf-8")
        return Template(text).substitute(version=__version__).encode("utf-8")

    def _read_static_file(self, name: str) -> StaticFile:
        """A file of the shell by name; NotFound for any name not in ``static_files``."""
        found = self.static_files.get(name)
        if found is None:
            raise NotFound("no such file")
        package, media_type = found
        return StaticFile((files(package) / "static" / name).read_bytes(), media_type)

    def build_router(self) -> APIRouter:
        """The routes of the shell (public: ``web/api/security.py`` lets exactly its
        ``SHELL_PATHS`` through, and nothing under the prefix is data)."""
        router = APIRouter(include_in_schema=False)

        async def page() -> HTMLResponse:
            """The shell's single page; its JS picks the view from the URL's #fragment."""
            return HTMLResponse(self.shell(), headers=headers(self.csp))

        async def static(name: str, request: Request) -> Response:
            """One file of ``static_files``; 304 when the browser has it."""
            found = self.static_file(name)
            sent = headers()
            sent["ETag"] = found.etag
            if request.headers.get("if-none-match") == found.etag:
                return Response(status_code=304, headers=sent)
            return Response(found.body, media_type=found.media_type, headers=sent)

        router.add_api_route(
            self.shell_path,
            page,
            methods=["GET"],
            response_class=HTMLResponse,
            name=f"{self.name}_page",
        )
        router.add_api_route(
            self.static_prefix + "{name}", static, methods=["GET"], name=f"{self.name}_static"
        )
        return router
