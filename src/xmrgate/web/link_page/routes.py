"""The public page of a payment link: ``GET`` and ``POST /l/{slug}``.

- ``GET /l/{slug}``: the store's name and colour, the link's title and description, its
  fixed amount (XMR, or a fiat price) or, for an open amount, a field ``amount`` (XMR,
  or the link's currency), and "Pay": a plain HTML form posted to the same URL.
- ``POST /l/{slug}`` (form-encoded, at most 4 KiB): makes a payment request of the
  link's store (``Links.pay``) and answers 303 See Other to its checkout, ``/pay/<address>``
  (under ``--public-url`` when set). A bad amount is the form again with the reason
  (400); an unknown link 404, an inactive or used-up one 410, the wallet, the address
  pool or the exchange rates unavailable 503 (``Retry-After``): plain pages.

A link is public, so "Pay" must not drain the address pool nor fill the database:

- The answer sets a cookie ``xg_link_<link id>=<address>`` (HttpOnly, SameSite=Lax,
  Path of this page, for the life of the request): the same browser pressing "Pay"
  again goes back to that request while it waits for its money, and the page offers
  to continue it.
- "Pay" is limited per client (an IPv4 address, an IPv6 /64) and per link (429,
  ``Retry-After``); going back to the browser's own request does not count per link.
  On PostgreSQL the limits are counted in the database, for every worker and host
  (``web/limits.py``); when they cannot be counted, "Pay" is refused (503).
- A form posted from another site (``web/form_origin.py``: ``Sec-Fetch-Site`` when the
  browser sends it, else ``Origin``) is refused (403) before anything is read or made.

Every page forbids framing, is never cached, and sends no referrer to another site
(``Referrer-Policy: same-origin``, as every public form: ``web/form_origin.py``). The
link is found with the public Gateway (its repository looks across stores by slug) and
paid with its own store's Gateway.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal, InvalidOperation

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from xmrgate.core.gateway import Gateway
from xmrgate.core.links import Links
from xmrgate.domain.addresses import looks_like_address
from xmrgate.domain.errors import (
    Conflict,
    Gone,
    InvalidInput,
    NotFound,
    RatesUnavailable,
    WalletUnavailable,
    XmrgateError,
)
from xmrgate.domain.links import SLUG, Link, LinkUsedUp, parse_xmr
from xmrgate.domain.records import PaymentRequest
from xmrgate.web.checkout.page import Brand, security_headers
from xmrgate.web.checkout.view import store_brand
from xmrgate.web.deps import PublicGatewayDep
from xmrgate.web.limits import PublicLimit
from xmrgate.web.link_page.page import LINK_PAGE, kind_of, render_link_page
from xmrgate.web.public_page import (
    form_field,
    receive_form,
    sentence,
    store_gateway,
    utc_now,
)
from xmrgate.web.public_url import checkout_path, configured, is_https, public_prefix

#: "Pay" per client (an IPv4 address, an IPv6 /64) in WINDOW seconds. A person pays a
#: link once or twice; ten a minute leaves room for mistyped amounts and a shared NAT,
#: while one machine alone cannot take more than ten subaddresses a minute.
CLIENT_LIMIT = 10
#: New requests per link in WINDOW seconds, whatever the clients. Each takes a subaddress
#: (the pool refills in the background) and a row (the housekeeping prunes it once it
#: expired unpaid, ``--link-prune-after``): 60 a minute is more than a donation page or
#: a shop's link sees, and bounds a flood from many addresses to one new request a
#: second per link (the client limit alone would not: a flood has many addresses).
LINK_LIMIT = 60
WINDOW = 60.0
#: How long a client is asked to wait when the wallet, the pool or the rates are down.
RETRY_UNAVAILABLE = 60
#: The cookie that remembers this browser's request of a link: ``xg_link_<link id>``.
COOKIE_PREFIX = "xg_link_"
#: How every refusal of "Pay" begins: no request was made, nothing can be owed.
NOTHING_MADE = "Nothing was made"
_COOKIE_NAME = re.compile(r"^[A-Za-z0-9_]{1,40}$")

log = logging.getLogger(__name__)


# Every answer is a public page's (``web/public_page.py``): its headers, a CSP of exactly
# the styles served, Retry-After; ``_message`` the plain page of a refusal or failure.
_page = LINK_PAGE.response
_message = LINK_PAGE.message_page


def not_found_page() -> HTMLResponse:
    """The one page of an unknown or malformed slug (404)."""
    return _message(
        404,
        "This payment link is not valid",
        "There is no payment at this link. It may be mistyped or cut short: open it "
        "exactly as you were given it.",
    )


def gone_page(brand: Brand | None, used_up: bool) -> HTMLResponse:
    """An inactive or used-up link (410): nothing can be paid here any more."""
    text = (
        "This link has been used as often as it may be."
        if used_up
        else "This link is not taking payments any more."
    )
    return _message(
        410,
        "This payment link is closed",
        text,
        "Nothing was charged. If you meant to pay, contact the one who gave you the link.",
        brand=brand,
    )


def too_many_page(wait: int, brand: Brand | None = None) -> HTMLResponse:
    """429: too many "Pay" from this client, or for this link, in the last minute."""
    return LINK_PAGE.too_many(wait, NOTHING_MADE, brand)


def _failure(exc: XmrgateError, brand: Brand | None = None) -> HTMLResponse:
    """The page of an error while finding or paying a link (never internal details)."""
    if isinstance(exc, NotFound):
        return not_found_page()
    if isinstance(exc, Gone):
        return gone_page(brand, used_up=isinstance(exc, LinkUsedUp))
    if isinstance(exc, Conflict):  # the store is disabled
        return _message(
            409,
            "Payments are paused",
            "The shop is not taking payments at the moment. Please try again later.",
            brand=brand,
        )
    if isinstance(exc, WalletUnavailable | RatesUnavailable):
        reason = (
            "The exchange rate cannot be read right now."
            if isinstance(exc, RatesUnavailable)
            else "The shop's wallet cannot make a payment address right now."
        )
        return _message(
            503,
            "Please try again in a minute",
            f"{reason} Nothing was charged: go back and press Pay again in a minute.",
            brand=brand,
            retry_after=RETRY_UNAVAILABLE,
        )
    return _message(
        503,
        "Temporarily unavailable",
        "This payment page cannot be used right now. Please reload it in a minute.",
        brand=brand,
        retry_after=30,
    )


def _closed(link: Link) -> bool | None:
    """None for a link that takes payments; else whether it is used up (not inactive)."""
    f = link.fields
    if not f.active:
        return False
    if f.max_uses is not None and link.uses >= f.max_uses:
        return True
    return None


def amount_field(request: Request, body: bytes) -> str | None:
    """The form's ``amount`` (the first one); None when absent or not such a form."""
    return form_field(request, body, "amount")


def cookie_name(link: Link) -> str:
    """``xg_link_<link id>``: one cookie per link, only ever sent to this link's page."""
    return COOKIE_PREFIX + link.id


def cookie_path(request: Request, slug: str) -> str:
    """The path the browser sees this page at: ``/l/<slug>``, under ``--public-url``'s
    path (a gateway behind a proxy under a prefix) or the ASGI root path."""
    return f"{public_prefix(request)}/l/{slug}"


def remembered(request: Request, link: Link) -> str | None:
    """The address this browser's cookie names for ``link``, when it looks like one."""
    name = cookie_name(link)
    if not _COOKIE_NAME.fullmatch(name):
        return None
    value = request.cookies.get(name)
    return value if value and looks_like_address(value) else None


async def still_open(links: Links, link: Link, address: str, now: datetime) -> bool:
    """Is ``address`` a request ``link`` made that still waits for its money? Exactly the
    condition under which ``Links.pay`` answers it again (``reuse``) instead of making one.
    """
    return await links.open_request(link, address)


def same_amount(link: Link, typed: str, made: PaymentRequest) -> bool:
    """Does the payer's ``typed`` amount name what ``made`` asks (XMR, or the link's
    fiat currency)? A malformed one does not (the use case then says why)."""
    try:
        if link.fields.currency is None:
            return parse_xmr(typed) == made.amount
        return made.price is not None and Decimal(made.price.amount) == Decimal(typed.strip())
    except (InvalidInput, InvalidOperation, ValueError):
        return False


async def count_made(limit: PublicLimit, request: Request, key: str) -> None:
    """Count a request already made: a failure to count is logged, never the answer
    (the payer's request exists and the cookie must lead back to it)."""
    try:
        await limit.hit(request, key)
    except XmrgateError:
        log.warning("a link's request could not be counted in its limit", exc_info=True)


def build_router(
    *,
    client_limit: int = CLIENT_LIMIT,
    link_limit: int = LINK_LIMIT,
    window: float = WINDOW,
    now: Callable[[], datetime] = utc_now,
) -> APIRouter:
    """The link page's routes, with their own limiters (one set per application)."""
    router = APIRouter(tags=["link page"])
    per_client = PublicLimit("link_client", client_limit, window)
    per_link = PublicLimit("link", link_limit, window)

    async def find(gateway: Gateway, slug: str) -> Link:
        if not SLUG.fullmatch(slug):
            raise NotFound("no such link")
        return await gateway.links.find(slug)

    async def resume_url(request: Request, link: Link) -> str | None:
        """The checkout of this browser's unpaid request of ``link``, if it has one."""
        address = remembered(request, link)
        if address is None:
            return None
        try:
            links = store_gateway(request, link.store_id).links
            is_open = await still_open(links, link, address, now())
        except XmrgateError:
            return None
        return checkout_path(request, address) if is_open else None

    @router.get("/l/{slug:path}", response_class=HTMLResponse, include_in_schema=False)
    async def link_page(slug: str, request: Request, gateway: PublicGatewayDep) -> HTMLResponse:
        """An open link's page with "Pay"; a plain page (4xx) for any other."""
        try:
            link = await find(gateway, slug)
        except XmrgateError as exc:
            return _failure(exc)
        brand = store_brand(request, link.store_id)
        resume = await resume_url(request, link)
        closed = _closed(link)
        if closed is not None and not (closed and resume):
            # A used-up link still leads this browser back to its own unpaid request.
            return gone_page(brand, used_up=closed)
        return _page(render_link_page(link, brand, resume_url=resume), brand=brand, form=True)

    @router.post("/l/{slug:path}", include_in_schema=False)
    async def pay_link(slug: str, request: Request, gateway: PublicGatewayDep) -> Response:
        """Make (or find again) this browser's payment request and go to its checkout."""
        body = await receive_form(
            LINK_PAGE,
            request,
            public_url=configured(request),
            per_client=per_client,
            nothing=NOTHING_MADE,
            elsewhere="Nothing was made. Open the payment link itself and press Pay there.",
        )
        if isinstance(body, HTMLResponse):
            return body
        try:
            link = await find(gateway, slug)
        except XmrgateError as exc:
            return _failure(exc)
        brand = store_brand(request, link.store_id)
        typed = amount_field(request, body) if kind_of(link) == "open" else None
        try:
            store = store_gateway(request, link.store_id)
            links = store.links
            reuse = remembered(request, link)
            going_back = reuse is not None and await still_open(links, link, reuse, now())
            retyped = going_back and reuse is not None and bool(typed and typed.strip())
            # An open amount typed anew: the same amount goes back to the request, another
            # one is a new request (never the old amount when the payer asked another).
            if retyped and not same_amount(
                link, typed or "", await store.payment_requests.get(reuse or "")
            ):
                reuse, going_back = None, False
            if not going_back:
                if kind_of(link) == "open" and not (typed or "").strip():
                    raise InvalidInput("enter the amount to pay")
                try:
                    wait = await per_link.hit(request, link.id)
                except XmrgateError:
                    # Not counted, not made (fail closed): the database is failing.
                    log.warning("a link's limit could not be counted", exc_info=True)
                    return LINK_PAGE.uncounted(NOTHING_MADE, brand)
                if wait:
                    return too_many_page(wait, brand)
            made, reused = await links.pay(link, typed, reuse if going_back else None)
            if going_back and not reused:
                # Paid or expired between the two reads: a new request after all, counted.
                await count_made(per_link, request, link.id)
        except InvalidInput as exc:
            # A missing, malformed or too small amount: the form again, with the reason.
            return _page(
                render_link_page(
                    link,
                    brand,
                    value=typed or "",
                    error=sentence(exc.message, "This amount cannot be paid."),
                ),
                400,
                brand=brand,
                form=True,
            )
        except XmrgateError as exc:
            return _failure(exc, brand)
        answer = RedirectResponse(
            checkout_path(request, made.address), status_code=303, headers=security_headers()
        )
        answer.set_cookie(
            cookie_name(link),
            made.address,
            max_age=link.fields.expires_in,
            path=cookie_path(request, link.slug),
            secure=is_https(request),
            httponly=True,
            samesite="lax",
        )
        return answer

    return router
