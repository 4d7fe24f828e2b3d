"""Request bodies and their validation. Amounts are strict integers of piconero."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    model_validator,
)

from xmrgate.domain.callback_urls import MAX_URL, parse_url
from xmrgate.domain.invoice import MAX_EXPIRES_IN
from xmrgate.domain.money import MAX_AMOUNT

MAX_DESCRIPTION = 1024
MAX_DESTINATIONS = 16
TX_HASH = re.compile(r"^[0-9a-fA-F]{64}$")


def _no_control_chars(value: str | None) -> str | None:
    # NUL cannot be stored in PostgreSQL text, and no description or URL needs it.
    if value is not None and "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


NoNul = AfterValidator(_no_control_chars)


def _http_url(value: str | None) -> str | None:
    """An http(s) URL parsed by the parser that delivers callbacks (empty means none).

    InvalidUrl is a ValueError, so pydantic reports it as a 400 naming the field; where
    the host points (the SSRF policy) is checked later by the destination check.
    """
    if value is None or value == "":
        return None
    parse_url(value)
    return value


HttpUrlText = Annotated[StrictStr | None, Field(max_length=MAX_URL), AfterValidator(_http_url)]


class FiatPrice(BaseModel):
    """A price in fiat, ``{"amount": "19.99", "currency": "EUR"}`` (``domain/fiat.py``
    checks the currency's decimals; the patterns only keep the schema honest)."""

    model_config = ConfigDict(extra="ignore")

    amount: Annotated[
        StrictStr,
        Field(
            min_length=1,
            max_length=32,
            pattern=r"^[0-9]+(\.[0-9]+)?$",
            description="a positive decimal string, at most the currency's decimals",
        ),
    ]
    currency: Annotated[
        StrictStr,
        Field(pattern=r"^[A-Za-z]{3}$", description="ISO 4217 code, one of --rate-currencies"),
    ]


class ReceiveRequest(BaseModel):
    """Body of ``POST /receive``."""

    model_config = ConfigDict(extra="ignore")

    # Exactly one of the two: piconero, or a fiat price converted at a fresh rate.
    amount: Annotated[StrictInt | None, Field(ge=0, le=MAX_AMOUNT)] = None
    price: FiatPrice | None = None
    description: Annotated[StrictStr | None, Field(max_length=MAX_DESCRIPTION), NoNul] = None
    callback_url: HttpUrlText = None
    return_url: HttpUrlText = None
    # Invoices (docs/invoices.md): both optional, absent means today's behaviour.
    expires_in: Annotated[
        StrictInt | None,
        Field(
            ge=1,
            le=MAX_EXPIRES_IN,
            description="seconds until the request expires (status expired, or paid_late "
            "for money that comes after); absent: never",
        ),
    ] = None
    underpay_tolerance: Annotated[
        StrictInt | None,
        Field(
            ge=0,
            le=MAX_AMOUNT,
            description="piconero the payment may fall short of amount and still be paid "
            "and complete (at most amount); default 0",
        ),
    ] = None

    @model_validator(mode="after")
    def _one_amount(self) -> ReceiveRequest:
        if (self.amount is None) == (self.price is None):
            raise ValueError("give exactly one of amount (piconero) and price (fiat)")
        return self

    @model_validator(mode="after")
    def _tolerance_within_amount(self) -> ReceiveRequest:
        # A fiat price's amount is known once converted: the use case checks it then.
        amount = self.amount
        if amount is not None and (self.underpay_tolerance or 0) > amount:
            raise ValueError("underpay_tolerance must not be greater than amount")
        return self

    def fingerprint(self) -> dict[str, object]:
        """What the Idempotency-Key is bound to; unset new fields leave it as before."""
        dumped = self.model_dump()
        for name in ("expires_in", "underpay_tolerance", "price"):
            if dumped[name] is None:
                del dumped[name]
        return dumped


class Destination(BaseModel):
    """One recipient of a payout."""

    model_config = ConfigDict(extra="ignore")

    amount: Annotated[StrictInt, Field(gt=0, le=MAX_AMOUNT)]
    address: Annotated[StrictStr, Field(min_length=1, max_length=256), NoNul]


class TransferRequest(BaseModel):
    """Body of ``POST /transfer``."""

    model_config = ConfigDict(extra="ignore")

    destinations: Annotated[list[Destination], Field(min_length=1, max_length=MAX_DESTINATIONS)]
