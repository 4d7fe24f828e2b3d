"""The refund claim form's address check: real addresses pass, each mistake is named.

The addresses are real: made by monero-wallet-rpc 0.18.0.0 (a throwaway wallet per
network, ``--testnet`` / ``--stagenet`` / mainnet, offline; the subaddress with
``create_address``, the integrated one with ``make_integrated_address``), which also
answered ``validate_address`` (``any_net_type``) ``valid: true`` with the network and
kind below for every one; plus the Monero documentation's example addresses.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.monero_keys import ALPHABET, base58_decode
from xmrgate.domain.refund_address import (
    PREFIXES,
    RefundAddress,
    check_refund_address,
    network_of,
)

# (address, network, kind)
REAL = [
    (
        "4AreYLY6TswdJoBSPaFLb77cnNuebnhk7UjVNyztJPtJatww6nf36tPUxFJ1Rq5wLKbEk3DKXKQdrE51P3ib9ELrHCqPxHr",
        "mainnet",
        "standard",
    ),
    (
        "84YsTr9pp1GZR63ypQ1CKA5Zmb1GJ9fGW5zqEkWcojpjXFYrLhvCxjbATaWt3J37BQgFs3gNjRRQzL2u5su5C4LDEC2PX7f",
        "mainnet",
        "subaddress",
    ),
    (
        "4LZKZ9Mb59TdJoBSPaFLb77cnNuebnhk7UjVNyztJPtJatww6nf36tPUxFJ1Rq5wLKbEk3DKXKQdrE51P3ib9ELr"
        "QvyChjbtWyrU4Rk5f5",
        "mainnet",
        "integrated",
    ),
    (
        "9zo6vkfSXnP3L1yEdRBoDxhPuoZuDGxMfMgqpYhcFaxEZAv4pYpx1FVdYnDggwgsZMGcM2VQNmt7LDkQx9DdHEbqQDSKKp3",
        "testnet",
        "standard",
    ),
    (
        "BhUQZB1QuVy5rjiwvRCpukSVngCmZ3EmueWpR2bZuWPmjXtrAui2LET678DY7taSe1EyvouQSVVtGNyfP39a6gGt2z93xQ9",
        "testnet",
        "subaddress",
    ),
    (
        "AAVmwZUw93u3L1yEdRBoDxhPuoZuDGxMfMgqpYhcFaxEZAv4pYpx1FVdYnDggwgsZMGcM2VQNmt7LDkQx9DdHEbq"
        "bJSuZnNUDZvU4eSKag",
        "testnet",
        "integrated",
    ),
    (
        "5Ag6FHdvkLLTpWwRKqf2NJ1YUeXZV7RDXXRdjrVsZB3A6uSeU3yXrjBgMs7VGLxhWfNazwWah6TyU6hky5Rj6PndE4zjfoW",
        "stagenet",
        "standard",
    ),
    (
        "7884gL5nWjdgofwnx4TLQDQ1K8GLoKoqCZ9JJzLZmrg1DQ1Myau5QenLSe4szyWEA6CXETKouaxc4CWNusbWLPnB49vK7ko",
        "stagenet",
        "subaddress",
    ),
    (
        "5LNmG6TRMbrTpWwRKqf2NJ1YUeXZV7RDXXRdjrVsZB3A6uSeU3yXrjBgMs7VGLxhWfNazwWah6TyU6hky5Rj6Pnd"
        "LFLNK8g5VVNTzc7fEk",
        "stagenet",
        "integrated",
    ),
    # The Monero documentation's examples (monero-wallet-rpc and address docs).
    (
        "44AFFq5kSiGBoZ4NMDwYtN18obc8AemS33DBLWs3H7otXft3XjrpDtQGv7SqSsaBYBb98uNbr2VBBEt7f2wfn3RVGQBEP3A",
        "mainnet",
        "standard",
    ),
    (
        "55LTR8KniP4LQGJSPtbYDacR7dz8RBFnsfAKMaMuwUNYX6aQbBcovzDPyrQF9KXF9tVU6Xk3K8no1BywnJX6GvZX8yJsXvt",
        "stagenet",
        "standard",
    ),
    (
        "9wviCeWe2D8XS82k2ovp5EUYLzBt9pYNW2LXUFsZiv8S3Mt21FZ5qQaAroko1enzw3eGr9qC7X1D7Geoo2RrAotYPwq9Gm8",
        "testnet",
        "standard",
    ),
    # A regtest wallet's (mainnet prefixes): tests/unit/test_monero_keys.py.
    (
        "83rGqPx7diBcEDoKTwB65VeE4PwWsjkBDQWvKSh93cumexVxGV3exdkYsco9vmg3c7J2ijuZgs114i5YDV7kwzPKMSAWExx",
        "mainnet",
        "subaddress",
    ),
]
MAINNET = REAL[0][0]
TESTNET = REAL[3][0]
STAGENET_SUB = REAL[7][0]


@pytest.mark.parametrize(("address", "network", "kind"), REAL)
def test_real_addresses_pass_with_their_kind(address: str, network: str, kind: str) -> None:
    raw = base58_decode(address)  # they really decode, to the bytes their kind has
    assert len(raw) == (77 if kind == "integrated" else 69)
    assert PREFIXES[raw[0]] == (network, kind)
    assert check_refund_address(address, network) == RefundAddress(address, kind, network)  # type: ignore[arg-type]


@pytest.mark.parametrize(("address", "network", "kind"), REAL)
def test_network_of_an_address_the_shop_made(address: str, network: str, kind: str) -> None:
    assert network_of(address) == network


@pytest.mark.parametrize("stored", ["", "hello", "8Fake" + "A" * 60, "1" * 95])
def test_network_of_something_else_is_a_bug(stored: str) -> None:
    with pytest.raises(ValueError, match="not a Monero address"):
        network_of(stored)


def test_regtest_takes_mainnet_addresses() -> None:
    assert check_refund_address(MAINNET, "regtest").network == "mainnet"
    with pytest.raises(InvalidInput, match="this is a testnet address; this shop takes mainnet"):
        check_refund_address(TESTNET, "regtest")


def test_surrounding_whitespace_is_stripped() -> None:
    assert check_refund_address(f" \t{MAINNET}\r\n ", "mainnet").address == MAINNET


def test_an_unknown_shop_network_is_a_bug_of_the_caller() -> None:
    with pytest.raises(ValueError, match="unknown network"):
        check_refund_address(MAINNET, "fakechain")


def _encode(raw: bytes) -> str:
    """Monero's block base58 the other way (8 bytes -> 11 characters), for test inputs."""
    sizes = [0, 2, 3, 5, 6, 7, 9, 10, 11]
    out = ""
    for start in range(0, len(raw), 8):
        block = raw[start : start + 8]
        number = int.from_bytes(block, "big")
        chars = ""
        for _ in range(sizes[len(block)]):
            number, digit = divmod(number, 58)
            chars = ALPHABET[digit] + chars
        out += chars
    return out


assert _encode(base58_decode(MAINNET)) == MAINNET
# A base58 text of 95 characters whose first byte is 0 (no Monero network's prefix).
OTHER_COIN = "1" * 95
# The mainnet integrated address with the prefix of a standard one (18): 77 bytes.
STANDARD_TOO_LONG = _encode(bytes([18]) + base58_decode(REAL[2][0])[1:])


@pytest.mark.parametrize(
    ("text", "network", "says"),
    [
        ("", "mainnet", "the address is empty"),
        ("   \n\t", "mainnet", "the address is empty"),
        (MAINNET[:40] + " " + MAINNET[40:], "mainnet", "the address contains a space"),
        (MAINNET[:40] + "\n" + MAINNET[40:], "mainnet", "the address contains a space"),
        (MAINNET[:40] + "\u00a0" + MAINNET[40:], "mainnet", "the address contains a space"),
        (f"{MAINNET} {MAINNET}", "mainnet", "the address contains a space"),
        (MAINNET[:40] + "\u200b" + MAINNET[40:], "mainnet", r"invisible character \(U\+200B\)"),
        (MAINNET[:40] + "\x00" + MAINNET[40:], "mainnet", r"invisible character \(U\+0000\)"),
        (MAINNET + "\u200b", "mainnet", "invisible character"),
        (MAINNET + "A" * 12, "mainnet", "too long"),
        ("4" * 1000, "mainnet", r"too long \(1000 characters\)"),
        (f"monero:{MAINNET}", "mainnet", "give the address alone, without a payment id or URI"),
        (f"MONERO:{MAINNET}", "mainnet", "give the address alone"),
        (f"{MAINNET}?tx_payment_id=1234567890abcdef", "mainnet", "give the address alone"),
        (f"{MAINNET}&tx_amount=1", "mainnet", "give the address alone"),
        ("payment_id=1234567890abcdef", "mainnet", "give the address alone"),
        (MAINNET[:-1] + "0", "mainnet", r"never has: '0' \(Monero addresses never contain 0"),
        (MAINNET[:10] + "OIl" + MAINNET[13:], "mainnet", "never has: 'O', 'I', 'l'"),
        (MAINNET[:10] + "é" + MAINNET[11:], "mainnet", r"never has: 'é' \(U\+00E9\)$"),
        ("0OIl+/-_.,", "mainnet", "characters a Monero address never has: .* and 5 more"),
        (MAINNET[:-1], "mainnet", r"not a complete Monero address \(94 characters"),
        (MAINNET + "A", "mainnet", r"not a complete Monero address \(96 characters"),
        (MAINNET[:-11], "mainnet", r"not a complete Monero address \(84 characters"),
        ("zzzzzzzzzzz" + MAINNET[11:], "mainnet", "not a complete Monero address"),
        (TESTNET, "mainnet", "this is a testnet address; this shop takes mainnet addresses"),
        (MAINNET, "testnet", "this is a mainnet address; this shop takes testnet addresses"),
        (STAGENET_SUB, "mainnet", "this is a stagenet address; this shop takes mainnet"),
        (MAINNET, "stagenet", "this is a mainnet address; this shop takes stagenet"),
        (OTHER_COIN, "mainnet", "not a Monero address .*another coin"),
        (STANDARD_TOO_LONG, "mainnet", "starts like a standard address but has 106 characters"),
    ],
)
def test_each_mistake_is_named(text: str, network: str, says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        check_refund_address(text, network)


def test_the_messages_are_distinct() -> None:
    texts = [
        "",
        MAINNET[:40] + " " + MAINNET[40:],
        MAINNET[:40] + "\u200b" + MAINNET[40:],
        "4" * 200,
        f"{MAINNET}?tx_payment_id=00",
        MAINNET[:-1] + "0",
        MAINNET[:-1],
        TESTNET,
        OTHER_COIN,
        STANDARD_TOO_LONG,
    ]
    messages = set()
    for text in texts:
        with pytest.raises(InvalidInput) as caught:
            check_refund_address(text, "mainnet")
        messages.add(caught.value.message.split(" (")[0].split(":")[0])
    assert len(messages) == len(texts)


def test_the_checksum_is_left_to_the_wallet() -> None:
    # The last character changed: the checksum no longer matches, which wallet-rpc's
    # validate_address refuses ("valid": false); this module cannot tell (no Keccak).
    changed = MAINNET[:-1] + ("A" if MAINNET[-1] != "A" else "B")
    assert check_refund_address(changed, "mainnet").kind == "standard"


NETWORK_NAMES = st.sampled_from(["mainnet", "testnet", "stagenet", "regtest"])


@given(st.text(max_size=300), NETWORK_NAMES)
def test_arbitrary_text_raises_nothing_but_invalid_input(text: str, network: str) -> None:
    try:
        found = check_refund_address(text, network)
    except InvalidInput as exc:
        assert exc.message
    else:
        assert found.address == text.strip()


@given(st.text(alphabet=ALPHABET, min_size=90, max_size=110), NETWORK_NAMES)
def test_base58_text_raises_nothing_but_invalid_input(text: str, network: str) -> None:
    try:
        found = check_refund_address(text, network)
    except InvalidInput as exc:
        assert exc.message
    else:
        assert len(base58_decode(found.address)) in (69, 77)


@given(
    st.sampled_from(REAL),
    st.integers(min_value=0, max_value=105),
    st.sampled_from([*ALPHABET, " ", "0", "?", "\u200b", ""]),
)
def test_one_character_changed_raises_nothing_but_invalid_input(
    real: tuple[str, str, str], at: int, char: str
) -> None:
    address, network, _ = real
    text = address[:at] + char + address[at + 1 :]
    try:
        check_refund_address(text, network)
    except InvalidInput as exc:
        assert exc.message
