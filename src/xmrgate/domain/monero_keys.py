"""Does a secret view key belong to an address? Checked before a view-only wallet is made.

monero-wallet-rpc 0.18's ``generate_from_keys`` accepts ANY 32-byte view key for an
address and answers "Watch-only wallet has been generated successfully": the wallet
then never sees a payment, silently. So ``xmrgate wallet init --view-only`` checks
here, without any wallet, that the key's public point is the address's public view key.

Monero addresses are Monero's own base58 (8-byte blocks, 11 characters each; not
Bitcoin's), carrying ``prefix || public spend key || public view key || checksum``.
The checksum (Keccak-256, not in hashlib) is left to wallet-rpc's ``validate_address``;
the curve arithmetic is libsodium's, through PyNaCl.
"""

from __future__ import annotations

from dataclasses import dataclass

from xmrgate.domain.errors import InvalidInput

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_VALUE = {c: i for i, c in enumerate(ALPHABET)}
# Characters an encoded block of n bytes takes (n = 0..8).
_ENCODED_SIZES = [0, 2, 3, 5, 6, 7, 9, 10, 11]
KEY_HEX_LENGTH = 64
# Network prefixes of subaddresses (mainnet, testnet, stagenet); regtest uses mainnet's.
SUBADDRESS_PREFIXES = frozenset({42, 63, 36})


@dataclass(frozen=True, slots=True)
class AddressKeys:
    """The public keys an address carries."""

    spend_public: bytes
    view_public: bytes


def base58_decode(text: str) -> bytes:
    """Monero's block-wise base58 (each 11 characters decode to 8 bytes)."""
    out = bytearray()
    for start in range(0, len(text), 11):
        block = text[start : start + 11]
        if len(block) not in _ENCODED_SIZES:
            raise ValueError("impossible length")
        size = _ENCODED_SIZES.index(len(block))
        number = 0
        for char in block:
            if char not in _VALUE:
                raise ValueError(f"{char!r} is not a base58 character")
            number = number * 58 + _VALUE[char]
        if number >= 1 << (8 * size):
            raise ValueError("block overflows")
        out += number.to_bytes(size, "big")
    return bytes(out)


def address_keys(address: str) -> AddressKeys:
    """The public spend and view keys of a standard (primary) address."""
    try:
        raw = base58_decode(address.strip())
    except ValueError as exc:
        raise InvalidInput(f"the address is not a Monero address ({exc})") from None
    # 1-byte network prefix (every Monero prefix for these is below 128), 32 + 32, checksum 4.
    if len(raw) != 69:
        raise InvalidInput(
            "the address is not a standard Monero address (integrated addresses are refused)"
        )
    if raw[0] in SUBADDRESS_PREFIXES:
        raise InvalidInput(
            "the address is a subaddress: give the wallet's primary address "
            "(account 0, index 0; it starts with 4 on mainnet)"
        )
    return AddressKeys(spend_public=raw[1:33], view_public=raw[33:65])


def parse_secret_key(text: str, what: str) -> bytes:
    """A secret key given as 64 hexadecimal characters (a reduced scalar)."""
    value = text.strip().lower()
    if len(value) != KEY_HEX_LENGTH or any(c not in "0123456789abcdef" for c in value):
        raise InvalidInput(f"the {what} must be 64 hexadecimal characters")
    key = bytes.fromhex(value)
    # PyNaCl is imported by the two functions that use it: the server imports this
    # module for its base58 (refund addresses), and libsodium's binding costs about
    # 1 MB resident that only ``wallet init --view-only`` needs.
    from nacl.bindings import crypto_core_ed25519_scalar_reduce

    if crypto_core_ed25519_scalar_reduce(key + bytes(32)) != key:
        raise InvalidInput(f"the {what} is not a valid Monero secret key (not a reduced scalar)")
    return key


def public_key_of(secret: bytes) -> bytes | None:
    """secret * G, compressed; None for the zero key (no public point)."""
    from nacl.bindings import crypto_scalarmult_ed25519_base_noclamp
    from nacl.exceptions import CryptoError
    from nacl.exceptions import RuntimeError as NaclRuntimeError

    try:
        return bytes(crypto_scalarmult_ed25519_base_noclamp(secret))
    except (CryptoError, NaclRuntimeError):
        return None


def check_view_key(address: str, view_key: str) -> bytes:
    """Return the secret view key when it belongs to ``address``; else InvalidInput saying why.

    The usual mix-ups get their own message: the public view key instead of the secret
    one, and the secret SPEND key (which must never reach the server).
    """
    keys = address_keys(address)
    key_hex = view_key.strip().lower()
    if len(key_hex) == KEY_HEX_LENGTH and key_hex == keys.view_public.hex():
        raise InvalidInput(
            "that is the PUBLIC view key; give the secret (private) view key of the wallet"
        )
    secret = parse_secret_key(view_key, "view key")
    public = public_key_of(secret)
    if public == keys.spend_public:
        raise InvalidInput(
            "that is the secret SPEND key: never put it on the server; give the secret view key"
        )
    if public != keys.view_public:
        raise InvalidInput(
            "the view key does not belong to this address (its public key is not the "
            "address's public view key): give the secret view key of this wallet, and the "
            "wallet's primary address"
        )
    return secret
