"""What the public HTML pages of a store share: ``web/link_page`` and ``web/refund_page``.

Both are the checkout's page (``web/checkout/page.py``) with one form: the same
stylesheet, read from the checkout package and inlined, plus a style block of their own,
the store's name and accent (``Brand``), no script and no foreign asset. So they share:

- the frame of the page (``public_page_templates/page.html``: the head with its style
  blocks, around the page's own ``<main>``) and the plain message page
  (``public_page_templates/message.html``: a title and a few paragraphs, never a form);
- the Content-Security-Policy: exactly the inline style blocks by their hashes, and a
  form posted only to the page's own origin (``form-action 'self'``, on the form page
  alone; every other page has ``form-action 'none'``);
- the answer's headers (``security_headers``, ``Referrer-Policy: same-origin`` as every
  public form, ``Retry-After``), and the reading of the small form-encoded body.

A page is described once by a ``PublicPage`` (its package, style block, ``<main>`` id
and generic heading); what differs (texts, status codes, limits) stays in its package.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from importlib.resources import files
from string import Template
from typing import Any
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import HTMLResponse

from xmrgate.core.gateway import Gateway
from xmrgate.domain.errors import XmrgateError
from xmrgate.web.checkout.page import Brand, assets, csp_hash, security_headers
from xmrgate.web.form_origin import PUBLIC_FORM_REFERRER, is_cross_origin
from xmrgate.web.limits import PublicLimit, client_key

log = logging.getLogger(__name__)

#: The largest form read (an amount or an address is a few dozen characters).
MAX_FORM_BYTES = 4 * 1024
#: Retry-After of a form refused because its limits could not be counted (the database).
RETRY_UNCOUNTED = 30
FORM_TYPE = "application/x-www-form-urlencoded"
#: The package that holds the shared templates (the frame and the message page).
_SHARED = "xmrgate.web"
_SHARED_FOLDER = "public_page_templates"


@functools.cache
def _template(package: str, folder: str, name: str) -> Template:
    """A template from a package, read once."""
    # HTML parsers turn CRLF into LF before hashing; do the same (as the checkout does).
    text = (files(package) / folder / name).read_text(encoding="utf-8")
    # The frame puts the line break after ``$main`` itself: a page's own file may end in one.
    return Template(text.replace("\r\n", "\n").rstrip("\n"))


@functools.cache
def _frame() -> Template:
    """The frame of every public page: the head (the style blocks) and ``$main``."""
    # Only the last newline goes: the frame's own file must end with one after </html>.
    return Template(_template(_SHARED, _SHARED_FOLDER, "page.html").template + "\n")


@dataclass(frozen=True, slots=True)
class PublicPage:
    """One public page: where its templates are and what makes it look its own."""

    #: The package whose ``templates/`` folder holds the page's own ``<main>`` templates.
    package: str
    #: What the checkout's stylesheet lacks for this page's form (its own ``<style>``).
    style: str
    #: The ``id`` of the page's ``<main>`` (a message page has it too).
    main_id: str
    #: The heading of a page that belongs to no known store (404, 403, 429, 413).
    generic_heading: str

    def content_security_policy(self, brand: Brand | None = None, *, form: bool = False) -> str:
        """The page's CSP: its inline styles by hash, no script, no framing."""
        brand_style = brand.style() if brand is not None else ""
        styles = [assets().style_hash, csp_hash(self.style)]
        if brand_style:
            styles.append(csp_hash(brand_style))
        return "; ".join(
            [
                "default-src 'none'",
                f"style-src {' '.join(styles)}",
                "img-src data:",
                "frame-ancestors 'none'",
                "base-uri 'none'",
                "form-action 'self'" if form else "form-action 'none'",
            ]
        )

    def _common(self, brand: Brand | None) -> dict[str, str]:
        """What every template of the page fills in: the heading and the main's id."""
        brand = brand or Brand()
        return {
            "heading": escape(brand.name or self.generic_heading),
            "main_id": self.main_id,
        }

    def _framed(self, main: Template, brand: Brand | None, title: str, **values: Any) -> str:
        """``main`` filled in and put in the frame; the style blocks are exactly the ones
        ``content_security_policy`` hashes (the checkout's, the page's, the brand's)."""
        brand_style = (brand or Brand()).style()
        return _frame().substitute(
            title=title,
            style=assets().style,
            page_style=self.style,
            brand_style=f"<style>{brand_style}</style>" if brand_style else "",
            main=main.substitute(self._common(brand), title=title, **values),
        )

    def render(self, name: str, brand: Brand | None, *, title: str, **values: Any) -> str:
        """The page's own template ``name`` (its ``<main>``) in the frame.

        ``title`` (HTML-escaped by the caller) goes to ``<title>`` and to the template;
        ``values`` are substituted as they are: the caller escapes them.
        """
        return self._framed(_template(self.package, "templates", name), brand, title, **values)

    def render_message(
        self,
        title: str,
        *paragraphs: str,
        brand: Brand | None = None,
        outcome: str = "refused",
        code: str | None = None,
    ) -> str:
        """A plain page: a title and a few paragraphs (escaped here), never a form.

        ``code`` (an address) is shown in a ``<code>`` block after the first paragraph.
        """
        parts = [f"<p>{escape(p)}</p>" for p in paragraphs]
        if code is not None:
            parts.insert(1, f'<code id="claim-address">{escape(code)}</code>')
        message = _template(_SHARED, _SHARED_FOLDER, "message.html")
        return self._framed(
            message, brand, escape(title), paragraphs="\n".join(parts), outcome=outcome
        )

    def message_page(
        self,
        status: int,
        title: str,
        *paragraphs: str,
        brand: Brand | None = None,
        retry_after: int | None = None,
    ) -> HTMLResponse:
        """A plain message page (``render_message``) as the answer, with ``status``."""
        # One brand for both: the CSP must hash the brand style the page carries.
        html = self.render_message(title, *paragraphs, brand=brand)
        return self.response(html, status, brand=brand, retry_after=retry_after)

    def uncounted(self, nothing: str, brand: Brand | None = None) -> HTMLResponse:
        """503 with ``Retry-After``: the form's limits could not be counted (the
        database failed), so the attempt is refused rather than let through uncounted."""
        return self.message_page(
            503,
            "Please try again in a minute",
            f"{nothing}. This page cannot take requests right now: try again in a minute.",
            brand=brand,
            retry_after=RETRY_UNCOUNTED,
        )

    def too_many(self, wait: int, nothing: str, brand: Brand | None = None) -> HTMLResponse:
        """429 with ``Retry-After: wait``: too many posts from a client, or for one target."""
        return self.message_page(
            429,
            "Too many attempts",
            f"{nothing}. Please wait a minute, then try again.",
            brand=brand,
            retry_after=wait,
        )

    def response(
        self,
        html: str,
        status: int = 200,
        *,
        brand: Brand | None = None,
        form: bool = False,
        retry_after: int | None = None,
    ) -> HTMLResponse:
        """The answer of a rendered page: the checkout's headers with this page's CSP
        (``form`` only for the page with the form), never cached, framed or sent on."""
        headers = security_headers(self.content_security_policy(brand, form=form))
        # Not no-referrer: under it browsers (Chromium) post the page's own form with
        # Origin: null, which web/form_origin.py must refuse.
        headers["Referrer-Policy"] = PUBLIC_FORM_REFERRER
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        return HTMLResponse(html, status_code=status, headers=headers)


async def receive_form(
    page: PublicPage,
    request: Request,
    *,
    public_url: str | None,
    per_client: PublicLimit,
    nothing: str,
    elsewhere: str,
    then: Callable[[], Awaitable[int]] | None = None,
) -> bytes | HTMLResponse:
    """The body of a public form post, or the plain page that refuses it, in this order:
    posted from another site (403), too many posts from this client (429), too large
    (413). Nothing but the limits' counts is looked up before these pass.

    ``nothing`` opens the refusals ("Nothing was made"); ``elsewhere`` is the 403's
    advice; ``then`` a further limit, counted only when the client's one passes. A limit
    that cannot be counted (the shared counter's database failed) refuses the post with
    503 and ``Retry-After``: fail closed, since these forms make requests and claims.
    """
    if is_cross_origin(request, public_url):
        return page.message_page(403, "This form was sent from another site", elsewhere)
    try:
        wait = await per_client.hit(
            request, client_key(request.client.host if request.client else None)
        )
        if not wait and then is not None:
            wait = await then()
    except XmrgateError:
        log.warning("a public form's limits could not be counted", exc_info=True)
        return page.uncounted(nothing)
    if wait:
        return page.too_many(wait, nothing)
    body = await read_form(request)
    if body is None:
        return page.message_page(413, "Too much data", f"{nothing}: the form was too large.")
    return body


def utc_now() -> datetime:
    """The time the pages compare expiries with (a parameter of the routers, for tests)."""
    return datetime.now(UTC)


async def read_form(request: Request) -> bytes | None:
    """The body, or None when it is over ``MAX_FORM_BYTES`` (read no further).

    A public form takes a few dozen characters: a client that sends more, or says it
    will, is refused before the rest is read (no memory for a flood of large posts).
    """
    length = request.headers.get("content-length")
    if length is not None and (not length.strip().isdigit() or int(length) > MAX_FORM_BYTES):
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    return bytes(body)


def form_field(request: Request, body: bytes, name: str) -> str | None:
    """The form's field ``name`` (the first one); None when absent or not such a form."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != FORM_TYPE:
        return None
    try:
        # Strict UTF-8 and few fields: anything else is not what the page's form sends.
        fields = parse_qs(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=20, errors="strict"
        )
    except (UnicodeDecodeError, ValueError):
        return None
    values = fields.get(name)
    return values[0] if values else None


def store_gateway(request: Request, store_id: str) -> Gateway:
    """The Gateway of a store: the public one finds across stores, but only the store's
    own may write (pay a link, claim a refund)."""
    chosen: Gateway = request.app.state.stores.gateway(store_id, writes=True)
    return chosen


def sentence(message: str, empty: str) -> str:
    """A use case's message as a sentence on the page: capitalised, with a full stop
    (``empty`` when there is no message)."""
    text = message.strip()
    if not text:
        return empty
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?", ")")) else text + "."
