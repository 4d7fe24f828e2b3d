"""Typed async client of monerod's RPC, for the few calls that tell whether anything changed.

The sync tick asks monerod (``--daemon-address``) for its top block and its pool before
refreshing the wallet (``core/sync_gate.py``). These calls answer in under a
millisecond, where the wallet's ``refresh`` takes ~90 ms (docs/benchmarks.md).
httpx failures and malformed answers become ``DaemonUnavailable`` here.

The height those checks read is kept, so that the overview (``GET /status``, the
dashboard, ``/metrics``) can show the wallet against the daemon without asking monerod
once per HTTP request: ``recent_height`` answers from the tick's last read, and asks
``/get_height`` itself only when no read is recent (a process that does not tick).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx

from xmrgate.adapters.tls import context_for
from xmrgate.core.sync_gate import ChainState
from xmrgate.domain.errors import DaemonUnavailable

#: How old (seconds) a read of the daemon's height may be for ``recent_height``. The sync
#: loop reads it every second with ``--daemon-address``; a process whose loop does not
#: tick (another holds the lock) asks monerod itself at most this often.
HEIGHT_MAX_AGE = 10.0


class DaemonClient:
    """monerod's plain-JSON RPC at ``url`` (e.g. ``http://127.0.0.1:18081``)."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 5.0,
        height_max_age: float = HEIGHT_MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Build the client (no connection is made yet); ``transport`` is for tests."""
        self._base = url.rstrip("/")
        if self._base.endswith("/json_rpc"):
            self._base = self._base[: -len("/json_rpc")]
        self._http = httpx.AsyncClient(
            timeout=timeout,
            trust_env=False,
            transport=transport,
            # Shared, made once, as httpx would make it for https; none loaded for a
            # plain http:// monerod (adapters/tls.py). No redirect is followed.
            verify=context_for(self._base, trust_env=False),
        )
        self._height_max_age = height_max_age
        self._clock = clock
        # (when, the height or why there was none): a failure is kept as long as a
        # height, so a daemon that is down is not asked again by every request.
        self._last_height: tuple[float, int | str] | None = None
        self._height_lock = asyncio.Lock()

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._http.aclose()

    async def _post(self, path: str) -> dict[str, Any]:
        try:
            response = await self._http.post(self._base + path, json={})
        except httpx.HTTPError as exc:
            raise DaemonUnavailable(f"monerod unreachable: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise DaemonUnavailable(f"monerod answered HTTP {response.status_code} to {path}")
        try:
            body = response.json()
        except ValueError as exc:
            raise DaemonUnavailable(f"monerod sent a body that is not JSON to {path}") from exc
        if not isinstance(body, dict) or body.get("status") != "OK":
            status = body.get("status") if isinstance(body, dict) else None
            raise DaemonUnavailable(f"monerod answered {path} with status {status!r}")
        return body

    async def chain_state(self) -> ChainState:
        """Top block, pool transactions and pool double spends, in three calls."""
        top = await self._get_height()
        pool = await self._post("/get_transaction_pool_hashes")
        stats = await self._post("/get_transaction_pool_stats")
        try:
            return ChainState(
                height=int(top["height"]),
                top_hash=str(top["hash"]),
                # monerod leaves the field out when the pool is empty.
                pool=frozenset(str(h) for h in pool.get("tx_hashes") or ()),
                double_spends=int((stats.get("pool_stats") or {}).get("num_double_spends", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DaemonUnavailable(f"monerod sent an unexpected answer: {exc!r}") from exc

    async def recent_height(self) -> int:
        """monerod's height (blocks, as wallet-rpc's ``get_height`` counts them) read at
        most ``height_max_age`` seconds ago, by the sync tick or by an earlier call;
        raises ``DaemonUnavailable`` when that read failed. Concurrent callers share one
        call to monerod."""
        async with self._height_lock:
            last = self._last_height
            if last is None or self._clock() - last[0] > self._height_max_age:
                return int((await self._get_height())["height"])
        if isinstance(last[1], str):
            raise DaemonUnavailable(last[1])
        return last[1]

    async def _get_height(self) -> dict[str, Any]:
        """``/get_height``'s answer; its height, or why there is none, is kept."""
        try:
            top = await self._post("/get_height")
            height = top.get("height")
            if not isinstance(height, int) or isinstance(height, bool):
                raise DaemonUnavailable(f"monerod sent an unexpected height: {height!r}")
        except DaemonUnavailable as exc:
            self._last_height = (self._clock(), exc.message)
            raise
        self._last_height = (self._clock(), height)
        return top
