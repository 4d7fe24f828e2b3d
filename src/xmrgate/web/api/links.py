"""Payment links: the merchant's ``/links`` API.

Thin adapters over ``core/links.py``; the payer's page is ``/l/<slug>``. Writing takes
the ``receive`` scope (a link makes payment requests), reading takes ``read``. Each key
acts on its store's links only: another store's link is 404.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from xmrgate.domain.invoice import MAX_EXPIRES_IN
from xmrgate.domain.links import (
    MAX_DESCRIPTION,
    MAX_TITLE,
    MIN_REQUEST_LIFE,
    Link,
    LinkFields,
    link_json,
)
from xmrgate.domain.money import MAX_AMOUNT
from xmrgate.web.api.schemas import FiatPrice, HttpUrlText, NoNul
from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep
from xmrgate.web.public_url import public_base

router = APIRouter(tags=["links"])

Title = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TITLE), NoNul]
Description = Annotated[StrictStr, Field(max_length=MAX_DESCRIPTION), NoNul]
Piconero = Annotated[StrictInt, Field(gt=0, le=MAX_AMOUNT)]
Currency = Annotated[StrictStr, Field(pattern=r"^[A-Za-z]{3}$")]
# An open fiat amount's minimum, "5.00" (the currency's decimals are checked by the use case).
MinPrice = Annotated[StrictStr, Field(min_length=1, max_length=32, pattern=r"^[0-9]+(\.[0-9]+)?$")]
Life = Annotated[StrictInt, Field(ge=MIN_REQUEST_LIFE, le=MAX_EXPIRES_IN)]
Uses = Annotated[StrictInt, Field(ge=1, le=2**31 - 1)]


class LinkCreate(BaseModel):
    """``POST /links``: one of ``amount`` (piconero), ``price`` (fiat) or neither (an
    open amount the payer types: in XMR, at least ``min_amount`` piconero; or in
    ``currency``, a fiat currency, at least ``min_price`` of it, e.g. "5.00")."""

    model_config = ConfigDict(extra="forbid")

    slug: Annotated[StrictStr | None, Field(min_length=3, max_length=64)] = None
    title: Title
    description: Description = ""
    amount: Piconero | None = None
    price: FiatPrice | None = None
    min_amount: Piconero | None = None
    currency: Currency | None = None
    min_price: MinPrice | None = None
    callback_url: HttpUrlText = None
    return_url: HttpUrlText = None
    expires_in: Annotated[
        Life | None,
        Field(
            description="seconds the requests it makes wait for their money; default 3600 "
            "(for a fiat price: the rate lock)"
        ),
    ] = None
    max_uses: Uses | None = None
    active: StrictBool = True


class LinkPatch(BaseModel):
    """``PATCH /links/{id}``: only the fields given change (null clears an optional one;
    giving one kind of amount clears the others)."""

    model_config = ConfigDict(extra="forbid")

    title: Title | None = None
    description: Description | None = None
    amount: Piconero | None = None
    price: FiatPrice | None = None
    min_amount: Piconero | None = None
    currency: Currency | None = None
    min_price: MinPrice | None = None
    callback_url: HttpUrlText = None
    return_url: HttpUrlText = None
    expires_in: Life | None = None
    max_uses: Uses | None = None
    active: StrictBool | None = None


def link_url(request: Request, slug: str) -> str:
    """``<public url>/l/<slug>``: ``--public-url`` when set, else this request's base."""
    return f"{public_base(request)}/l/{slug}"


def _price(price: FiatPrice | None) -> dict[str, str] | None:
    return None if price is None else {"amount": price.amount, "currency": price.currency}


def _one(request: Request, link: Link) -> dict[str, Any]:
    return link_json(link, link_url(request, link.slug))


@router.post("/links", dependencies=[require("receive")])
async def create_link(body: LinkCreate, request: Request, gateway: GatewayDep) -> dict[str, Any]:
    """Make a payment link of this store; ``url`` is its public page."""
    links = gateway.links
    fiat = body.price is not None or body.currency is not None
    fields = LinkFields(
        title=body.title,
        description=body.description,
        amount=body.amount,
        price=_price(body.price),
        min_amount=body.min_amount,
        currency=body.currency,
        min_price=body.min_price,
        callback_url=body.callback_url,
        return_url=body.return_url,
        expires_in=body.expires_in
        if body.expires_in is not None
        else links.default_expires_in(fiat),
        max_uses=body.max_uses,
        active=body.active,
    )
    return _one(request, await links.create(fields, body.slug))


@router.get("/links", dependencies=[require("read")])
async def list_links(
    request: Request,
    gateway: GatewayDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """This store's links, newest first, with what each made and received."""
    found = await gateway.links.listing(limit)
    return {"links": [_one(request, link) for link in found]}


@router.get("/links/{link_id}", dependencies=[require("read")])
async def get_link(link_id: str, request: Request, gateway: GatewayDep) -> dict[str, Any]:
    """One link with its counts: requests made (``uses``), paid, piconero received."""
    return _one(request, await gateway.links.get(link_id))


@router.patch("/links/{link_id}", dependencies=[require("receive")])
async def update_link(
    link_id: str, body: LinkPatch, request: Request, gateway: GatewayDep
) -> dict[str, Any]:
    """Change the fields given, checked as at creation; the slug stays."""
    changes: dict[str, Any] = {}
    for name in body.model_fields_set:
        changes[name] = _price(body.price) if name == "price" else getattr(body, name)
    return _one(request, await gateway.links.update(link_id, changes))


@router.delete("/links/{link_id}", dependencies=[require("receive")])
async def delete_link(link_id: str, gateway: GatewayDep) -> dict[str, Any]:
    """Delete a link that made no request; one that did is only turned off (its
    requests keep their ``link``): ``{"deleted": false, "active": false}``."""
    if await gateway.links.delete(link_id):
        return {"deleted": True}
    return {"deleted": False, "active": False}
