"""Payment links: the merchant's links, and a payer's "Pay" on one.

One ``Links`` serves one store: its repository (``core/link_ports.py``) and its
``PaymentRequests``. Paying from a link makes an ordinary payment request of that store
through ``PaymentRequests.create`` (the pool, the wallet checks, the fiat conversion and
the URL guard all apply), which records the link.

A link is public, so ``pay`` never makes more than it must: the same browser reopening
the link goes back to its unpaid request (``reuse``), a link with ``max_uses`` makes at
most that many requests, and the requests it makes expire (``expires_in``, default 1
hour). ``max_uses`` is checked here on the link as read (a used-up link makes nothing),
and decided where the request is stored: the pool's ``take`` (or ``PaymentRepository.
create``) admits a link's request in the transaction that inserts it, the link's row
locked on PostgreSQL, so the count is exact across processes and hosts (a lock in this
process was not: 4 workers made 11 or 12 requests of a link of 10). The rate limits are
the page's (``web``), the pruning of expired unpaid requests the repository's.

Every check of the merchant's fields happens before anything is stored, and every check
of the payer's amount before a subaddress is taken.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields as dataclass_fields
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from xmrgate.core.link_ports import LinkRepository
from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests, Pricing
from xmrgate.core.ports import UrlGuard
from xmrgate.domain.addresses import looks_like_address
from xmrgate.domain.errors import AlreadyExists, InvalidInput, NotFound
from xmrgate.domain.fiat import CURRENCY_DECIMALS, Price, parse_currency, parse_price
from xmrgate.domain.invoice import MAX_EXPIRES_IN
from xmrgate.domain.links import (
    DEFAULT_REQUEST_LIFE,
    MAX_DESCRIPTION,
    MAX_TITLE,
    MIN_REQUEST_LIFE,
    SLUG,
    Link,
    LinkFields,
    LinkInactive,
    LinkUsedUp,
    check_slug,
    looks_like_link_id,
    new_link_id,
    new_slug,
    parse_xmr,
)
from xmrgate.domain.money import MAX_AMOUNT, piconero_to_xmr
from xmrgate.domain.records import PaymentRequest
from xmrgate.domain.stores import DEFAULT_STORE

#: ``GET /links?limit=``: at most this many links in one answer.
MAX_LIST = 1000
#: How often a slug nobody chose is drawn again when it is taken (32^10 slugs: never).
SLUG_TRIES = 3
#: What ``PATCH /links/{id}`` may change (the id and the slug stay).
CHANGEABLE = frozenset(f.name for f in dataclass_fields(LinkFields))
# The three kinds of amount: setting one in a PATCH clears the others unless given too.
_KINDS: Mapping[str, tuple[str, ...]] = {
    "amount": ("price", "min_amount", "currency", "min_price"),
    "price": ("amount", "min_amount", "currency", "min_price"),
    # An open amount's minimum is in XMR or in its currency, one at a time.
    "min_amount": ("amount", "price", "min_price"),
    "min_price": ("amount", "price", "min_amount"),
    "currency": ("amount", "price"),
}


def _now() -> datetime:
    return datetime.now(UTC)


class Links:
    """The payment links of one store, and paying from them."""

    def __init__(
        self,
        repo: LinkRepository,
        requests: PaymentRequests,
        url_guard: UrlGuard,
        *,
        store_id: str = DEFAULT_STORE,
        pricing: Pricing | None = None,
        currencies: Sequence[str] = (),
        rate_lock: int = 900,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._repo = repo
        self._requests = requests
        self._url_guard = url_guard
        self._store_id = store_id
        # Fiat prices: the rate book and --rate-currencies (empty: turned off).
        self._pricing = pricing
        self._currencies = tuple(currencies)
        self._rate_lock = rate_lock
        self._clock = clock

    @property
    def store_id(self) -> str:
        """The store whose links these are."""
        return self._store_id

    def default_expires_in(self, fiat: bool) -> int:
        """The life of a link's requests when the merchant names none: an hour, or the
        rate lock for a link priced in fiat (its requests expire when their rate does)."""
        return min(DEFAULT_REQUEST_LIFE, self._rate_lock) if fiat else DEFAULT_REQUEST_LIFE

    # ------------------------------------------------------------------ the merchant's

    async def create(self, fields: LinkFields, slug: str | None = None) -> Link:
        """A new link; ``slug`` as chosen (409 when any store has it) or drawn at random."""
        fields = await self._checked(fields)
        if slug is not None:
            return await self._repo.create(new_link_id(), check_slug(slug), fields, self._clock())
        for attempt in range(SLUG_TRIES):
            try:
                return await self._repo.create(new_link_id(), new_slug(), fields, self._clock())
            except AlreadyExists:
                if attempt == SLUG_TRIES - 1:
                    raise
        raise AssertionError("unreachable: the loop returns or raises")

    async def get(self, link_id: str) -> Link:
        """One link of this store with its counts; NotFound otherwise."""
        found = await self._repo.get(link_id) if looks_like_link_id(link_id) else None
        if found is None:
            raise NotFound("no such link")
        return found

    async def listing(self, limit: int = 100) -> list[Link]:
        """This store's links, newest first."""
        if not 1 <= limit <= MAX_LIST:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIST}")
        return await self._repo.listing(limit)

    async def update(self, link_id: str, changes: Mapping[str, Any]) -> Link:
        """Change the given fields only (PATCH), checked as at creation.

        Giving one kind of amount (``amount``, ``price``, or ``min_amount``/``currency``
        of an open amount) clears the other kinds unless the change names them too. A
        link turning to fiat without a new ``expires_in`` gets the rate lock when its
        life is longer.
        """
        unknown = sorted(set(changes) - CHANGEABLE)
        if unknown:
            raise InvalidInput(f"a link's {', '.join(unknown)} cannot be changed")
        current = await self.get(link_id)
        merged: dict[str, Any] = dict(changes)
        for name, clears in _KINDS.items():
            if merged.get(name) is not None:
                for other in clears:
                    merged.setdefault(other, None)
        for name in ("title", "description", "expires_in", "active"):
            if name in merged and merged[name] is None:
                raise InvalidInput(f"{name} cannot be null")
        new = replace(current.fields, **merged)
        fiat = new.price is not None or new.currency is not None
        if fiat and "expires_in" not in changes and new.expires_in > self._rate_lock:
            new = replace(new, expires_in=self._rate_lock)
        checked = await self._checked(new)
        updated = await self._repo.update(current.id, checked)
        if updated is None:
            raise NotFound("no such link")
        return updated

    async def delete(self, link_id: str) -> bool:
        """Delete a link that made no request (True); one that made requests is only
        made inactive (False), so that its requests keep their ``link``."""
        deleted = await self._repo.delete(link_id) if looks_like_link_id(link_id) else None
        if deleted is None:
            raise NotFound("no such link")
        return deleted

    async def _checked(self, fields: LinkFields) -> LinkFields:
        """``fields`` as stored (title trimmed, price and currency normalised), or
        InvalidInput naming the first problem; the URLs pass the SSRF guard."""
        title = fields.title.strip()
        if not 1 <= len(title) <= MAX_TITLE:
            raise InvalidInput(f"title must be 1 to {MAX_TITLE} characters")
        if len(fields.description) > MAX_DESCRIPTION:
            raise InvalidInput(f"description must be at most {MAX_DESCRIPTION} characters")
        if "\x00" in title or "\x00" in fields.description:
            raise InvalidInput("title and description must not contain NUL characters")
        if fields.amount is not None and fields.price is not None:
            raise InvalidInput("give one of amount, price, or an open amount, not several")
        fixed = fields.amount is not None or fields.price is not None
        if fixed and (
            fields.min_amount is not None
            or fields.currency is not None
            or fields.min_price is not None
        ):
            raise InvalidInput(
                "min_amount, min_price and currency are for an open amount (no amount and no price)"
            )
        for name, value in (("amount", fields.amount), ("min_amount", fields.min_amount)):
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= MAX_AMOUNT
            ):
                raise InvalidInput(f"{name} must be piconero between 1 and {MAX_AMOUNT}")
        price = None if fields.price is None else self._link_price(fields.price)
        currency = None if fields.currency is None else self._configured(fields.currency)
        min_price = None if fields.min_price is None else _min_price(fields, currency)
        fiat = price is not None or currency is not None
        life = fields.expires_in
        if isinstance(life, bool) or not isinstance(life, int):
            raise InvalidInput("expires_in must be a number of seconds")
        if not MIN_REQUEST_LIFE <= life <= MAX_EXPIRES_IN:
            raise InvalidInput(
                f"expires_in must be between {MIN_REQUEST_LIFE} and {MAX_EXPIRES_IN} seconds"
            )
        if fiat and life > self._rate_lock:
            raise InvalidInput(
                f"expires_in of a link priced in fiat is at most the rate lock "
                f"({self._rate_lock} s)"
            )
        if fields.max_uses is not None and (
            isinstance(fields.max_uses, bool)
            or not isinstance(fields.max_uses, int)
            or fields.max_uses < 1
        ):
            raise InvalidInput("max_uses must be at least 1 (or null: no limit)")
        callback_url = fields.callback_url or None
        return_url = fields.return_url or None
        if callback_url is not None:
            await self._url_guard.check(callback_url, "callback_url")
        if return_url is not None:
            await self._url_guard.check(return_url, "return_url")
        return replace(
            fields,
            title=title,
            price=price,
            currency=currency,
            min_price=min_price,
            callback_url=callback_url,
            return_url=return_url,
        )

    def _link_price(self, price: Mapping[str, str]) -> dict[str, str]:
        """A fixed fiat price as stored: ``{"amount": "5.00", "currency": "EUR"}``."""
        if not isinstance(price, Mapping):
            raise InvalidInput('price must be {"amount": "5.00", "currency": "EUR"}')
        parsed = parse_price(price.get("amount"), price.get("currency"))
        return {"amount": price["amount"], "currency": self._configured(parsed.currency)}

    def _configured(self, currency: str) -> str:
        """A fiat currency of --rate-currencies (upper-cased); InvalidInput otherwise."""
        code = parse_currency(currency)
        if not self._currencies:
            raise InvalidInput(
                "prices in fiat are turned off on this gateway (--rate-currencies is empty)"
            )
        if code not in self._currencies:
            raise InvalidInput(
                f"currency {code} is not configured here (--rate-currencies: "
                f"{', '.join(self._currencies)})"
            )
        return code

    # ------------------------------------------------------------------ the payer's

    async def find(self, slug: str) -> Link:
        """The link of ``/l/<slug>``, of any store (``link.store_id`` says which), active
        or not; NotFound for an unknown or malformed slug (never looked up)."""
        found = await self._repo.by_slug(slug) if SLUG.fullmatch(slug) else None
        if found is None:
            raise NotFound("no such link")
        return found

    async def open_request(self, link: Link, address: str) -> bool:
        """Is ``address`` a request ``link`` made that still waits for its money (unpaid,
        nothing received, not expired)? Exactly when ``pay`` answers it again."""
        if not looks_like_address(address):
            return False
        return await self._repo.open_request(link.id, address, self._clock())

    async def pay(
        self, link: Link, typed_amount: str | None, reuse: str | None
    ) -> tuple[PaymentRequest, bool]:
        """A payment request of this store made by ``link``, and whether it was reused.

        ``typed_amount`` is the payer's amount of an open link (XMR, or the link's fiat
        currency), ignored for a fixed amount or price. ``reuse`` is the address of a
        request the browser remembers: when this link made it and it still waits for its
        money (unpaid, nothing received, not expired), it is answered again (True) and
        nothing is made. Gone (410) for an inactive link, and for one that made its
        ``max_uses`` requests (a remembered open request is still answered then), also
        when the store finds so while inserting (a race lost to another payer).
        InvalidInput for a missing, malformed or too small amount: nothing is made.
        """
        if link.store_id != self._store_id:
            raise ValueError(
                f"link {link.id} is of store {link.store_id!r}, not {self._store_id!r}"
            )
        if not link.fields.active:
            raise LinkInactive("this link is not taking payments")
        if reuse is not None and await self.open_request(link, reuse):
            try:
                return await self._requests.get(reuse), True
            except NotFound:
                pass  # deleted since: make a new one
        new = self._new_request(link, typed_amount)
        # The store admits the request (active, under max_uses) in the transaction that
        # inserts it: LinkInactive or LinkUsedUp from there when another payer, in any
        # process, took the last use since ``link`` was read.
        return await self._requests.create(new), False

    def _new_request(self, link: Link, typed_amount: str | None) -> NewPaymentRequest:
        """The request ``link`` makes for this payer, its amount checked."""
        f = link.fields
        if f.max_uses is not None and link.uses >= f.max_uses:
            raise LinkUsedUp("this link has been used as often as it may be")
        base = NewPaymentRequest(
            amount=0,
            description=f.title,
            callback_url=f.callback_url,
            return_url=f.return_url,
            expires_in=f.expires_in,
            link_id=link.id,
        )
        if f.amount is not None:
            return replace(base, amount=f.amount)
        if f.price is not None:
            return replace(base, price=parse_price(f.price["amount"], f.price["currency"]))
        if typed_amount is None or not typed_amount.strip():
            raise InvalidInput("enter the amount to pay")
        if f.currency is None:
            amount = parse_xmr(typed_amount)
            if f.min_amount is not None and amount < f.min_amount:
                raise InvalidInput(
                    f"the amount must be at least {piconero_to_xmr(f.min_amount)} XMR"
                )
            return replace(base, amount=amount)
        price = _typed_price(typed_amount, f.currency)
        if f.min_price is not None and price.amount < Decimal(f.min_price):
            # Compared in the currency the payer typed: no rate, and no XMR on the page.
            raise InvalidInput(f"the amount must be at least {f.min_price} {f.currency}")
        if f.min_amount is not None:
            if self._pricing is None:
                raise InvalidInput(
                    "prices in fiat are turned off on this gateway (--rate-currencies is empty)"
                )
            amount, _quote = self._pricing.quote(price)
            if amount < f.min_amount:
                raise InvalidInput(
                    f"the amount must be at least {piconero_to_xmr(f.min_amount)} XMR "
                    f"({typed_amount.strip()} {f.currency} is {piconero_to_xmr(amount)} XMR)"
                )
        return replace(base, price=price)


def _min_price(fields: LinkFields, currency: str | None) -> str:
    """An open fiat link's minimum as stored: the currency's decimals written out
    ("5" in EUR is "5.00"), or InvalidInput when it is no such amount or has no
    currency, or comes with ``min_amount`` too."""
    if currency is None:
        raise InvalidInput("min_price is the minimum in the link's currency: give currency too")
    if fields.min_amount is not None:
        raise InvalidInput("give min_amount (XMR) or min_price (in currency), not both")
    try:
        minimum = parse_price(fields.min_price, currency).amount
    except InvalidInput as exc:
        raise InvalidInput(f"min_price: {exc.message}") from None
    return format(minimum.quantize(Decimal(1).scaleb(-CURRENCY_DECIMALS[currency])), "f")


def _typed_price(text: str, currency: str) -> Price:
    """The payer's amount in the link's fiat currency, or InvalidInput saying what is
    accepted (``parse_price``'s rules: plain digits, the currency's decimals)."""
    decimals = CURRENCY_DECIMALS.get(currency, 2)
    try:
        return parse_price(text.strip(), currency)
    except InvalidInput:
        example = "25" if decimals == 0 else "25." + "0" * decimals
        raise InvalidInput(
            f"the amount must be a number of {currency} such as {example}, with at most "
            f"{decimals} decimals and a point (not a comma) before them"
        ) from None
