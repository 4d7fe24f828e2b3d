"""Greenfield payments (``xmrgate.domain.greenfield.payments``; greenfield.md §2.3, §2.7)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.payments import (
    MAX_INDEX,
    PaymentId,
    PaymentStatus,
    after_expiration,
    format_payment_id,
    parse_payment_id,
    payment_json,
    payment_status,
    settled_total,
)
from xmrgate.domain.ledger import Transfer, TransferState

TXID = "ab" * 32
HEIGHT = 1000


def transfer(
    state: TransferState = TransferState.CONFIRMED,
    *,
    height: int = HEIGHT,
    amount: int = 5 * 10**11,
    unlock_time: int = 0,
    double_spend: bool = False,
    seen: int = 1_750_000_000,
    index: int = 7,
) -> Transfer:
    """One transfer; a pool transfer has height 0, as the ledger keeps it."""
    return Transfer(
        tx_hash=TXID,
        subaddr_index=index,
        amount=amount,
        fee=30_000_000,
        height=0 if state is TransferState.POOL else height,
        timestamp=seen + 60,
        unlock_time=unlock_time,
        double_spend_seen=double_spend,
        state=state,
        first_seen=seen,
    )


txids = st.text("0123456789abcdef", min_size=64, max_size=64)
indices = st.integers(min_value=0, max_value=MAX_INDEX)


@settings(max_examples=30)
@given(txids, indices, indices)
def test_payment_ids_read_back(txid: str, account: int, index: int) -> None:
    text = format_payment_id(txid, account, index)
    assert text == f"{txid}#{account}#{index}"  # the plugin's txid#account#index
    assert parse_payment_id(text) == PaymentId(txid, account, index)
    assert str(parse_payment_id(text)) == text


def test_an_upper_case_txid_is_kept_lower() -> None:
    assert parse_payment_id(f"{TXID.upper()}#0#7").txid == TXID
    assert format_payment_id(TXID.upper(), 0, 7) == f"{TXID}#0#7"


@pytest.mark.parametrize(
    "value",
    [
        f"{TXID}#0",
        f"{TXID}#0#7#1",
        f"{TXID[:-1]}#0#7",
        f"{TXID}g#0#7",
        f"{TXID}#-1#7",
        f"{TXID}#+1#7",
        f"{TXID}#01#7",  # one payment, one spelling
        f"{TXID}#0#{MAX_INDEX + 1}",
        f"{TXID}#0# 7",
        f"{TXID}-0-7",
        None,
        7,
    ],
)
def test_malformed_payment_ids_are_refused(value: object) -> None:
    with pytest.raises(FieldError) as caught:
        parse_payment_id(value, path="paymentId")
    assert caught.value.path == "paymentId"
    assert caught.value.value == value


def test_formatting_refuses_what_no_wallet_gives() -> None:
    with pytest.raises(ValueError):
        format_payment_id("xyz", 0, 0)
    with pytest.raises(ValueError):
        format_payment_id(TXID, -1, 0)


@pytest.mark.parametrize(
    ("payment", "required", "status"),
    [
        (transfer(TransferState.POOL), 0, PaymentStatus.SETTLED),  # HighSpeed: seen is enough
        (transfer(TransferState.POOL), 1, PaymentStatus.PROCESSING),
        (transfer(height=HEIGHT - 1), 1, PaymentStatus.SETTLED),  # 1 confirmation
        (transfer(height=HEIGHT - 1), 2, PaymentStatus.PROCESSING),
        (transfer(height=HEIGHT - 6), 6, PaymentStatus.SETTLED),
        (transfer(height=HEIGHT - 5), 6, PaymentStatus.PROCESSING),
        (transfer(TransferState.UNLOCKED, height=HEIGHT - 10), 50, PaymentStatus.SETTLED),
        (transfer(TransferState.GONE), 0, PaymentStatus.INVALID),
        (transfer(TransferState.POOL, double_spend=True), 0, PaymentStatus.INVALID),
        # time-locked by its sender: not settled before it unlocks, whatever the policy
        (transfer(height=HEIGHT - 8, unlock_time=HEIGHT + 50), 1, PaymentStatus.PROCESSING),
    ],
)
def test_payment_status(payment: Transfer, required: int, status: PaymentStatus) -> None:
    assert payment_status(payment, HEIGHT, required) is status


def test_settled_total_counts_the_settled_payments_only() -> None:
    payments = [
        transfer(height=HEIGHT - 3, amount=1, index=1),
        transfer(TransferState.POOL, amount=10, index=2),
        transfer(TransferState.GONE, amount=100, index=3),
        transfer(TransferState.UNLOCKED, height=HEIGHT - 20, amount=1000, index=4),
    ]
    assert settled_total(payments, HEIGHT, 1) == 1001
    assert settled_total(payments, HEIGHT, 0) == 1011
    assert settled_total(payments, HEIGHT, 6) == 1000


def test_after_expiration_uses_the_same_second_rule_as_our_statuses() -> None:
    seen = 1_750_000_000
    assert after_expiration(transfer(seen=seen), seen + 0.5)  # seen in the expiry's second
    assert not after_expiration(transfer(seen=seen - 1), seen + 0.5)
    assert after_expiration(transfer(seen=seen + 10), seen)
    assert not after_expiration(transfer(seen=seen + 10), None)  # no expiry, never late


def test_payment_json_has_the_fields_and_types_clients_read() -> None:
    body = payment_json(
        transfer(height=HEIGHT - 2, amount=81_234_567_890),
        account=0,
        destination="8Addr",
        chain_height=HEIGHT,
        required=1,
    )
    assert body == {
        "id": f"{TXID}#0#7",
        "receivedDate": 1_750_000_000,
        "value": "0.08123456789",
        "fee": "0",
        "status": "Settled",
        "destination": "8Addr",
    }
    assert Decimal(body["value"]) * 10**12 == 81_234_567_890
