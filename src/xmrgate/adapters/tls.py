"""The TLS contexts of the gateway's outgoing HTTP clients, made once per process.

A verifying ``ssl.SSLContext`` loads the CA bundle when it is made: 20-100 ms of CPU.
Each store's wallet connections, the callback sender and the rate sources made their
own, so a gateway paid it several times per store at start, and a test that builds the
app paid it every time (0.3-0.5 s of CPU per build; 400 contexts in ``make unit``). A
context is meant to be shared by connections, so each kind is made here once, on first
use, exactly as its library makes it by default; the checks are the same (certificate
and host name verified against the same CAs).

A client that only ever calls one plain ``http://`` URL (wallet-rpc and monerod on the
same host, as usual) never makes a TLS handshake, yet httpx builds a context for every
client, and a verifying one loads a CA bundle: about 1-2 MB resident. Such a
client gets ``no_tls_context`` (``context_for``): no CA loaded, so it trusts nothing,
and verification stays required; were a handshake ever attempted through it, it would
fail, never pass unchecked.

One thing a connection changes on its context is the ALPN list (httpcore sets it before
each handshake): every client given these contexts speaks HTTP/1.1 only, so each sets
the same list.
"""

from __future__ import annotations

import functools
import ssl
import urllib.request
from urllib.parse import urlsplit

import httpcore
import httpx


@functools.cache
def httpx_context(*, trust_env: bool) -> ssl.SSLContext:
    """What ``httpx.AsyncClient(verify=True, trust_env=trust_env)`` makes for itself:
    certifi's CAs (with ``trust_env``, ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set)."""
    return httpx.create_ssl_context(verify=True, trust_env=trust_env)


@functools.cache
def httpcore_context() -> ssl.SSLContext:
    """What an httpcore connection pool without ``ssl_context`` makes for itself: the
    system's CAs and certifi's."""
    return httpcore.default_ssl_context()


@functools.cache
def no_tls_context() -> ssl.SSLContext:
    """A client context that verifies certificates and host names but trusts no CA: for a
    client whose only URL is plain ``http://`` (see the module docstring)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def context_for(url: str, *, trust_env: bool) -> ssl.SSLContext:
    """The context of a client that calls ``url`` only (and follows no redirect): httpx's
    own (``httpx_context``) for ``https://``, ``no_tls_context`` for ``http://`` unless
    the client may go through a proxy of the environment (``trust_env``) reached over
    TLS, whose certificate must be checked as httpx would."""
    if urlsplit(url).scheme.lower() == "http" and not (trust_env and _tls_proxy_in_env()):
        return no_tls_context()
    return httpx_context(trust_env=trust_env)


def _tls_proxy_in_env() -> bool:
    """Whether a proxy variable of the environment (HTTP_PROXY, ALL_PROXY...) names an
    ``https://`` proxy."""
    return any(
        urlsplit(proxy).scheme.lower() == "https" for proxy in urllib.request.getproxies().values()
    )
