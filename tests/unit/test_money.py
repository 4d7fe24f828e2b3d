"""Piconero -> XMR text: exact, integer-only formatting."""

from __future__ import annotations

import ast
import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xmrgate.domain import money
from xmrgate.domain.money import piconero_to_xmr


@pytest.mark.parametrize(
    ("piconero", "xmr"),
    [
        (0, "0"),
        (1, "0.000000000001"),
        (10, "0.00000000001"),
        (999_999_999_999, "0.999999999999"),
        (10**12, "1"),
        (1_234_500_000_000, "1.2345"),
        (1_000_000_000_001, "1.000000000001"),
        (10**12 * 18_400_000, "18400000"),
        (2**63 - 1, "9223372.036854775807"),
        (2**64 - 1, "18446744.073709551615"),
        (10**30 + 5, "1000000000000000000.000000000005"),
    ],
)
def test_known_values(piconero: int, xmr: str) -> None:
    """Whole XMR have no decimals; fractions keep up to 12 digits, no trailing zeros."""
    assert piconero_to_xmr(piconero) == xmr


def test_value_a_float_would_round_wrongly() -> None:
    """123456789012345678 piconero has more digits than a float holds; the text is exact."""
    assert f"{123456789012345678 / 10**12:.12f}" != "123456.789012345678"
    assert piconero_to_xmr(123456789012345678) == "123456.789012345678"


def test_rejects_negative() -> None:
    """A negative amount is a bug upstream, not something to display."""
    with pytest.raises(ValueError, match="negative"):
        piconero_to_xmr(-1)


@pytest.mark.parametrize("bad", [1.0, "1", True, None, 10**12 * 1.0])
def test_rejects_non_int(bad: object) -> None:
    """Floats, strings and bools are refused: money is an int of piconero."""
    with pytest.raises(TypeError):
        piconero_to_xmr(bad)  # type: ignore[arg-type]


def test_module_uses_no_float() -> None:
    """The module's source has no float literal, no float() call and no true division."""
    tree = ast.parse(inspect.getsource(money))
    for node in ast.walk(tree):
        assert not (isinstance(node, ast.Constant) and isinstance(node.value, float)), node
        assert not (isinstance(node, ast.Name) and node.id == "float"), node
        assert not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)), node


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_round_trip(piconero: int) -> None:
    """Parsing the text back with integer arithmetic gives the same piconero."""
    text = piconero_to_xmr(piconero)
    whole, _, fraction = text.partition(".")
    assert not fraction.endswith("0")
    assert len(fraction) <= 12
    assert int(whole) * 10**12 + int(fraction.ljust(12, "0") or "0") == piconero
