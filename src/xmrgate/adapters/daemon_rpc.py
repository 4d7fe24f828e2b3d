"""Typed async client of monerod's RPC, for the few calls that tell whether anything changed.

The sync tick asks monerod (``--daemon-address``) for its top block and its pool before
refreshing the wallet (``core/sync_gate.py``). These calls answer in under a
millisecond, where the wallet's ``refresh`` takes ~90 ms (docs/benchmarks.md).
httpx failures and malformed answers become ``DaemonUnavailable`` here.
"""

from __future__ import annotations

from typing import Any

import httpx

from xmrgate.core.sync_gate import ChainState
from xmrgate.domain.errors import DaemonUnavailable


class DaemonClient:
    """monerod's plain-JSON RPC at ``url`` (e.g. ``http://127.0.0.1:18081``)."""

    def __init__(self, url: str, *, timeout: float = 5.0) -> None:
        """Build the client (no connection is made yet)."""
        self._base = url.rstrip("/")
        if self._base.endswith("/json_rpc"):
            self._base = self._base[: -len("/json_rpc")]
        self._http = httpx.AsyncClient(timeout=timeout, trust_env=False)

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
        top = await self._post("/get_height")
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
