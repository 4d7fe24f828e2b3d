"""The address a customer types into a refund claim form, checked before the wallet is asked.

Each mistake a customer can make gets its own message in words they understand: an
empty field, a space or an invisible character inside, a payment URI or an address
with a payment id, a character Monero addresses never use, a missing or extra
character, an address of another network (``this is a testnet address; this shop
takes mainnet addresses``) or of another coin.

Monero addresses are Monero's own block base58 (``monero_keys.base58_decode``) of
``network prefix || public spend key || public view key [|| payment id] || checksum``:
69 bytes (95 characters) for a standard address or a subaddress, 77 bytes (106
characters) for an integrated address (an 8-byte payment id inside).

The 4-byte checksum (the first bytes of the Keccak-256 of the rest, a hash hashlib does
not have) is NOT checked here: that is the wallet's check. The caller also asks
wallet-rpc's ``validate_address``, which refuses a mistyped address whose checksum does
not match; this module only answers the mistakes it can name better than the wallet
does, and keeps them from reaching it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.monero_keys import ALPHABET, base58_decode

AddressKind = Literal["standard", "subaddress", "integrated"]
Network = Literal["mainnet", "testnet", "stagenet"]

#: The longest address: an integrated one (106 characters); a standard one has 95.
MAX_LENGTH = 106
#: Decoded bytes: prefix 1 + spend key 32 + view key 32 + checksum 4 (+ payment id 8).
DECODED_LENGTH: dict[AddressKind, int] = {"standard": 69, "subaddress": 69, "integrated": 77}
#: Network prefixes (one byte each: every one is below 128, so its varint is itself).
PREFIXES: dict[int, tuple[Network, AddressKind]] = {
    18: ("mainnet", "standard"),
    42: ("mainnet", "subaddress"),
    19: ("mainnet", "integrated"),
    53: ("testnet", "standard"),
    63: ("testnet", "subaddress"),
    54: ("testnet", "integrated"),
    24: ("stagenet", "standard"),
    36: ("stagenet", "subaddress"),
    25: ("stagenet", "integrated"),
}
#: The networks a shop can take addresses of; regtest uses mainnet's prefixes.
NETWORKS: dict[str, Network] = {
    "mainnet": "mainnet",
    "testnet": "testnet",
    "stagenet": "stagenet",
    "regtest": "mainnet",
}

_BASE58 = frozenset(ALPHABET)
# Characters people mistake for base58 ones: Monero's alphabet has none of them.
_LOOK_ALIKES = frozenset("0OIl")
_WHITESPACE = re.compile(r"\s")
_URI_MARKS = ("?", "=", "&")
# Named at most this many wrong characters (the rest would only be noise).
_NAMED = 5


@dataclass(frozen=True, slots=True)
class RefundAddress:
    """An address that passed the local checks (its checksum is the wallet's check)."""

    address: str
    kind: AddressKind
    network: Network


def check_refund_address(text: str, network: str) -> RefundAddress:
    """The address in ``text`` (surrounding whitespace stripped), for a shop on ``network``.

    ``network`` is ``mainnet``, ``testnet`` or ``stagenet`` (``regtest`` is taken as
    mainnet: it uses mainnet's prefixes); another value is a bug of the caller
    (ValueError). Every mistake in ``text`` raises InvalidInput saying what is wrong.
    """
    shop_network = NETWORKS.get(network)
    if shop_network is None:
        raise ValueError(f"unknown network {network!r}")
    address = text.strip()
    if not address:
        raise InvalidInput("the address is empty: paste the Monero address to refund to")
    if address.lower().startswith("monero:") or any(mark in address for mark in _URI_MARKS):
        raise InvalidInput(
            "give the address alone, without a payment id or URI "
            "(no 'monero:', nothing from '?' on)"
        )
    if _WHITESPACE.search(address):
        raise InvalidInput(
            "the address contains a space or a line break: copy it again, in one piece"
        )
    if len(address) > MAX_LENGTH:
        raise InvalidInput(
            f"the address is too long ({len(address)} characters): a Monero address has "
            f"95 characters, 106 for an integrated address"
        )
    invisible = [c for c in address if unicodedata.category(c) in ("Cc", "Cf")]
    if invisible:
        raise InvalidInput(
            f"the address contains an invisible character ({_code_point(invisible[0])}): "
            "copy it again, in one piece"
        )
    _refuse_foreign_characters(address)
    try:
        raw = base58_decode(address)
    except ValueError:
        # Every character is base58 (checked above): the length or a block's value is off.
        raise _not_an_address(address) from None
    if len(raw) not in (DECODED_LENGTH["standard"], DECODED_LENGTH["integrated"]):
        raise _not_an_address(address)
    found = PREFIXES.get(raw[0])
    if found is None:
        raise InvalidInput(
            "this is not a Monero address (its first characters belong to no Monero "
            "network): is it another coin's address?"
        )
    address_network, kind = found
    if address_network != shop_network:
        raise InvalidInput(
            f"this is a {address_network} address; this shop takes {shop_network} addresses"
        )
    if len(raw) != DECODED_LENGTH[kind]:
        raise InvalidInput(
            f"the address starts like a {_kind_words(kind)} but has {len(address)} "
            f"characters (a {_kind_words(kind)} has {_length_of(kind)}): "
            "a character is missing or extra"
        )
    return RefundAddress(address=address, kind=kind, network=address_network)


def network_of(address: str) -> Network:
    """The network of an address the shop itself made (a payment request's subaddress),
    by its prefix: the network a refund of that request is paid on.

    ValueError when it is not a Monero address: that is stored data gone wrong (or a
    bug), never a customer's mistake.
    """
    try:
        raw = base58_decode(address.strip())
    except ValueError as exc:
        raise ValueError(f"not a Monero address: {address!r} ({exc})") from None
    found = PREFIXES.get(raw[0]) if len(raw) in (69, 77) else None
    if found is None:
        raise ValueError(f"not a Monero address: {address!r}")
    return found[0]


def _refuse_foreign_characters(address: str) -> None:
    """InvalidInput naming the characters no Monero address has, if there are any."""
    foreign: list[str] = []
    for char in address:
        if char not in _BASE58 and char not in foreign:
            foreign.append(char)
    if not foreign:
        return
    named = ", ".join(_code_point(c) for c in foreign[:_NAMED])
    more = f" and {len(foreign) - _NAMED} more" if len(foreign) > _NAMED else ""
    hint = (
        " (Monero addresses never contain 0, O, I or l: check for look-alike characters)"
        if any(c in _LOOK_ALIKES for c in foreign)
        else ""
    )
    plural = "s" if len(foreign) > 1 else ""
    raise InvalidInput(
        f"the address contains character{plural} a Monero address never has: {named}{more}{hint}"
    )


def _not_an_address(address: str) -> InvalidInput:
    return InvalidInput(
        f"this is not a complete Monero address ({len(address)} characters; a Monero "
        "address has 95, 106 for an integrated address): a character is missing, extra or "
        "mistyped"
    )


def _kind_words(kind: AddressKind) -> str:
    return {"standard": "standard address", "subaddress": "subaddress"}.get(
        kind, "integrated address"
    )


def _length_of(kind: AddressKind) -> int:
    return 106 if kind == "integrated" else 95


def _code_point(char: str) -> str:
    """A character as a customer can find it: itself when visible, and its code point."""
    if char.isascii() and char.isprintable():
        return f"'{char}'"
    code = f"U+{ord(char):04X}"
    return f"'{char}' ({code})" if char.isprintable() else code
