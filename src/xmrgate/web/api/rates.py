"""``GET /rates``: the exchange rate fiat prices use, and what each source last said."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from xmrgate.domain.errors import InvalidInput
from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep

router = APIRouter()


@router.get("/rates", dependencies=[require("read")])
async def get_rates(
    gateway: GatewayDep,
    currency: Annotated[str | None, Query(min_length=1, max_length=8)] = None,
) -> dict[str, Any]:
    """The rate in use for ``currency`` (its age, the sources used and why the others
    were not); without ``currency``, every configured currency's under ``currencies``.
    Read from memory: never waits on a source."""
    book = gateway.rates
    if book is None:
        raise InvalidInput(
            "prices in fiat are turned off on this gateway (--rate-currencies is empty)"
        )
    if currency is not None:
        return book.snapshot(currency)
    return {"currencies": [book.snapshot(code) for code in book.currencies]}
