"""``GET`` and ``POST /api-keys/authorize``: a shop plugin asks for a key (§1.A A1-A2).

- ``GET``: the query is checked first (``domain/greenfield/consent.parse_consent``: a
  redirect neither https nor loopback http, or an unknown permission, is a 400 page
  before any key is asked for); then step 1, the operator's key.
- ``POST`` (form-encoded, the query kept): from another site 403, too many from one
  client 429 (``web/limits.py``, as the refund and link pages), then the operator's key
  checked on every post (a configured key with ``admin``; else step 1 again, 401).
  ``step=key``: step 2, the store and the permissions in words, with a single-use token
  (``core/consent.py``). ``step=approve``: the token used up (replayed, expired or of
  another consent: 400, no key), a key of the chosen store made with exactly the
  permissions asked (``StoreAdmin.create_key``), and the page that posts ``apiKey``,
  ``userId`` and ``permissions[]`` (``name:storeId``) to the redirect. ``step=decline``:
  the token used up, no key.

Choices (docs/greenfield.md "Connecting a shop plugin"): consent needs an operator key,
so a gateway without configured keys refuses the page (403: anyone reaching it could
otherwise make keys); ``userId`` is the operator key's label (``key:1a2b3c4d``), which
tells the merchant which key approved. Neither key is ever logged.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse

from xmrgate.core.consent import Consents, MemoryConsentTokens, binding_of
from xmrgate.core.stores import StoreAdmin
from xmrgate.domain.api_keys import ApiKey, find_key
from xmrgate.domain.errors import XmrgateError
from xmrgate.domain.greenfield.consent import ConsentRefused, ConsentRequest, parse_consent
from xmrgate.domain.stores import Store
from xmrgate.web.consent_page.page import (
    CONSENT_PAGE,
    post_response,
    render_key_step,
    render_post,
    render_store_step,
)
from xmrgate.web.limits import PublicLimit
from xmrgate.web.public_page import form_field, receive_form, sentence
from xmrgate.web.route_table import add_routes

PATH = "/api-keys/authorize"
#: Posts per client (an IPv4 address, an IPv6 /64) in WINDOW seconds: an operator needs
#: two or three; ten leave room for a mistyped key, not for guessing one.
CLIENT_LIMIT = 10
WINDOW = 60.0
NOTHING_MADE = "No key was made"

log = logging.getLogger(__name__)
router = APIRouter()


def _refused(status: int, title: str, *paragraphs: str) -> HTMLResponse:
    return CONSENT_PAGE.message_page(status, title, *paragraphs)


def _consent(request: Request) -> ConsentRequest | HTMLResponse:
    """The checked query, or the 400 page saying what is wrong with it."""
    try:
        return parse_consent(parse_qsl(request.url.query, keep_blank_values=True))
    except ConsentRefused as exc:
        return _refused(
            400,
            "This request for a key cannot be approved",
            sentence(str(exc), "The request is not valid."),
            f"{NOTHING_MADE}. Ask the application's maker, or make a key on the dashboard.",
        )


def _no_operator_keys() -> HTMLResponse:
    return _refused(
        403,
        "Approval needs an operator key",
        "This gateway has no operator keys (--api-key), so nobody can prove here that "
        "they may give keys away.",
        f"{NOTHING_MADE}. Make a key for the plugin with 'xmrgate store key STORE "
        "--permission NAME', and paste it into the plugin.",
    )


def _operator(request: Request, presented: str | None) -> ApiKey | None:
    """The configured key with ``admin`` that was typed, or None (store keys never)."""
    keys: list[ApiKey] = request.app.state.stores.operator_keys
    if not presented or len(presented) > 200:
        return None
    key = find_key(keys, presented.strip())
    return key if key is not None and "admin" in key.scopes else None


async def _stores(request: Request, consent: ConsentRequest) -> list[Store]:
    """The stores a key may be made for: enabled ones, only the one the permissions
    name when they name one."""
    admin: StoreAdmin = request.app.state.store_admin
    found = [s for s in await admin.list() if s.enabled]
    return [s for s in found if consent.store is None or s.id == consent.store]


def _binding(key: ApiKey, consent: ConsentRequest) -> bytes:
    return binding_of(
        key.digest.hex(),
        consent.redirect,
        consent.application_name,
        consent.application_identifier or "",
        " ".join(consent.permissions),
    )


def _consents(request: Request) -> Consents:
    return Consents(request.app.state.consent_tokens)


@router.get(PATH, include_in_schema=False)
async def authorize(request: Request) -> HTMLResponse:
    """Step 1 of the consent, once the query is known to be sound."""
    consent = _consent(request)
    if isinstance(consent, HTMLResponse):
        return consent
    if not request.app.state.stores.operator_keys:
        return _no_operator_keys()
    return CONSENT_PAGE.response(render_key_step(consent), form=True)


@router.post(PATH, include_in_schema=False)
async def decide(request: Request) -> HTMLResponse:
    """Steps 2 and 3: the operator's key, then approve or decline."""
    consent = _consent(request)
    if isinstance(consent, HTMLResponse):
        return consent
    if not request.app.state.stores.operator_keys:
        return _no_operator_keys()
    body = await receive_form(
        CONSENT_PAGE,
        request,
        public_url=request.app.state.public_url,
        per_client=request.app.state.consent_limit,
        nothing=NOTHING_MADE,
        elsewhere="Open the approval page from the application again.",
    )
    if isinstance(body, HTMLResponse):
        return body

    def field(name: str) -> str:
        return form_field(request, body, name) or ""

    operator = _operator(request, field("operator_key"))
    if operator is None:
        html = render_key_step(
            consent, "This is not an operator key with the admin scope of this gateway."
        )
        return CONSENT_PAGE.response(html, 401, form=True)
    step = field("step")
    if step == "key":
        stores = await _stores(request, consent)
        if not stores:
            return _refused(
                409,
                "No store can take this key",
                "The store the application asks for does not exist or is disabled."
                if consent.store
                else "Every store is disabled.",
                f"{NOTHING_MADE}.",
            )
        token = await _consents(request).issue(_binding(operator, consent))
        html = render_store_step(consent, stores, field("operator_key").strip(), token)
        return CONSENT_PAGE.response(html, form=True)
    if step == "decline":
        await _consents(request).redeem(field("token"), _binding(operator, consent))
        log.info("consent: %s declined a key for %r", operator.label, consent.application_name)
        return _refused(
            200, "Declined", f"{NOTHING_MADE}. You may close this page.", "Nothing was sent."
        )
    if step == "approve":
        return await _approve(request, consent, operator, field("store"), field("token"))
    return _refused(400, "This form is not valid", f"{NOTHING_MADE}. Start again.")


async def _approve(
    request: Request, consent: ConsentRequest, operator: ApiKey, store_id: str, token: str
) -> HTMLResponse:
    """Use the token up, make the key, answer the page that posts it to the redirect."""
    allowed = {s.id: s for s in await _stores(request, consent)}
    store = allowed.get(store_id)
    if store is None:
        return _refused(400, "Pick one of the stores offered", f"{NOTHING_MADE}. Start again.")
    if not await _consents(request).redeem(token, _binding(operator, consent)):
        return _refused(
            400,
            "This approval was already used or has expired",
            f"{NOTHING_MADE} now. Start again from the application if it still needs a key.",
        )
    admin: StoreAdmin = request.app.state.store_admin
    try:
        key, secret = await admin.create_key(store.id, None, permissions=list(consent.permissions))
    except XmrgateError as exc:
        return _refused(409, "The key could not be made", sentence(str(exc), NOTHING_MADE))
    log.info(
        "consent: %s approved key %s of store %s for %r",
        operator.label,
        key.id,
        store.id,
        consent.application_name,
    )
    fields: list[tuple[str, str]] = [("apiKey", secret), ("userId", operator.label)]
    fields += [("permissions[]", f"{name}:{store.id}") for name in consent.permissions]
    return post_response(render_post(consent, store, fields), consent.redirect)


def install(app: FastAPI, *, client_limit: int = CLIENT_LIMIT) -> None:
    """Mount the page, with its limit per client (one per app: counted in the database
    when the app has a shared counter), and a token store in memory (one process); the
    runtime replaces it with the database's (``runtime/app.py``)."""
    app.state.consent_limit = PublicLimit("consent_client", client_limit, WINDOW)
    if getattr(app.state, "consent_tokens", None) is None:
        app.state.consent_tokens = MemoryConsentTokens()
    add_routes(app, router)
