"""One account of the main wallet, as a store's use cases see their wallet.

A store on an account of the main wallet receives on subaddresses of that account,
reads that account's balance and transactions, and pays out from that account only
(``transfer_split`` spends from one account: a payout larger than the store's balance
fails even when the wallet holds more). Everything else is the wallet's.
"""

from __future__ import annotations

from typing import Any

from xmrgate.adapters.wallet_rpc import WalletClient
from xmrgate.domain.wallet_answers import TxKeyCheck


class AccountWallet:
    """``core.ports.Wallet`` on account ``account`` of ``client``'s wallet."""

    def __init__(self, client: WalletClient, account: int) -> None:
        self._client = client
        self.account = account

    async def create_address(self, label: str = "") -> tuple[str, int]:
        """A new subaddress of this account and its minor index."""
        return await self._client.create_address(label, account=self.account)

    async def create_addresses(self, count: int) -> list[tuple[str, int]]:
        """``count`` (1..64) new subaddresses of this account in one call."""
        return await self._client.create_addresses(count, account=self.account)

    async def skip_subaddresses(self, count: int) -> None:
        """Move this account's subaddress counter ``count`` indices ahead."""
        await self._client.skip_subaddresses(count, account=self.account)

    async def label_address(self, index: int, label: str) -> None:
        """Label subaddress ``index`` of this account."""
        await self._client.label_address(index, label, account=self.account)

    async def has_subaddress(self, index: int) -> bool:
        """Whether this account's subaddress table reaches ``index``."""
        return await self._client.has_subaddress(index, account=self.account)

    async def save(self) -> None:
        """Write the wallet file (created subaddresses survive a crash)."""
        await self._client.save()

    async def rescan(self) -> None:
        """Scan the chain again (the whole wallet: every account)."""
        await self._client.rescan()

    async def is_valid_address(self, address: str) -> bool:
        """Whether ``address`` is valid on the wallet's network."""
        return await self._client.is_valid_address(address)

    async def address_network(self, address: str) -> str | None:
        """The network of an address valid on any network; None when it is not valid."""
        return await self._client.address_network(address)

    async def check_tx_key(self, txid: str, tx_key: str, address: str) -> TxKeyCheck:
        """What transaction ``txid`` gave ``address`` (the wallet's, not this account's)."""
        return await self._client.check_tx_key(txid, tx_key, address)

    async def get_balance(self) -> tuple[int, int]:
        """Total and unlocked balance of this account."""
        return await self._client.get_balance(account=self.account)

    async def get_transfer_by_txid(self, txid: str) -> dict[str, Any] | None:
        """This account's view of one transaction, or None when it is not this account's."""
        found = await self._client.get_transfer_by_txid(txid, account=self.account)
        if found is None:
            return None
        # wallet-rpc answers with another account's record when this one has none.
        major = (found.get("subaddr_index") or {}).get("major", self.account)
        return found if int(major) == self.account else None

    async def transfer_split(
        self, destinations: list[dict[str, Any]], *, priority: int, timeout: float
    ) -> dict[str, Any]:
        """Send from this account only."""
        return await self._client.transfer_split(
            destinations, priority=priority, timeout=timeout, account=self.account
        )

    async def is_view_only(self) -> bool:
        """Whether the wallet holds no spend key."""
        return await self._client.is_view_only()

    async def probe(self, *, timeout: float) -> bool:
        """Whether wallet-rpc answers now."""
        return await self._client.probe(timeout=timeout)
