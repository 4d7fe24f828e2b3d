"""Creating the gateway's wallet in monero-wallet-rpc: a new full one, or a view-only one.

A view-only wallet is made from the primary address and the secret view key with
``generate_from_keys``; no spend key ever reaches this machine. Everything that can be
checked is checked before the wallet is written, and wallet-rpc's terse errors
("Failed to parse public address", code -1) become messages that say what to do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xmrgate.adapters.wallet_rpc import (
    DEFAULT_WALLET_NAME,
    WALLET_RPC_ERROR_CODE_WALLET_ALREADY_EXISTS,
    WalletClient,
)
from xmrgate.domain.errors import AlreadyExists, InvalidInput, WalletError
from xmrgate.domain.monero_keys import check_view_key

log = logging.getLogger(__name__)

WALLET_RPC_ERROR_CODE_NO_WALLET_DIR = -23


@dataclass(frozen=True, slots=True)
class CreatedWallet:
    """What was created, for the operator."""

    filename: str
    address: str
    view_only: bool
    restore_height: int | None


class WalletSetup:
    """Creates wallets through one wallet-rpc, and closes them for the gateway to open."""

    def __init__(self, client: WalletClient) -> None:
        self._client = client

    async def create_view_only(
        self,
        address: str,
        view_key: str,
        *,
        restore_height: int | None = None,
        filename: str = DEFAULT_WALLET_NAME,
    ) -> CreatedWallet:
        """A watch-only wallet for ``address``; InvalidInput names a wrong key or address."""
        address = address.strip()
        await self._check_address(address)
        secret = check_view_key(address, view_key)
        params: dict[str, object] = {
            "filename": filename,
            "address": address,
            "viewkey": secret.hex(),
            "password": "",
            "autosave_current": True,
        }
        if restore_height is not None:
            if restore_height < 0:
                raise InvalidInput("the restore height cannot be negative")
            params["restore_height"] = restore_height
        try:
            # Scanning starts later (the wallet's own refresh); creating is quick.
            await self._client.call("generate_from_keys", params, timeout=300)
        except WalletError as exc:
            raise _explain(exc, filename) from exc
        created = await self._client.primary_address()
        if created != address:
            raise WalletError(f"wallet-rpc created a wallet for {created}, not for {address}")
        await self._close()
        log.info("created view-only wallet %r for %s", filename, address)
        return CreatedWallet(filename, address, True, restore_height)

    async def create_full(self, filename: str = DEFAULT_WALLET_NAME) -> CreatedWallet:
        """A new wallet with its own keys (the spend key stays in wallet-rpc's file)."""
        try:
            await self._client.call("create_wallet", {"filename": filename, "language": "English"})
        except WalletError as exc:
            raise _explain(exc, filename) from exc
        address = await self._client.primary_address()
        await self._close()
        log.info("created wallet %r: %s", filename, address)
        return CreatedWallet(filename, address, False, None)

    async def _close(self) -> None:
        """Close (and so save) the new wallet: the gateway then opens it BY NAME, which
        is what lets it open the wallet again after a wallet-rpc restart."""
        await self._client.call("close_wallet")

    async def _check_address(self, address: str) -> None:
        """wallet-rpc checks the checksum (``any_net_type``: works with no wallet open);
        the kind of address is checked with the key, in ``check_view_key``."""
        result = await self._client.call(
            "validate_address", {"address": address, "any_net_type": True}
        )
        if not result.get("valid"):
            raise InvalidInput(
                "the address is not a valid Monero address (a typo? its checksum fails)"
            )


def _explain(exc: WalletError, filename: str) -> Exception:
    """wallet-rpc's creation errors in words an operator can act on."""
    message = exc.message.lower()
    if exc.code == WALLET_RPC_ERROR_CODE_WALLET_ALREADY_EXISTS or "already exists" in message:
        return AlreadyExists(
            f"a wallet named {filename!r} already exists in wallet-rpc's --wallet-dir: the "
            "gateway opens it as it is; move it away (both files, with .keys) to start over"
        )
    if exc.code == WALLET_RPC_ERROR_CODE_NO_WALLET_DIR:
        return InvalidInput(
            "wallet-rpc was started without --wallet-dir: restart it with "
            "--wallet-dir DIR so that it can create wallets"
        )
    if "parse public address" in message:
        return InvalidInput(
            "wallet-rpc cannot use this address: it belongs to another network (mainnet, "
            "stagenet or testnet) than this wallet-rpc"
        )
    if "view key" in message:
        return InvalidInput(f"wallet-rpc refused the view key: {exc.message}")
    if "invalid filename" in message:
        return InvalidInput(f"wallet-rpc refused the file name {filename!r}")
    return exc
