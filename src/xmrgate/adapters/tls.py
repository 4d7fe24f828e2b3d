"""The TLS contexts of the gateway's outgoing HTTP clients, made once per process.

A verifying ``ssl.SSLContext`` loads the CA bundle when it is made: 20-100 ms of CPU.
Each store's wallet connections, the callback sender and the rate sources made their
own, so a gateway paid it several times per store at start, and a test that builds the
app paid it every time (0.3-0.5 s of CPU per build; 400 contexts in ``make unit``). A
context is meant to be shared by connections, so each kind is made here once, on first
use, exactly as its library makes it by default; the checks are the same (certificate
and host name verified against the same CAs).

One thing a connection changes on its context is the ALPN list (httpcore sets it before
each handshake): every client given these contexts speaks HTTP/1.1 only, so each sets
the same list.
"""

from __future__ import annotations

import functools
import ssl

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
