"""Monero-shaped addresses for tests that check addresses locally (no wallet).

The checksum is NOT Keccak's (hashlib has none): these pass the local checks of
``domain/refund_address.py`` (base58, length, network prefix) and nothing more; a test
that needs a real address gets it from a regtest wallet.
"""

from __future__ import annotations

import os

from xmrgate.domain.monero_keys import ALPHABET

# Bytes per full block and the characters an encoded block of n bytes takes.
_ENCODED_SIZES = [0, 2, 3, 5, 6, 7, 9, 10, 11]

PREFIXES = {
    ("mainnet", "standard"): 18,
    ("mainnet", "subaddress"): 42,
    ("mainnet", "integrated"): 19,
    ("testnet", "standard"): 53,
    ("testnet", "subaddress"): 63,
    ("testnet", "integrated"): 54,
    ("stagenet", "standard"): 24,
    ("stagenet", "subaddress"): 36,
    ("stagenet", "integrated"): 25,
}


def base58_encode(data: bytes) -> str:
    """Monero's block-wise base58 (8-byte blocks, 11 characters each)."""
    out = []
    for start in range(0, len(data), 8):
        block = data[start : start + 8]
        number = int.from_bytes(block, "big")
        chars = []
        for _ in range(_ENCODED_SIZES[len(block)]):
            number, digit = divmod(number, 58)
            chars.append(ALPHABET[digit])
        out.append("".join(reversed(chars)))
    return "".join(out)


def fake_address(
    network: str = "mainnet", kind: str = "standard", seed: bytes | None = None
) -> str:
    """An address of ``network`` and ``kind`` with random keys and a made-up checksum."""
    keys = seed if seed is not None else os.urandom(64)
    payment_id = os.urandom(8) if kind == "integrated" else b""
    return base58_encode(bytes([PREFIXES[(network, kind)]]) + keys[:64] + payment_id + b"\0\0\0\0")
