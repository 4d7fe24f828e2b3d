"""The chain side of a devnet: daemon RPC, mining, paying from the funder wallet.

:class:`Chain` is mixed into :class:`~xmrgate.devnet.network.Devnet`, which
starts the processes; everything here only needs ``daemon_url`` and the funder.

Regtest gotchas handled here (monero 0.18.0.0 as packaged by Debian):

* wallet-rpc 0.18.0 loops forever (100% CPU, ignores SIGTERM) in ``transfer``
  when the chain has exactly 76 unlocked RingCT outputs; see
  :meth:`Chain.ensure_decoy_safe`.
* A transaction just accepted by an offline monerod is briefly held for
  Dandelion++ and left out of block templates; :meth:`Chain.mine` waits for it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from xmrgate.devnet.errors import DevnetError
from xmrgate.devnet.rpc import WalletRpc, json_rpc

#: Wallet-rpc errors that mean "the funder has no spendable outputs right now".
_NOT_ENOUGH_CODES = frozenset({-17, -19})
_NOT_ENOUGH_TEXTS = ("not enough money", "not enough unlocked", "not enough outputs")

#: CRYPTONOTE_DEFAULT_TX_SPENDABLE_AGE: outputs younger than this many blocks are locked.
_SPENDABLE_AGE = 10
#: Outputs wallet2 0.18 asks the daemon for per RingCT input: (16 * 1.5 + 1) + (60 - 10).
_DECOY_REQUEST = 75
#: Unlocked RingCT outputs from which wallets choose decoys without trouble.
SAFE_RCT_OUTPUTS = 100


class Chain:
    """Daemon calls, mining and payments of a running regtest network."""

    daemon_url: str
    funder_address: str
    _funder: WalletRpc | None
    _client: httpx.Client
    _lock: threading.RLock

    @property
    def funder(self) -> WalletRpc:
        """The funder wallet-rpc (wallet ``funder`` open). Raises before start."""
        if self._funder is None:
            raise DevnetError("devnet not started")
        return self._funder

    # ----------------------------------------------------------------- daemon RPC

    def _daemon_rpc(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        return json_rpc(self._client, f"{self.daemon_url}/json_rpc", method, params, timeout)

    def _daemon_other(
        self, path: str, body: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        url = f"{self.daemon_url}/{path.lstrip('/')}"
        try:
            resp = self._client.post(url, json=body or {}, timeout=timeout)
            resp.raise_for_status()
            data = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise DevnetError(f"{path}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(data, dict):
            raise DevnetError(f"{path}: unexpected answer {data!r}")
        status = data.get("status")
        if status is not None and status != "OK":
            raise DevnetError(f"{path}: status {status!r}")
        return data

    def daemon_call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        """Make a daemon JSON-RPC call (``/json_rpc``) and return its ``result``."""
        return self._daemon_rpc(method, params, timeout)

    def height(self) -> int:
        """Daemon chain height (number of blocks, i.e. top index + 1)."""
        return int(self._daemon_rpc("get_info")["height"])

    def mine(self, blocks: int = 1, address: str | None = None) -> int:
        """Mine ``blocks`` blocks (to the funder by default); return the new daemon height.

        Waits first (briefly) until every pool transaction is minable, so a
        transaction sent just before is included in the first block.
        """
        target = address or self.funder_address
        if not target:
            raise DevnetError("no address to mine to")
        if blocks > 0:
            self.wait_pool_relayed()
            self._daemon_rpc(
                "generateblocks",
                {"amount_of_blocks": blocks, "wallet_address": target},
                timeout=max(60.0, blocks * 1.0),
            )
        return self.height()

    def wait_pool_relayed(self, timeout: float = 10.0) -> bool:
        """Wait until no pool transaction is still waiting to be relayed; True if none is.

        monerod (offline) first holds a new transaction for Dandelion++ and
        leaves it out of block templates until its P2P thread has given up
        relaying it (``relayed: false`` in ``/get_transaction_pool``), usually
        a few milliseconds after the wallet returned. Mining in that window
        leaves the transaction in the pool.
        """
        deadline = time.monotonic() + timeout
        while True:
            txs = self._daemon_other("get_transaction_pool").get("transactions") or []
            waiting = [t for t in txs if not t.get("relayed") and not t.get("do_not_relay")]
            if not waiting:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def unlocked_rct_outputs(self) -> int:
        """Number of RingCT outputs old enough to be used as decoys (what wallets count)."""
        dist = self._daemon_rpc(
            "get_output_distribution",
            {"amounts": [0], "cumulative": True, "from_height": 0, "binary": False},
        )["distributions"][0]["distribution"]
        if len(dist) < _SPENDABLE_AGE:
            return 0
        return int(dist[len(dist) - _SPENDABLE_AGE])

    def ensure_decoy_safe(self, force: bool = False) -> int:
        """Mine until wallets on this chain cannot hang in decoy selection; return the height.

        monero-wallet-rpc 0.18.0 loops forever in ``transfer`` when the chain
        has 76 unlocked RingCT outputs: it asks for 75 distinct decoy
        candidates but its gamma picker can reach one fewer (fixed upstream in
        0.18.2, monero PR #8794). Chains with at most 75 such outputs are
        fine (the wallet takes them all), and so are chains with
        :data:`SAFE_RCT_OUTPUTS` or more. This mines to the funder while the
        count is in between, or (``force``) whenever it is below
        :data:`SAFE_RCT_OUTPUTS`, so that a growing chain never crosses the
        bad spot later.
        """
        for _ in range(50):
            count = self.unlocked_rct_outputs()
            if count >= SAFE_RCT_OUTPUTS or (count <= _DECOY_REQUEST and not force):
                break
            # every block unlocks at least one more (coinbase) output
            self.mine(SAFE_RCT_OUTPUTS - count)
        return self.height()

    def pop_blocks(self, n: int) -> None:
        """Remove the top ``n`` blocks; their transactions go back to the pool."""
        self._daemon_other("pop_blocks", {"nblocks": n})

    def flush_txpool(self) -> None:
        """Drop every transaction from the daemon's pool."""
        self._daemon_rpc("flush_txpool")

    def pool_hashes(self) -> list[str]:
        """Hashes of the transactions currently in the daemon's pool."""
        data = self._daemon_other("get_transaction_pool_hashes")
        return [str(h) for h in data.get("tx_hashes") or []]

    # ----------------------------------------------------------------- payments

    def pay(self, address: str, amount: int, mine_blocks: int = 0) -> str:
        """Send ``amount`` piconero from the funder to ``address``; return the tx hash.

        Mines extra blocks to the funder (before sending) when it lacks
        unlocked outputs, then mines ``mine_blocks`` blocks after sending.
        """
        return self.pay_many([(address, amount)], mine_blocks=mine_blocks)

    def pay_many(self, destinations: list[tuple[str, int]], mine_blocks: int = 0) -> str:
        """Send one transaction paying every ``(address, amount)``; return its hash.

        See :meth:`pay` for the funding and mining behaviour.
        """
        if not destinations:
            raise DevnetError("pay_many: no destinations")
        dests = [{"address": a, "amount": int(v)} for a, v in destinations]
        with self._lock:
            funder = self.funder
            self.ensure_decoy_safe()
            funder.call("refresh", timeout=120)
            tx_hash = ""
            for attempt in range(6):
                try:
                    res = funder.call(
                        "transfer",
                        {
                            "destinations": dests,
                            "account_index": 0,
                            "priority": 0,
                            "get_tx_key": False,
                        },
                        timeout=120,
                    )
                    tx_hash = str(res["tx_hash"])
                    self.wait_pool_relayed()
                    break
                except DevnetError as exc:
                    if attempt == 5 or not _is_not_enough(exc):
                        raise
                    # Spent outputs' change locks for 10 blocks; mining unlocks it
                    # plus one coinbase output per block.
                    self.mine(10 + 10 * attempt)
                    funder.call("refresh", timeout=120)
            if mine_blocks > 0:
                self.mine(mine_blocks)
            return tx_hash


def _is_not_enough(exc: DevnetError) -> bool:
    """True when a transfer failed because the funder lacks (unlocked) outputs."""
    text = exc.message.lower()
    return exc.code in _NOT_ENOUGH_CODES or any(t in text for t in _NOT_ENOUGH_TEXTS)
