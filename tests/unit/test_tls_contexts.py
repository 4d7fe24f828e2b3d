"""The outgoing clients' TLS contexts (``adapters/tls.py``): made once per process, and
verifying as their libraries' own defaults do."""

from __future__ import annotations

import ssl
from collections.abc import Callable

import pytest

from xmrgate.adapters.tls import httpcore_context, httpx_context


@pytest.mark.parametrize(
    "make",
    [
        lambda: httpx_context(trust_env=True),
        lambda: httpx_context(trust_env=False),
        httpcore_context,
    ],
)
def test_each_context_is_made_once_and_verifies(make: Callable[[], ssl.SSLContext]) -> None:
    context = make()
    assert make() is context
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert context.get_ca_certs() or context.cert_store_stats()["x509_ca"] > 0
