"""Typed answers of monero-wallet-rpc that the core reads (made by ``adapters/wallet_rpc.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TxKeyCheck:
    """What wallet-rpc's ``check_tx_key`` found: how much one transaction gave an address.

    ``received`` (piconero) is 0 when the key is not the transaction's (another
    transaction's key included) or the address is not one it paid: wallet-rpc 0.18
    answers those with no error, so 0 is the only sign of a wrong key or address.
    ``confirmations`` is 0 while ``in_pool`` (docs/monero-notes.md, "check_tx_key").
    """

    received: int
    confirmations: int
    in_pool: bool
