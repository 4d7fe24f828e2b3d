"""The customer's refund claim page: ``GET`` and ``POST /refund/{token}``.

- ``GET /refund/{token}``: an open refund's page (the shop, the amount, the reason, the
  expiry) with a plain HTML form asking for a Monero address (field ``address``).
- ``POST /refund/{token}`` (form-encoded, at most 4 KiB): the claim. 200 names the
  address and what happens next; a refused address is the form again with the reason
  (400); claimed already 409, expired or withdrawn 410, unknown 404, the wallet unable
  to check the address now 503 (``Retry-After``). Each of those is a plain page,
  never a form, and never shows the claimed address.

Hostile input: a malformed token takes the unknown token's path (a lookup of a decoy
token, the same 404 page); a form posted from another origin (``Origin`` not this
page's, or ``Sec-Fetch-Site: cross-site``) is refused (403) before anything is read;
claims are limited per client address and per token (429, ``Retry-After``; counted in
the database on PostgreSQL, for every worker and host, and refused with 503 when they
cannot be counted: ``web/limits.py``); every page
forbids framing and referrers (the token is in the URL) and is never cached.

The refund is found with the public Gateway (its repository looks across stores by the
token's digest) and claimed with its own store's Gateway.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from xmrgate.core.gateway import Gateway
from xmrgate.domain.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    WalletUnavailable,
    XmrgateError,
)
from xmrgate.domain.refunds import (
    Refund,
    RefundGone,
    RefundStateConflict,
    RefundStatus,
    looks_like_token,
    token_digest,
)
from xmrgate.web.checkout.page import Brand
from xmrgate.web.checkout.view import store_brand
from xmrgate.web.deps import PublicGatewayDep
from xmrgate.web.limits import PublicLimit
from xmrgate.web.public_page import (
    form_field,
    receive_form,
    sentence,
    store_gateway,
    utc_now,
)
from xmrgate.web.refund_page.page import REFUND_PAGE, render_claim_form, render_claimed

#: Claims per client address, and per token, in WINDOW seconds.
CLIENT_LIMIT = 10
TOKEN_LIMIT = 5
WINDOW = 60.0
#: A well-formed token no refund has (looked up in a malformed token's place, so that
#: both take the same path); 32 characters of the token alphabet, never issued.
DECOY_TOKEN = "0" * 32


# Every answer is a public page's (``web/public_page.py``): its headers, a CSP of exactly
# the styles served, Retry-After; ``_message`` the plain page of a refusal or failure.
_page = REFUND_PAGE.response
_message = REFUND_PAGE.message_page


def not_found_page() -> HTMLResponse:
    """The one page of an unknown, malformed or withdrawn-from-the-database token."""
    return _message(
        404,
        "This refund link is not valid",
        "There is no refund at this link. It may be mistyped or cut short: open it "
        "exactly as the shop sent it.",
        "If you think this is wrong, contact the shop.",
    )


def claimed_page(brand: Brand | None) -> HTMLResponse:
    """A refund claimed already (or being sent, or sent): never the address, never a form."""
    return _message(
        409,
        "This refund was claimed already",
        "A Monero address was given for this refund, and it cannot be changed here.",
        "If you claimed it, the shop sends it to the address you gave. If you did not, "
        "contact the shop.",
        brand=brand,
    )


def gone_page(title: str, text: str, brand: Brand | None) -> HTMLResponse:
    """An expired or withdrawn refund (410)."""
    return _message(410, title, text, brand=brand)


def _refused_for_state(refund: Refund, brand: Brand | None, now: datetime) -> HTMLResponse | None:
    """The plain page of a refund that cannot be claimed now; None for an open one."""
    status = refund.shown_status(now)
    if status is RefundStatus.OPEN:
        return None
    if status is RefundStatus.EXPIRED:
        return gone_page(
            "This refund link has expired",
            "The time to claim this refund has run out. Ask the shop for a new link.",
            brand,
        )
    if status is RefundStatus.CANCELLED:
        return gone_page(
            "This refund was withdrawn",
            "The shop withdrew this refund. Contact the shop if you have questions.",
            brand,
        )
    return claimed_page(brand)


def _failure(exc: XmrgateError, brand: Brand | None = None) -> HTMLResponse:
    """The page of an error while finding or claiming a refund (never internal details)."""
    if isinstance(exc, NotFound):
        return not_found_page()
    if isinstance(exc, RefundGone):
        text = exc.message[:1].upper() + exc.message[1:] + "."
        return gone_page("This refund link is no longer valid", text, brand)
    if isinstance(exc, RefundStateConflict):
        return claimed_page(brand)
    if isinstance(exc, Conflict):  # the store is disabled
        return _message(
            409,
            "Refunds cannot be claimed right now",
            "The shop is not taking refund claims at the moment. Please contact the shop.",
            brand=brand,
        )
    if isinstance(exc, WalletUnavailable):
        return _message(
            503,
            "Please try again in a minute",
            "The shop's wallet cannot check your address right now. Nothing was claimed: "
            "go back and send the form again in a minute.",
            brand=brand,
            retry_after=60,
        )
    return _message(
        503,
        "Temporarily unavailable",
        "The refund page cannot be used right now. Please reload it in a minute.",
        brand=brand,
        retry_after=30,
    )


def address_field(request: Request, body: bytes) -> str | None:
    """The form's ``address`` (the first one); None when the body is not such a form."""
    return form_field(request, body, "address")


async def find_refund(gateway: Gateway, token: str) -> Refund:
    """The refund the link names; NotFound (one path for unknown and malformed tokens)."""
    wellformed = looks_like_token(token)
    refund = await gateway.refunds.find_claim(token if wellformed else DECOY_TOKEN)
    if not wellformed:
        raise NotFound("this refund link is not valid")
    return refund


def build_router(
    *,
    client_limit: int = CLIENT_LIMIT,
    token_limit: int = TOKEN_LIMIT,
    window: float = WINDOW,
    now: Callable[[], datetime] = utc_now,
) -> APIRouter:
    """The claim page's routes, with their own limiters (one set per application)."""
    router = APIRouter(tags=["refund page"])
    per_client = PublicLimit("refund_client", client_limit, window)
    per_token = PublicLimit("refund_token", token_limit, window)

    @router.get("/refund/{token:path}", response_class=HTMLResponse, include_in_schema=False)
    async def refund_page(token: str, request: Request, gateway: PublicGatewayDep) -> HTMLResponse:
        """An open refund's claim form; a plain page (4xx) for any other."""
        try:
            refund = await find_refund(gateway, token)
        except XmrgateError as exc:
            return _failure(exc)
        brand = store_brand(request, refund.store_id)
        refused = _refused_for_state(refund, brand, now())
        if refused is not None:
            return refused
        return _page(render_claim_form(refund, brand), brand=brand, form=True)

    @router.post("/refund/{token:path}", response_class=HTMLResponse, include_in_schema=False)
    async def claim_refund(token: str, request: Request, gateway: PublicGatewayDep) -> HTMLResponse:
        """The customer's address for the refund: claimed once, or the reason it is not."""
        body = await receive_form(
            REFUND_PAGE,
            request,
            public_url=getattr(request.app.state, "public_url", None),
            per_client=per_client,
            nothing="Nothing was claimed",
            elsewhere="Nothing was claimed. Open the refund link the shop sent you and claim "
            "the refund on that page.",
            # Per token only once the client's own limit passed (a flood from one client
            # does not lock the customer out of their refund).
            then=lambda: per_token.hit(request, token_digest(token)),
        )
        if isinstance(body, HTMLResponse):
            return body
        try:
            refund = await find_refund(gateway, token)
        except XmrgateError as exc:
            return _failure(exc)
        brand = store_brand(request, refund.store_id)
        refused = _refused_for_state(refund, brand, now())
        if refused is not None:
            return refused
        address = address_field(request, body)
        if address is None or not address.strip():
            return _page(
                render_claim_form(
                    refund,
                    brand,
                    value=address or "",
                    error="Enter your Monero address: copy it from your wallet.",
                ),
                400,
                brand=brand,
                form=True,
            )
        try:
            refunds = store_gateway(request, refund.store_id).refunds
            claimed = await refunds.claim(refund.id, address)
        except InvalidInput as exc:
            # Raised only after the refund was found open: the form again, with the reason.
            return _page(
                render_claim_form(
                    refund,
                    brand,
                    value=address,
                    error=sentence(exc.message, "This address cannot be used."),
                ),
                400,
                brand=brand,
                form=True,
            )
        except XmrgateError as exc:
            return _failure(exc, brand)
        return _page(render_claimed(claimed, brand), brand=brand)

    return router
