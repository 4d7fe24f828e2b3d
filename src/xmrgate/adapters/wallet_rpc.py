"""Typed async client of monero-wallet-rpc.

``WalletClient`` adds the typed calls (subaddresses, accounts, balance, transfers, proofs,
sending) to ``WalletRpcConnection`` (``wallet_rpc_connection.py``): the JSON-RPC calls and
the edge where the wallet's failures become ours. Nothing above these two modules sees
httpx or a raw error object.
"""

from __future__ import annotations

from typing import Any

from xmrgate.adapters.wallet_rpc_connection import (
    DEFAULT_WALLET_NAME,
    PRIMARY_ONLY,
    WALLET_RPC_ERROR_CODE_ADDRESS_INDEX_OUT_OF_BOUNDS,
    WALLET_RPC_ERROR_CODE_NOT_OPEN,
    WALLET_RPC_ERROR_CODE_UNKNOWN_ERROR,
    WALLET_RPC_ERROR_CODE_WALLET_ALREADY_EXISTS,
    WALLET_RPC_ERROR_CODE_WATCH_ONLY,
    WALLET_RPC_ERROR_CODE_WRONG_KEY,
    WALLET_RPC_ERROR_CODE_WRONG_TXID,
    WalletRpcConnection,
)
from xmrgate.domain.errors import WalletError, WalletRejected, WalletRestricted
from xmrgate.domain.wallet_answers import TxKeyCheck

# What other modules import from here along with the client.
__all__ = [
    "DEFAULT_WALLET_NAME",
    "WALLET_RPC_ERROR_CODE_NOT_OPEN",
    "WALLET_RPC_ERROR_CODE_WALLET_ALREADY_EXISTS",
    "WalletClient",
]

# check_tx_key's errors that are the asker's fault (docs/monero-notes.md, observed on
# 0.18): a txid or tx key that is not 64 hex digits (-8, -25), no address (-2, already a
# client fault above), and a transaction the daemon does not have: -1 with this message
# (-1 "Failed to connect to daemon: ..." is the daemon being down, not the asker).
TX_KEY_CLIENT_FAULT_CODES = frozenset(
    {WALLET_RPC_ERROR_CODE_WRONG_TXID, WALLET_RPC_ERROR_CODE_WRONG_KEY}
)
TX_NOT_FOUND_MESSAGE = "Failed to get transaction from daemon"


class WalletClient(WalletRpcConnection):
    """One monero-wallet-rpc endpoint. Build it once and share it; close it on shutdown."""

    async def probe(self, *, timeout: float) -> bool:
        """Liveness for /health: wallet-rpc answers AND has a wallet open."""
        await self._call("get_height", timeout=timeout)
        return True

    async def get_height(self) -> int:
        """Number of blocks the wallet has scanned (top index + 1)."""
        return int((await self.call("get_height"))["height"])

    async def refresh(self) -> None:
        """Make the wallet fetch new blocks now instead of on its own ~20 s timer."""
        await self.call("refresh")

    async def primary_address(self) -> str:
        """The wallet's primary address (account 0, index 0)."""
        return str((await self.call("get_address", PRIMARY_ONLY))["address"])

    async def create_address(self, label: str = "", *, account: int = 0) -> tuple[str, int]:
        """Create a subaddress in ``account``; return (address, minor index)."""
        result = await self.call("create_address", {"account_index": account, "label": label})
        return str(result["address"]), int(result["address_index"])

    async def skip_subaddresses(self, count: int, *, account: int = 0) -> None:
        """Create ``count`` subaddresses to move the wallet's counter forward."""
        while count > 0:
            batch = min(count, 64)  # wallet-rpc takes 1..64 per call
            await self.call("create_address", {"account_index": account, "count": batch})
            count -= batch

    async def create_addresses(self, count: int, *, account: int = 0) -> list[tuple[str, int]]:
        """Create ``count`` (1..64) subaddresses in ``account`` in one call; (address, index)s."""
        result = await self.call("create_address", {"account_index": account, "count": count})
        addresses = result.get("addresses") or [result["address"]]
        indices = result.get("address_indices") or [result["address_index"]]
        return [(str(a), int(i)) for a, i in zip(addresses, indices, strict=True)]

    async def save(self) -> None:
        """Write the wallet file now (``store``): created subaddresses survive a crash."""
        await self.call("store")

    async def label_address(self, index: int, label: str, *, account: int = 0) -> None:
        """Set the label of subaddress ``index`` of ``account``."""
        await self.call(
            "label_address", {"index": {"major": account, "minor": index}, "label": label}
        )

    async def create_account(self, label: str = "") -> int:
        """Create a new account (major index) in the open wallet; its index."""
        result = await self.call("create_account", {"label": label})
        return int(result["account_index"])

    async def account_address(self, account: int) -> str:
        """The base address (index 0) of ``account``."""
        result = await self.call("get_address", {"account_index": account, "address_index": [0]})
        return str(result["address"])

    async def account_count(self) -> int:
        """How many accounts the open wallet's table holds (``get_accounts``)."""
        result = await self.call("get_accounts")
        return len(result.get("subaddress_accounts", []))

    async def has_subaddress(self, index: int, *, account: int = 0) -> bool:
        """Whether the wallet's subaddress table of ``account`` reaches ``index``."""
        try:
            await self.call("get_address", {"account_index": account, "address_index": [index]})
        except WalletError as exc:
            if exc.code == WALLET_RPC_ERROR_CODE_ADDRESS_INDEX_OUT_OF_BOUNDS:
                return False
            raise
        return True

    async def rescan(self) -> None:
        """Scan the chain again from the wallet's restore height (``rescan_blockchain``)."""
        await self.call("rescan_blockchain", timeout=max(self._timeout, 600.0))

    async def is_valid_address(self, address: str) -> bool:
        """True when ``address`` is valid on the wallet's own network."""
        result = await self.call("validate_address", {"address": address})
        return bool(result.get("valid"))

    async def address_network(self, address: str) -> str | None:
        """The network (``mainnet``/``testnet``/``stagenet``) of an address valid on ANY
        network, None when it is not valid (checksum included).

        ``validate_address`` with ``any_net_type``: answers even with no wallet open.
        Regtest wallets use mainnet addresses, so a regtest address says ``mainnet``.
        """
        result = await self.call("validate_address", {"address": address, "any_net_type": True})
        if not result.get("valid"):
            return None
        nettype = result.get("nettype")
        return str(nettype) if nettype else None

    async def check_tx_key(self, txid: str, tx_key: str, address: str) -> TxKeyCheck:
        """How much transaction ``txid`` gave ``address``, proven with its secret ``tx_key``.

        Any wallet connected to the daemon can answer (the key and the address are all
        it takes). wallet-rpc 0.18 answers a key that is not the transaction's (another
        transaction's included) and an address the transaction did not pay with
        ``received`` 0, not an error: 0 is the caller's sign of a wrong proof.

        The wallet's refusals of what was asked become ``WalletRejected`` carrying the
        wallet's message and code: a txid that is not 64 hex digits (-8), a key that is
        not 64 of them (+ 64 per additional key) (-25), an invalid address or one of
        another network (-2), a transaction the daemon does not know (-1 "Failed to get
        transaction from daemon"). WalletRejected rather
        than InvalidInput: the API answers both with 400, but the verdict is the
        wallet's, not ours, so the answer keeps the wallet's JSON-RPC ``code`` (as for
        a refused transfer) and handlers of ``WalletError`` still see it. Anything else
        (the daemon down: -1 "Failed to connect to daemon: ...", no wallet, a timeout)
        stays the WalletError / WalletUnavailable it is.
        """
        params = {"txid": txid, "tx_key": tx_key, "address": address}
        try:
            result = await self.call("check_tx_key", params)
        except WalletRejected:
            raise
        except WalletError as exc:
            if not _tx_key_client_fault(exc):
                raise
            raise WalletRejected(exc.message, code=exc.code) from exc
        return TxKeyCheck(
            received=int(result.get("received", 0)),
            confirmations=int(result.get("confirmations", 0)),
            in_pool=bool(result.get("in_pool", False)),
        )

    async def get_balance(self, *, account: int = 0) -> tuple[int, int]:
        """(total, unlocked) balance of ``account`` in piconero."""
        result = await self.call("get_balance", {"account_index": account})
        return int(result.get("balance", 0)), int(result.get("unlocked_balance", 0))

    async def incoming_transfers(self, min_height: int, max_height: int) -> list[dict[str, Any]]:
        """Incoming transfers of every account mined at heights ``min_height..max_height``
        (both inclusive) plus every incoming transfer in the pool; each entry's
        ``subaddr_index.major`` names its account (its store)."""
        params: dict[str, Any] = {
            "in": True,
            "pool": True,
            # One call for every store on this wallet: idle stores cost nothing more.
            "all_accounts": True,
            "filter_by_height": True,
            # The wallet's min_height is exclusive (docs/monero-notes.md): ask for one lower.
            "min_height": max(min_height - 1, 0),
            "max_height": max_height,
        }
        if min_height <= 0:
            params["filter_by_height"] = False
        result = await self.call("get_transfers", params)
        return list(result.get("in", [])) + list(result.get("pool", []))

    async def get_transfer_by_txid(
        self, txid: str, *, account: int | None = None
    ) -> dict[str, Any] | None:
        """The wallet's view of one transaction (as ``account`` sees it, when given), or
        None when it does not know it."""
        params: dict[str, Any] = {"txid": txid}
        if account is not None:
            params["account_index"] = account
        try:
            result = await self.call("get_transfer_by_txid", params)
        except WalletError as exc:
            if exc.code == WALLET_RPC_ERROR_CODE_WRONG_TXID:
                return None
            raise
        transfer = result.get("transfer")
        return transfer if isinstance(transfer, dict) else None

    async def is_view_only(self) -> bool:
        """True when the open wallet is watch-only (no spend key).

        Asked with ``sign_transfer`` of a set that is not even hex: wallet-rpc checks
        watch-only (-29) before parsing (-26 for a wallet that can sign), so nothing is
        signed and no secret travels. ``query_key spend_key`` would tell too, but it
        copies the spend key of a full wallet into this process; ``sign`` crashes a
        watch-only wallet-rpc (0.18.0.0). A wallet-rpc started with ``--restricted-rpc``
        refuses the call (-7): WalletRestricted is raised, since it can neither sync nor pay.
        """
        try:
            await self.call("sign_transfer", {"unsigned_txset": "not-a-transaction-set"})
        except WalletRestricted:
            raise
        except WalletError as exc:
            return exc.code == WALLET_RPC_ERROR_CODE_WATCH_ONLY
        return False

    async def transfer_split(
        self,
        destinations: list[dict[str, Any]],
        *,
        priority: int,
        timeout: float,
        account: int = 0,
    ) -> dict[str, Any]:
        """Send from ``account`` only; the wallet may split into several transactions."""
        return await self.call(
            "transfer_split",
            {"destinations": destinations, "priority": priority, "account_index": account},
            timeout=timeout,
        )


def _tx_key_client_fault(exc: WalletError) -> bool:
    """check_tx_key refused what it was asked (see ``TX_KEY_CLIENT_FAULT_CODES``)."""
    if exc.code in TX_KEY_CLIENT_FAULT_CODES:
        return True
    return exc.code == WALLET_RPC_ERROR_CODE_UNKNOWN_ERROR and exc.message.startswith(
        TX_NOT_FOUND_MESSAGE
    )
