"""The spellings of XMR-CHAIN (``xmrgate.domain.greenfield.payment_methods``; §2.4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.payment_methods import (
    XMR_CHAIN,
    parse_payment_method,
    parse_payment_methods,
)


@pytest.mark.parametrize(
    "value",
    [
        "XMR-CHAIN",
        "XMR_CHAIN",  # what WooCommerce sends
        "XMR",
        "xmr",
        " XMR-CHAIN ",
        "XMR_MoneroLike",
        "XMR-MoneroLike",
        "XMR-OnChain",
        "xmr_onchain",
        "XMR_BTCLike",
        "XMR-BitcoinLike",
        "XMR_ZcashLike",  # BTCPay reads every legacy on-chain name as CHAIN
        "XMR--CHAIN",  # empty parts are dropped
        "_XMR_",
    ],
)
def test_every_spelling_btcpay_reads_is_xmr_chain(value: str) -> None:
    assert parse_payment_method(value) == XMR_CHAIN


@settings(max_examples=30)
@given(
    st.sampled_from(["XMR", "xmr", "Xmr", "xMR"]),
    st.sampled_from(["-", "_"]),
    st.sampled_from(["chain", "onchain", "monerolike", "btclike", "bitcoinlike"]),
    st.lists(st.booleans(), min_size=11, max_size=11),
)
def test_type_names_match_in_any_case(
    code: str, separator: str, kind: str, upper: list[bool]
) -> None:
    cased = "".join(c.upper() if up else c for c, up in zip(kind, upper, strict=False))
    assert parse_payment_method(f"{code}{separator}{cased}") == XMR_CHAIN


@pytest.mark.parametrize(
    "value",
    [
        "BTC",
        "BTC-CHAIN",
        "LTC_OnChain",
        "XMR-LN",
        "XMR_LightningLike",
        "XMR-LNURL",
        "XMR_LNURLPAY",
        "XMR-CHAIN-X",  # three parts
        "XMRCHAIN",
        "XMR CHAIN",
        "",
        "-",
        None,
        5,
        ["XMR"],
    ],
)
def test_anything_else_is_refused_with_the_value(value: object) -> None:
    with pytest.raises(FieldError) as caught:
        parse_payment_method(value, path="paymentMethodId")
    assert caught.value.path == "paymentMethodId"
    assert caught.value.value == value
    assert XMR_CHAIN in caught.value.message


def test_a_list_of_methods() -> None:
    assert parse_payment_methods(None) == (XMR_CHAIN,)  # null: the store's methods
    assert parse_payment_methods([]) == (XMR_CHAIN,)
    assert parse_payment_methods(["XMR_CHAIN", "XMR"]) == (XMR_CHAIN,)


def test_a_list_names_the_bad_item() -> None:
    with pytest.raises(FieldError) as caught:
        parse_payment_methods(["XMR_CHAIN", "BTC_CHAIN"])
    assert caught.value.path == "checkout.paymentMethods[1]"
    assert caught.value.value == "BTC_CHAIN"
    with pytest.raises(FieldError) as caught:
        parse_payment_methods("XMR")
    assert caught.value.path == "checkout.paymentMethods"
