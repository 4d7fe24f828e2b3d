"""The JSON-RPC connection to one monero-wallet-rpc (``WalletClient``'s base).

This is the edge where the wallet's failures become ours: httpx transport errors
become ``WalletUnavailable``/``WalletTimeout``, JSON-RPC error objects become
``WalletError`` (or ``WalletRejected`` when the request's content is at fault,
``WalletRestricted`` when wallet-rpc refuses the method). It also opens the wallet (or
creates it) and opens it again when a restarted wallet-rpc has none open. The typed
calls are ``wallet_rpc.py``'s ``WalletClient``; import from there.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx

from xmrgate.adapters.tls import context_for
from xmrgate.domain.errors import (
    WalletError,
    WalletRejected,
    WalletRestricted,
    WalletTimeout,
    WalletUnavailable,
)

# The client's logger, as before this module was split from ``wallet_rpc.py``: the same
# name in the logs and in any filter on it.
log = logging.getLogger("xmrgate.adapters.wallet_rpc")

# get_address of account 0 without address_index lists EVERY subaddress (a pool of
# 10,000 made each answer megabytes, parsed before every tick and around every pool
# batch: 600 MB peaks in the benchmark); index 0 alone still carries "address".
PRIMARY_ONLY = {"account_index": 0, "address_index": [0]}

# JSON-RPC error codes of monero-wallet-rpc (wallet_rpc_server_error_codes.h).
WALLET_RPC_ERROR_CODE_WRONG_ADDRESS = -2
WALLET_RPC_ERROR_CODE_DENIED = -7
WALLET_RPC_ERROR_CODE_WRONG_TXID = -8
WALLET_RPC_ERROR_CODE_NOT_OPEN = -13
WALLET_RPC_ERROR_CODE_TX_NOT_POSSIBLE = -16
WALLET_RPC_ERROR_CODE_NOT_ENOUGH_MONEY = -17
WALLET_RPC_ERROR_CODE_TX_TOO_LARGE = -18
WALLET_RPC_ERROR_CODE_NOT_ENOUGH_OUTS_TO_MIX = -19
WALLET_RPC_ERROR_CODE_ZERO_DESTINATION = -20
WALLET_RPC_ERROR_CODE_WALLET_ALREADY_EXISTS = -21
WALLET_RPC_ERROR_CODE_ZERO_AMOUNT = -46
WALLET_RPC_ERROR_CODE_WATCH_ONLY = -29
WALLET_RPC_ERROR_CODE_UNKNOWN_ERROR = -1
WALLET_RPC_ERROR_CODE_WRONG_KEY = -25

# Errors caused by what the client asked for, not by the wallet's health.
CLIENT_FAULT_CODES = frozenset(
    {
        WALLET_RPC_ERROR_CODE_WRONG_ADDRESS,
        WALLET_RPC_ERROR_CODE_TX_NOT_POSSIBLE,
        WALLET_RPC_ERROR_CODE_NOT_ENOUGH_MONEY,
        WALLET_RPC_ERROR_CODE_TX_TOO_LARGE,
        WALLET_RPC_ERROR_CODE_NOT_ENOUGH_OUTS_TO_MIX,
        WALLET_RPC_ERROR_CODE_ZERO_DESTINATION,
        WALLET_RPC_ERROR_CODE_ZERO_AMOUNT,
    }
)

DEFAULT_WALLET_NAME = "wallet"
# get_address with an index beyond the subaddress table.
WALLET_RPC_ERROR_CODE_ADDRESS_INDEX_OUT_OF_BOUNDS = -15


class WalletRpcConnection:
    """Calls to one monero-wallet-rpc endpoint, its failures translated (module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        timeout: float = 30.0,
        observe: Callable[[str, float, bool], None] | None = None,
    ) -> None:
        """``observe(method, seconds, ok)`` is told about every call (the metrics)."""
        auth = httpx.DigestAuth(username, password or "") if username else None
        self._observe = observe
        self._url = url
        self._timeout = timeout
        self._ids = itertools.count()
        # The wallet we opened or created, to open again after a wallet-rpc restart.
        self._wallet_name: str | None = None
        #: How often the wallet was opened again after a wallet-rpc restart.
        self.reopens = 0
        # One connection is enough: wallet-rpc serves a single call at a time anyway.
        self._http = httpx.AsyncClient(
            auth=auth,
            timeout=timeout,
            limits=httpx.Limits(max_connections=4, max_keepalive_connections=4),
            # httpx's own for https, none loaded for http (adapters/tls.py); redirects are
            # not followed (httpx's default), so this client calls self._url only.
            verify=context_for(url, trust_env=True),
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._http.aclose()

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Call a JSON-RPC method and return its ``result`` object.

        When wallet-rpc answers "no wallet open" (it was restarted), open our wallet
        again and repeat the call once: error -13 means the call did nothing.
        """
        try:
            return await self._call(method, params, timeout=timeout)
        except WalletUnavailable as exc:
            if exc.code != WALLET_RPC_ERROR_CODE_NOT_OPEN or self._wallet_name is None:
                raise
            log.warning("wallet-rpc has no wallet open (restarted?): opening %r", self._wallet_name)
            await self.ensure_wallet_open(self._wallet_name)
            # Whoever cares (the lookahead check) compares this with what it saw last.
            self.reopens += 1
            return await self._call(method, params, timeout=timeout)

    async def _call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        if self._observe is None:
            return await self._rpc(method, params, timeout=timeout)
        started = time.perf_counter()
        ok = False
        try:
            result = await self._rpc(method, params, timeout=timeout)
            ok = True
            return result
        finally:
            self._observe(method, time.perf_counter() - started, ok)

    async def _rpc(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": str(next(self._ids)), "method": method}
        if params is not None:
            body["params"] = params
        try:
            response = await self._http.post(
                self._url, json=body, timeout=timeout if timeout is not None else self._timeout
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            # The request never reached the wallet: nothing happened there.
            # Say which (refused, no route, DNS): a waiting request's 503 repeats it.
            raise WalletUnavailable(
                f"wallet-rpc unreachable: {type(exc).__name__} ({exc})", request_sent=False
            ) from exc
        except httpx.TimeoutException as exc:
            raise WalletTimeout(f"wallet-rpc did not answer {method} in time") from exc
        except httpx.HTTPError as exc:
            raise WalletUnavailable(f"wallet-rpc unreachable: {type(exc).__name__}") from exc
        if response.status_code == 401:
            raise WalletUnavailable("wallet-rpc refused our credentials (HTTP 401)")
        if response.status_code != 200:
            raise WalletUnavailable(f"wallet-rpc answered HTTP {response.status_code}")
        try:
            payload = response.json()
        except ValueError as exc:
            raise WalletUnavailable("wallet-rpc sent a body that is not JSON") from exc
        error = payload.get("error")
        if error:
            code = int(error.get("code", 0))
            message = str(error.get("message", "wallet error"))
            if code == WALLET_RPC_ERROR_CODE_NOT_OPEN:
                raise WalletUnavailable("wallet-rpc has no wallet open", code=code)
            if code == WALLET_RPC_ERROR_CODE_DENIED:
                raise WalletRestricted(f"wallet-rpc refused {method}: {message}", code=code)
            if code in CLIENT_FAULT_CODES:
                raise WalletRejected(message, code=code)
            raise WalletError(message, code=code)
        result = payload.get("result")
        return result if isinstance(result, dict) else {}

    async def ensure_wallet_open(
        self, filename: str = DEFAULT_WALLET_NAME, *, created_before: bool = True
    ) -> None:
        """Open the wallet ``filename``, creating it first when it does not exist.

        Does nothing when wallet-rpc already has a wallet open (as MoneroPay does). Each
        open_wallet or create_wallet costs wallet-rpc 1-5 s (0.18 makes an RSA
        certificate for its daemon connection every time, measured on regtest), so the
        call that will most likely work comes first: an open when the wallet was
        ``created_before`` (the database remembers it: a restart), else a create.
        """
        try:
            await self._call("get_address", PRIMARY_ONLY)
            return
        except WalletUnavailable as exc:
            if exc.code != WALLET_RPC_ERROR_CODE_NOT_OPEN:
                raise
        if created_before:
            await self._open_else_create(filename)
        else:
            await self._create_else_open(filename)
        self._wallet_name = filename

    async def _open_else_create(self, filename: str) -> None:
        try:
            await self._call("open_wallet", {"filename": filename, "password": ""})
            log.info("opened existing wallet %r", filename)
        except WalletRestricted:
            raise
        except WalletError as opening:
            # -1 "Failed to open wallet" says neither "missing" nor "wrong password";
            # create_wallet never overwrites a file (-21), so it tells which.
            try:
                await self._create(filename)
            except WalletError as exc:
                if _already_exists(exc):
                    raise opening from exc
                raise

    async def _create_else_open(self, filename: str) -> None:
        try:
            await self._create(filename)
        except WalletError as exc:
            if not _already_exists(exc):
                raise
            await self._call("open_wallet", {"filename": filename, "password": ""})
            log.info("opened existing wallet %r", filename)

    async def _create(self, filename: str) -> None:
        await self._call("create_wallet", {"filename": filename, "language": "English"})
        log.info("created wallet %r", filename)


def _already_exists(exc: WalletError) -> bool:
    """create_wallet refused because the file is there (-21; older versions: the text)."""
    return exc.code == WALLET_RPC_ERROR_CODE_WALLET_ALREADY_EXISTS or "exist" in str(exc.message)
