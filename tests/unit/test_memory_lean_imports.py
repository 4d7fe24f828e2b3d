"""The serving process pays only for what its configuration uses (resident memory).

pyzmq (``--daemon-zmq`` only), segno (the first QR code) and PyNaCl (``wallet init
--view-only`` only) are imported where they are used, not with the app; the wallet and
monerod clients on plain ``http://`` URLs load no CA bundle (``adapters/tls.py``).
The import checks run in a new interpreter: this test process has imported everything.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import cast

import httpx
import pytest

from xmrgate.adapters.daemon_rpc import DaemonClient
from xmrgate.adapters.tls import context_for, httpx_context, no_tls_context
from xmrgate.adapters.wallet_rpc_connection import WalletRpcConnection
from xmrgate.core.sync import SyncWallet
from xmrgate.runtime.chain_signals import ChainSignals

# What ``xmrgate serve`` imports and builds before it serves (runtime/cli.py's serve),
# on default settings; then the modules of the optional features, if loaded.
SERVE_IMPORTS = """
    import json, sys
    from xmrgate.runtime.lean_process import skip_optional_imports
    skip_optional_imports()
    import uvicorn
    from xmrgate.config import Settings
    from xmrgate.runtime.app import build_app
    from xmrgate.runtime.http_writes import GatewayHttpProtocol
    build_app(Settings(rpc_address="http://127.0.0.1:1/json_rpc", postgresql="{url}"))
    print(json.dumps([m for m in ("zmq", "segno", "nacl") if sys.modules.get(m)]))
"""


def _ca_count(context: ssl.SSLContext) -> int:
    return int(context.cert_store_stats()["x509_ca"])


def _client_context(client: httpx.AsyncClient) -> ssl.SSLContext:
    """The context the client's connection pool would hand to a TLS handshake."""
    pool = client._transport._pool  # type: ignore[attr-defined]
    context: ssl.SSLContext = pool._ssl_context
    return context


def test_serving_start_imports_no_optional_feature_library() -> None:
    code = textwrap.dedent(SERVE_IMPORTS).format(url="postgresql://postgres@127.0.0.1:1/none")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_daemon_zmq_still_listens_when_given() -> None:
    """The lazy import still makes the listener (``--daemon-zmq``)."""
    signals = ChainSignals(wallet=cast(SyncWallet, object()), interval=1.0, zmq_url="tcp://x:1")
    signals.listen(lambda: None)
    assert type(signals.announcements).__name__ == "DaemonAnnouncements"


def test_a_plain_http_url_gets_a_context_that_trusts_nothing_and_still_verifies() -> None:
    context = context_for("http://127.0.0.1:18083/json_rpc", trust_env=True)
    assert context is no_tls_context() is context_for("HTTP://wallet:1", trust_env=False)
    assert _ca_count(context) == 0  # no bundle loaded: ~1-2 MB saved
    # A handshake through it would be checked, and fail: nothing is trusted.
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname


def test_an_https_proxy_in_the_environment_keeps_the_verifying_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client that trusts the environment may reach an http:// wallet through an
    https:// proxy: that proxy's certificate is checked against httpx's CAs."""
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.example:3128")
    assert context_for("http://wallet:18083", trust_env=True) is httpx_context(trust_env=True)
    assert context_for("http://wallet:18083", trust_env=False) is no_tls_context()
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    assert context_for("http://wallet:18083", trust_env=True) is no_tls_context()


def test_an_https_url_gets_httpx_s_own_verifying_context() -> None:
    for trust_env in (True, False):
        context = context_for("https://wallet.example:18083/json_rpc", trust_env=trust_env)
        assert context is httpx_context(trust_env=trust_env)
        assert _ca_count(context) > 0


@pytest.mark.parametrize(
    ("client_of", "trust_env"),
    [(WalletRpcConnection, True), (DaemonClient, False)],
    ids=["wallet", "daemon"],
)
def test_a_client_on_http_loads_no_ca_bundle_and_on_https_shares_httpx_s(
    client_of: Callable[[str], WalletRpcConnection | DaemonClient], trust_env: bool
) -> None:
    """The wallet's and monerod's clients (monerod's made its own context before)."""

    async def check() -> None:
        plain = client_of("http://127.0.0.1:18083/json_rpc")
        secure = client_of("https://node.example:18089/json_rpc")
        try:
            assert _client_context(plain._http) is no_tls_context()
            assert _client_context(secure._http) is httpx_context(trust_env=trust_env)
        finally:
            await plain.aclose()
            await secure.aclose()

    asyncio.run(check())
