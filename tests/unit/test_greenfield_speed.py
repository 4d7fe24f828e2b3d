"""``speedPolicy`` (``xmrgate.domain.greenfield.speed``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.speed import (
    CONFIRMATIONS,
    SpeedPolicy,
    confirmations_for,
    parse_speed_policy,
    policy_for_confirmations,
)

# BTCPay's Monero plugin: HighSpeed 0 (seen in the pool), MediumSpeed 1, LowMediumSpeed 2,
# LowSpeed 6.
PLUGIN_CONFIRMATIONS = {"HighSpeed": 0, "MediumSpeed": 1, "LowMediumSpeed": 2, "LowSpeed": 6}


@pytest.mark.parametrize(("name", "blocks"), PLUGIN_CONFIRMATIONS.items())
def test_each_policy_asks_the_plugins_confirmations(name: str, blocks: int) -> None:
    policy = parse_speed_policy(name)
    assert policy is not None and policy.value == name
    assert confirmations_for(policy) == blocks
    assert policy_for_confirmations(blocks) is policy


def test_names_match_in_any_case() -> None:
    assert parse_speed_policy("lowmediumspeed") is SpeedPolicy.LOW_MEDIUM
    assert parse_speed_policy(" HIGHSPEED ") is SpeedPolicy.HIGH


def test_null_is_the_store_default_medium_unless_it_says_otherwise() -> None:
    assert parse_speed_policy(None) is None
    assert confirmations_for(None) == 1
    assert confirmations_for(None, store_default=SpeedPolicy.LOW) == 6
    assert confirmations_for(SpeedPolicy.HIGH, store_default=SpeedPolicy.LOW) == 0


@pytest.mark.parametrize("value", ["FastSpeed", "", "Medium", 1, 0, True, ["LowSpeed"]])
def test_unknown_policies_are_refused(value: object) -> None:
    with pytest.raises(FieldError) as caught:
        parse_speed_policy(value)
    assert caught.value.path == "checkout.speedPolicy"
    assert caught.value.value == value
    assert "MediumSpeed" in caught.value.message


@given(st.integers(min_value=0, max_value=100))
def test_a_store_policy_never_promises_more_confirmations(blocks: int) -> None:
    policy = policy_for_confirmations(blocks)
    assert CONFIRMATIONS[policy] <= blocks
    # ... and is the strictest that fits
    assert all(n <= CONFIRMATIONS[policy] for n in CONFIRMATIONS.values() if n <= blocks)


def test_negative_confirmations_are_a_bug() -> None:
    with pytest.raises(ValueError):
        policy_for_confirmations(-1)
