"""Greenfield error bodies (``xmrgate.domain.greenfield.errors``; greenfield.md §0)."""

from __future__ import annotations

import pytest

from xmrgate.domain.errors import Unprocessable, XmrgateError
from xmrgate.domain.greenfield.errors import (
    FieldError,
    error_body,
    missing_permission_body,
    not_found_body,
    unauthenticated_body,
    validation_body,
)


def test_a_field_error_is_one_of_ours_and_keeps_the_value() -> None:
    error = FieldError("checkout.paymentMethods[0]", "Invalid payment method", "BTC")
    assert isinstance(error, Unprocessable)
    assert isinstance(error, XmrgateError)
    assert (error.path, error.message, error.value) == (
        "checkout.paymentMethods[0]",
        "Invalid payment method",
        "BTC",
    )


def test_validation_body_is_a_list_of_path_and_message() -> None:
    body = validation_body([FieldError("amount", "too big", 1), FieldError("currency", "no")])
    assert body == [
        {"path": "amount", "message": "too big"},
        {"path": "currency", "message": "no"},
    ]


def test_error_body_without_a_code_is_generic() -> None:
    assert error_body(None, "boom") == {"code": "generic-error", "message": "boom"}
    assert error_body("", "boom")["code"] == "generic-error"
    assert error_body("store-disabled", "x") == {"code": "store-disabled", "message": "x"}


def test_the_401_and_403_bodies() -> None:
    assert unauthenticated_body()["code"] == "unauthenticated"
    assert unauthenticated_body("Unknown API key")["message"] == "Unknown API key"
    body = missing_permission_body("btcpay.store.canviewinvoices")
    assert body["code"] == "missing-permission"
    assert body["missingPermission"] == "btcpay.store.canviewinvoices"
    assert "btcpay.store.canviewinvoices" in body["message"]


@pytest.mark.parametrize(
    ("kind", "code"),
    [("invoice", "invoice-not-found"), ("webhook", "webhook-not-found")],
)
def test_not_found_codes(kind: str, code: str) -> None:
    assert not_found_body(kind)["code"] == code
    assert set(not_found_body(kind)) == {"code", "message"}


def test_not_found_of_an_unknown_kind_is_a_bug() -> None:
    with pytest.raises(KeyError):
        not_found_body("unicorn")
