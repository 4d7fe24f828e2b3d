"""Asks a store's wallet-rpc which wallet it has open (implements ``WalletProbe``).

Foreign failures become InvalidInput here, each saying what to do: a store whose
wallet-rpc cannot be asked is refused, and nothing is created.
"""

from __future__ import annotations

from xmrgate.adapters.wallet_rpc import WALLET_RPC_ERROR_CODE_NOT_OPEN, WalletClient
from xmrgate.core.store_wallets import WalletSpec
from xmrgate.domain.errors import InvalidInput, WalletUnavailable, XmrgateError

PROBE_TIMEOUT = 10.0


class WalletRpcProbe:
    """One short-lived client per question; never kept."""

    def __init__(self, timeout: float = PROBE_TIMEOUT) -> None:
        self._timeout = timeout

    async def primary_address(self, spec: WalletSpec) -> str:
        """The primary address of the wallet open in ``spec``'s wallet-rpc."""
        client = WalletClient(
            spec.rpc_address,
            username=spec.rpc_username,
            password=spec.rpc_password,
            timeout=self._timeout,
        )
        where = f"wallet-rpc at {spec.rpc_address}"
        try:
            return await client.primary_address()
        except WalletUnavailable as exc:
            if exc.code == WALLET_RPC_ERROR_CODE_NOT_OPEN:
                raise InvalidInput(
                    f"{where} has no wallet open: open the store's wallet in it first "
                    "(nothing was created)"
                ) from None
            raise InvalidInput(
                f"{where} does not answer ({exc.message}); nothing was created"
            ) from None
        except XmrgateError as exc:
            raise InvalidInput(f"{where} refused: {exc.message}; nothing was created") from None
        finally:
            await client.aclose()
