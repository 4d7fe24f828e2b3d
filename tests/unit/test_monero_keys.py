"""Does a view key belong to an address? Vectors from a regtest wallet (monero 0.18).

wallet-rpc's generate_from_keys accepts any view key, so this check is all that stands
between a typo and a gateway that silently never sees a payment.
"""

from __future__ import annotations

import pytest

from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.monero_keys import address_keys, base58_decode, check_view_key, public_key_of

# A throwaway regtest wallet: primary address, its secret view and spend keys.
ADDRESS = (
    "47egMG6teAeRcW7WKRfmnJfq6fRLG2zmpLu2YmvbPS3B3JY"
    "zL3iazF83v7qJSweJiN7AVMBrZ9gsW5PtfSZNfGTRT2PViky"
)
VIEW_KEY = "0b2ec37bfa878930bc168d66ea6734507087d48f2ffd35dc472903d567896d08"
SPEND_KEY = "77b5838dfb04b20c20e88d5455da3a8622976dadceb8c7a2ee2b9804d0fd840d"
SUBADDRESS = (
    "83rGqPx7diBcEDoKTwB65VeE4PwWsjkBDQWvKSh93cumexV"
    "xGV3exdkYsco9vmg3c7J2ijuZgs114i5YDV7kwzPKMSAWExx"
)
INTEGRATED = (
    "4HMMN4vPFSARcW7WKRfmnJfq6fRLG2zmpLu2YmvbPS3B3JYzL3iaz"
    "F83v7qJSweJiN7AVMBrZ9gsW5PtfSZNfGTRfWjf613y6788UcWCw7"
)


def test_the_right_view_key_is_accepted() -> None:
    assert check_view_key(ADDRESS, VIEW_KEY).hex() == VIEW_KEY
    assert check_view_key(f"  {ADDRESS}\n", VIEW_KEY.upper()).hex() == VIEW_KEY
    keys = address_keys(ADDRESS)
    assert public_key_of(bytes.fromhex(SPEND_KEY)) == keys.spend_public


def test_base58_blocks() -> None:
    raw = base58_decode(ADDRESS)
    assert len(raw) == 69 and raw[0] == 18  # mainnet standard address prefix
    assert base58_decode("11") == b"\x00"


@pytest.mark.parametrize(
    ("address", "key", "says"),
    [
        (ADDRESS, SPEND_KEY, "SPEND key"),
        (ADDRESS, address_keys(ADDRESS).view_public.hex(), "PUBLIC view key"),
        (ADDRESS, "01" + "00" * 31, "does not belong to this address"),
        (ADDRESS, "00" * 32, "does not belong to this address"),
        (ADDRESS, "11" * 32, "not a valid Monero secret key"),
        (ADDRESS, VIEW_KEY[:-2], "64 hexadecimal characters"),
        (ADDRESS, "zz" * 32, "64 hexadecimal characters"),
        (SUBADDRESS, VIEW_KEY, "subaddress"),
        (INTEGRATED, VIEW_KEY, "integrated addresses are refused"),
        ("4" + "0" * 94, VIEW_KEY, "not a Monero address"),
        (ADDRESS[:-1], VIEW_KEY, "not a Monero address"),
    ],
)
def test_wrong_keys_and_addresses_say_what_is_wrong(address: str, key: str, says: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_view_key(address, key)
    assert says in refused.value.message
