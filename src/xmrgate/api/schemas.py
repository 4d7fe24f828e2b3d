"""Request bodies and their validation. Amounts are strict integers of piconero."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr

# Monero amounts are uint64 in the wallet; our columns are signed 64-bit.
MAX_AMOUNT = 2**63 - 1
MAX_DESCRIPTION = 1024
MAX_URL = 2048
MAX_DESTINATIONS = 16
TX_HASH = re.compile(r"^[0-9a-fA-F]{64}$")


def _no_control_chars(value: str | None) -> str | None:
    # NUL cannot be stored in PostgreSQL text, and no description or URL needs it.
    if value is not None and "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


NoNul = AfterValidator(_no_control_chars)


def _http_url(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    _no_control_chars(value)
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    return value


HttpUrlText = Annotated[StrictStr | None, Field(max_length=MAX_URL), AfterValidator(_http_url)]


class ReceiveRequest(BaseModel):
    """Body of ``POST /receive``."""

    model_config = ConfigDict(extra="ignore")

    amount: Annotated[StrictInt, Field(ge=0, le=MAX_AMOUNT)]
    description: Annotated[StrictStr | None, Field(max_length=MAX_DESCRIPTION), NoNul] = None
    callback_url: HttpUrlText = None
    return_url: HttpUrlText = None


class Destination(BaseModel):
    """One recipient of a payout."""

    model_config = ConfigDict(extra="ignore")

    amount: Annotated[StrictInt, Field(gt=0, le=MAX_AMOUNT)]
    address: Annotated[StrictStr, Field(min_length=1, max_length=256), NoNul]


class TransferRequest(BaseModel):
    """Body of ``POST /transfer``."""

    model_config = ConfigDict(extra="ignore")

    destinations: Annotated[list[Destination], Field(min_length=1, max_length=MAX_DESTINATIONS)]


BASE58 = re.compile(r"^[1-9A-HJ-NP-Za-km-z]{1,128}$")


def looks_like_address(value: str) -> bool:
    """Cheap shape check before a lookup: base58 and not absurdly long."""
    return bool(BASE58.match(value))
