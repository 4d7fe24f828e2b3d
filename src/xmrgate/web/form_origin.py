"""Was a public page's form posted from that page? (the refund claim page, payment links)

A browser says where a request came from in ``Sec-Fetch-Site``, which no page can set:
``same-origin`` (or ``none``: typed or bookmarked) is ours; ``same-site`` and
``cross-site`` are another origin's, refused. Browsers without that header (Safari before
16.4, old Firefox) are judged by ``Origin``: it must be this page's origin. ``Origin:
null`` is refused there: it is what a sandboxed frame or a ``data:`` page sends. Our own
pages send ``Referrer-Policy: same-origin`` (``PUBLIC_FORM_REFERRER``), not
``no-referrer``: under ``no-referrer`` Chromium posts a page's own form with ``Origin:
null`` (seen on regtest with Chromium 156), and an old browser would then be refused.
``same-origin`` still never sends the URL (and its token) to another site.

A request with neither header (curl, a script) passes: it is not a browser that a
hostile page could have steered, and it still needs the token.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request

#: The Referrer-Policy of public pages with a form (see the module docstring).
PUBLIC_FORM_REFERRER = "same-origin"
_OURS = frozenset({"same-origin", "none"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL, lowercased with its default port made
    explicit; None for anything else (``null`` included)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    return f"{scheme}://{host}:{port or _DEFAULT_PORTS[scheme]}"


def own_origins(request: Request, public_url: str | None) -> set[str]:
    """The page's origins: the one the request came to, and ``--public-url``'s."""
    found = {origin_of(str(request.base_url))}
    if public_url:
        found.add(origin_of(public_url))
    return {o for o in found if o is not None}


def is_cross_origin(request: Request, public_url: str | None) -> bool:
    """True when the form was not posted from this page (module docstring)."""
    site = request.headers.get("sec-fetch-site", "").strip().lower()
    if site:
        return site not in _OURS
    origin = request.headers.get("origin")
    if origin is None:
        return False
    return origin_of(origin) not in own_origins(request, public_url)
