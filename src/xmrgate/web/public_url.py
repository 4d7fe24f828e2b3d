"""Where the links and redirects the gateway hands out point: ``--public-url``, read here.

``--public-url`` (``Settings.public_url``, kept in ``app.state.public_url``) is the
gateway as buyers and shops reach it, possibly under a path prefix: with
``https://shop.example/xmr`` a reverse proxy publishes the gateway's ``/pay/...`` as
``https://shop.example/xmr/pay/...``. Every link and redirect is built from it here, so
none can forget the prefix:

- ``public_base``: the absolute base of the links an API answer hands out (a payment
  link's ``url``, a refund's ``claim_url``);
- ``public_path``: where a redirect or a page's own link sends the browser, e.g. a
  checkout ``/pay/<address>``;
- ``public_prefix``: the path the browser sees the gateway under (a cookie's ``Path``).

Without ``--public-url`` the request's own base is used (its host and ASGI root path),
and a redirect stays root-relative, so the browser keeps the host it came by.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from starlette.requests import Request


def configured(request: Request) -> str | None:
    """``--public-url`` without its trailing slash; None when it is not set."""
    found: str | None = getattr(request.app.state, "public_url", None)
    # "https://shop.example/xmr/" and ".../xmr" name the same base: paths are appended.
    return found.rstrip("/") if found else None


def _root_path(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def public_base(request: Request) -> str:
    """The absolute base of handed-out links: ``--public-url``, else this request's base
    (scheme, host and root path), never with a trailing slash."""
    return configured(request) or str(request.base_url).rstrip("/")


def public_path(request: Request, path: str) -> str:
    """``path`` (from the gateway's root, ``/pay/<address>``, already quoted) as the
    browser must be sent to it: absolute under ``--public-url`` (its path prefix kept),
    else root-relative under the ASGI root path."""
    return (configured(request) or _root_path(request)) + path


def public_prefix(request: Request) -> str:
    """The path prefix the browser sees the gateway under: ``/xmr`` for
    ``https://shop.example/xmr``, '' at the site's root (never a trailing slash)."""
    public = configured(request)
    return urlsplit(public).path.rstrip("/") if public else _root_path(request)


def is_https(request: Request) -> bool:
    """Whether the browser reaches the gateway over https (a cookie is then ``Secure``):
    ``--public-url``'s scheme, or this request's when it is https."""
    public = configured(request) or ""
    return public.lower().startswith("https://") or request.url.scheme == "https"


def checkout_path(request: Request, address: str) -> str:
    """The checkout page of ``address``, ``/pay/<address>``, as ``public_path`` gives it."""
    return public_path(request, f"/pay/{quote(address, safe='')}")
