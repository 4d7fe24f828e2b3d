"""What a shop plugin asks on ``/api-keys/authorize`` (docs/greenfield.md).

BTCPay's query: ``permissions`` (repeated), ``applicationName``, ``applicationIdentifier``,
``strict``, ``selectiveStores`` and ``redirect``. ``parse_consent`` reads it once, for
the page and for each post of its form, and refuses before anything else is asked:

- a redirect that is neither ``https`` nor ``http`` to a loopback host (127.0.0.0/8,
  ``::1``, ``localhost``): the new key is posted there, and plain http elsewhere would
  hand it to anyone on the path; a redirect with a user name or password (the page shows
  the host, and ``https://shop.example@evil.example/`` would show the wrong one);
- an unknown permission, one a store key cannot hold (``unrestricted``, server ones),
  or permissions naming several stores.

``strict`` and ``selectiveStores`` are read but change nothing: the page always grants
exactly the permissions asked (the operator approves them all or declines) and always on
ONE store, which is what a plugin with ``strict=true&selectiveStores=true`` expects.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from xmrgate.domain.greenfield.key_permissions import (
    check_key_permissions,
    store_of_permissions,
)

MAX_REDIRECT = 2048
MAX_APPLICATION_NAME = 100
# What the page calls an application that gives no name.
UNNAMED = "An application"
LOOPBACK_NAMES = frozenset({"localhost"})


class ConsentRefused(ValueError):
    """The authorize query is refused (the page answers 400 with this message)."""


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """A plugin's authorize query, checked."""

    permissions: tuple[str, ...]
    # The store the permissions name (``name:storeId``), or None: the operator picks one.
    store: str | None
    application_name: str
    application_identifier: str | None
    redirect: str
    # The redirect's host as the page shows it (``shop.example``, ``127.0.0.1:8080``).
    redirect_host: str


def _is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_redirect(url: str | None) -> str:
    """The redirect, when it is ``https``, or ``http`` to a loopback host; else refused."""
    if not url:
        raise ConsentRefused("the application gave no redirect address to send the key to")
    if len(url) > MAX_REDIRECT or any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise ConsentRefused("the redirect address is too long or holds blanks")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        raise ConsentRefused("the redirect address is not a valid URL") from None
    if not host or parts.username is not None or parts.password is not None:
        raise ConsentRefused("the redirect address must name a host, and no user or password")
    if parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(host)):
        return url
    raise ConsentRefused(
        "the redirect address must be https (or http to this computer: 127.0.0.1, ::1, "
        "localhost), so that the new key is not sent in the clear"
    )


def _first(query: Sequence[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in query if key == name), None)


def _clean_name(value: str | None) -> str:
    text = "".join(c for c in (value or "") if c.isprintable()).strip()
    return text[:MAX_APPLICATION_NAME] or UNNAMED


def parse_consent(query: Sequence[tuple[str, str]]) -> ConsentRequest:
    """The authorize query (its pairs in order), checked: the redirect first, then the
    permissions; ConsentRefused saying what is wrong."""
    redirect = check_redirect(_first(query, "redirect"))
    asked = [value for key, value in query if key in ("permissions", "permissions[]")]
    try:
        store = store_of_permissions(asked)
        names = check_key_permissions(asked, store)
    except ValueError as exc:
        raise ConsentRefused(str(exc)) from None
    parts = urlsplit(redirect)
    host = parts.netloc.rpartition("@")[2]
    identifier = _first(query, "applicationIdentifier")
    return ConsentRequest(
        permissions=names,
        store=store,
        application_name=_clean_name(_first(query, "applicationName")),
        application_identifier=_clean_name(identifier) if identifier else None,
        redirect=redirect,
        redirect_host=host,
    )
