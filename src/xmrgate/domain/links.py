"""Payment links: a public page that makes a payment request of its store when paid from.

A link has a public ``slug`` (``/l/<slug>``), a title and a description, and one of: a
fixed ``amount`` in piconero, a fixed fiat ``price``, or an open amount the payer types
(in XMR, at least ``min_amount`` piconero; or in ``currency`` when that names a fiat
currency, at least ``min_price`` of it). Each
"Pay" makes an ordinary payment request of the link's store, which records the link
(``link`` in its JSON). The requests a link makes expire (``expires_in``, default 1 hour)
and, unpaid, are pruned later (``docs/links.md``).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from xmrgate.domain.errors import Gone, InvalidInput
from xmrgate.domain.money import DECIMALS, MAX_AMOUNT, PICONERO_PER_XMR

#: ``/l/<slug>``: lowercase letters, digits and dashes, 3 to 64, not starting with a dash.
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{2,63}$")
ID_PREFIX = "ln_"
MAX_TITLE = 200
MAX_DESCRIPTION = 2000
#: How long a request made by a link waits for its money unless the link says otherwise.
DEFAULT_REQUEST_LIFE = 3600
#: The shortest life of a request made by a link: time enough to open a wallet and pay.
MIN_REQUEST_LIFE = 60
_LINK_ID = re.compile(r"^ln_[0-9a-f]{16}$")
_XMR = re.compile(r"^([0-9]{1,8})(?:\.([0-9]{1,12}))?$")


def looks_like_link_id(value: str) -> bool:
    """``ln_`` and 16 lowercase hex characters (:func:`new_link_id`)."""
    return bool(_LINK_ID.fullmatch(value))


def parse_xmr(text: str) -> int:
    """An amount of XMR typed by a payer (``"0.5"``, ``"12"``, ``"0.000000000001"``) in
    piconero: plain digits with at most one point and at most 12 decimals, no sign,
    exponent, grouping or comma, above zero and within what a request can hold.
    Surrounding spaces are ignored. Raises ``InvalidInput`` saying what is accepted.

    Exact (integer arithmetic on the digits): ``float("0.3")`` is not 0.3.
    """
    match = _XMR.fullmatch(text.strip())
    if match is None:
        raise InvalidInput(
            f"the amount must be a number of XMR such as 0.25, with at most {DECIMALS} "
            "decimals and a point (not a comma) before them"
        )
    whole, fraction = match.group(1), match.group(2) or ""
    piconero = int(whole) * PICONERO_PER_XMR + int(fraction.ljust(DECIMALS, "0"))
    if piconero <= 0:
        raise InvalidInput("the amount must be above zero")
    if piconero > MAX_AMOUNT:
        raise InvalidInput("the amount is more XMR than a payment request can hold")
    return piconero


class LinkInactive(Gone):
    """The link was turned off by the merchant (410)."""


class LinkUsedUp(Gone):
    """The link made its ``max_uses`` requests (410)."""


def check_slug(slug: str) -> str:
    """A slug as given, or InvalidInput saying what a slug may be."""
    if not SLUG.fullmatch(slug):
        raise InvalidInput(
            "slug must be 3 to 64 lowercase letters, digits and dashes, not starting with a dash"
        )
    return slug


def new_link_id() -> str:
    """A link's id: ``ln_`` and 16 hex characters."""
    return ID_PREFIX + secrets.token_hex(8)


def new_slug() -> str:
    """A slug nobody chose: 10 random lowercase characters and digits."""
    alphabet = "abcdefghijkmnpqrstuvwxyz23456789"
    return "".join(secrets.choice(alphabet) for _ in range(10))


@dataclass(frozen=True, slots=True)
class LinkFields:
    """What the merchant sets on a link (``POST /links``, ``PATCH /links/{id}``)."""

    title: str
    description: str = ""
    amount: int | None = None
    # A fixed fiat price: {"amount": "5.00", "currency": "EUR"}.
    price: dict[str, str] | None = None
    # An open amount: the payer types it, at least this (piconero)...
    min_amount: int | None = None
    # ... in this fiat currency instead of XMR, when set...
    currency: str | None = None
    # ... and then at least this much of it: exact decimal text ("5.00"), shown and
    # checked in the currency itself (``min_amount`` would be XMR at each Pay's rate).
    min_price: str | None = None
    callback_url: str | None = None
    return_url: str | None = None
    expires_in: int = DEFAULT_REQUEST_LIFE
    max_uses: int | None = None
    active: bool = True

    @property
    def open_amount(self) -> bool:
        """The payer types the amount."""
        return self.amount is None and self.price is None


@dataclass(frozen=True, slots=True)
class Link:
    """A payment link as stored, with what it has made and received."""

    id: str
    store_id: str
    slug: str
    fields: LinkFields
    created_at: datetime
    # Payment requests it made, and how many of those were paid.
    uses: int = 0
    paid: int = 0
    # Piconero received by its requests (all transfers seen, as GET /receive counts).
    received: int = 0


def link_json(link: Link, url: str) -> dict[str, Any]:
    """The API's view of a link (``url``: its public page)."""
    f = link.fields
    body: dict[str, Any] = {
        "id": link.id,
        "slug": link.slug,
        "url": url,
        "title": f.title,
        "description": f.description,
        "amount": f.amount,
        "min_amount": f.min_amount,
        "currency": f.currency,
        "min_price": f.min_price,
        "callback_url": f.callback_url,
        "return_url": f.return_url,
        "expires_in": f.expires_in,
        "max_uses": f.max_uses,
        "active": f.active,
        "created_at": link.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "uses": link.uses,
        "paid": link.paid,
        "received": link.received,
    }
    if f.price is not None:
        body["price"] = dict(f.price)
    return body
