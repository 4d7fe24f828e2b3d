"""Rendering of the consent page: pure functions from a consent to HTML and headers.

A public page (``web/public_page.py``: the checkout's stylesheet, a CSP of exactly its
inline blocks, never cached or framed). Two steps, each a plain form posted to the
page's own URL (the authorize query kept): the operator's key, then the store and
"Approve" or "Decline". Only the last page has a script: the form that posts the new key
to the plugin's redirect submits itself (BTCPay's ``PostRedirect``), the script allowed
by its hash, the form allowed to go to the redirect's origin and nowhere else; its
button does the same without the script.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from html import escape
from urllib.parse import urlsplit

from fastapi.responses import HTMLResponse

from xmrgate.domain.greenfield.consent import ConsentRequest
from xmrgate.domain.greenfield.permissions import describe
from xmrgate.domain.stores import Store
from xmrgate.web.checkout.page import csp_hash, security_headers
from xmrgate.web.form_origin import PUBLIC_FORM_REFERRER
from xmrgate.web.public_page import PublicPage

CONSENT_STYLE = (
    ".perms { margin: .25rem 0 1rem; padding-left: 1.25rem; }\n"
    ".perms li { margin: .25rem 0; }\n"
    ".field { display: block; font-weight: 600; margin: .75rem 0 .25rem; }\n"
    ".hint { color: var(--muted); font-size: .875rem; margin: .25rem 0 .5rem; }\n"
    ".consent-input {\n"
    "  display: block; width: 100%; min-height: 2.75rem; padding: .5rem .75rem;\n"
    "  border: 1px solid var(--line); border-radius: .5rem;\n"
    "  background: var(--code-bg); color: var(--text); font: inherit;\n"
    "}\n"
    ".actions { display: flex; gap: .75rem; margin-top: 1rem; }\n"
    ".actions .button { flex: 1; }\n"
    ".error { color: var(--accent); font-weight: 600; overflow-wrap: anywhere; }\n"
)
#: The one script of the flow: submit the form that carries the key to the redirect.
POST_SCRIPT = 'document.getElementById("post-redirect").submit();'

CONSENT_PAGE = PublicPage(
    package="xmrgate.web.consent_page",
    style=CONSENT_STYLE,
    main_id="consent",
    generic_heading="Connect an application",
)


def _permissions(request: ConsentRequest) -> str:
    return "\n".join(
        f'<li data-permission="{escape(name, quote=True)}">{escape(describe(name))}</li>'
        for name in request.permissions
    )


def _hidden(name: str, value: str) -> str:
    name, value = escape(name, quote=True), escape(value, quote=True)
    return f'<input type="hidden" name="{name}" value="{value}">'


def _render(request: ConsentRequest, step: str, fields: str, error: str | None) -> str:
    return CONSENT_PAGE.render(
        "consent.html",
        None,
        title="Connect " + escape(request.application_name),
        step=step,
        application=escape(request.application_name),
        redirect_host=escape(request.redirect_host),
        permissions=_permissions(request),
        error=f'<p class="error" id="error" role="alert">{escape(error)}</p>' if error else "",
        fields=fields,
    )


def render_key_step(request: ConsentRequest, error: str | None = None) -> str:
    """Step 1: who approves. The operator's key (a configured key with ``admin``)."""
    fields = "\n".join(
        [
            _hidden("step", "key"),
            '<label class="field" for="operator-key">Your operator API key</label>',
            '<p class="hint" id="key-hint">A key given to the gateway with --api-key that '
            "has the admin scope, as the dashboard asks. It is not sent to the application.</p>",
            '<input class="consent-input" id="operator-key" name="operator_key" '
            'type="password" required maxlength="200" autocomplete="current-password" '
            'aria-describedby="key-hint">',
            '<div class="actions"><button type="submit" class="button" id="next">'
            "Continue</button></div>",
        ]
    )
    return _render(request, "key", fields, error)


def _store_choice(stores: Sequence[Store]) -> str:
    if len(stores) == 1:
        only = stores[0]
        return (
            f'<p id="store-only">The key will belong to the store <strong>{escape(only.name)}'
            f"</strong> ({escape(only.id)}).</p>\n" + _hidden("store", only.id)
        )
    options = "\n".join(
        f'<option value="{escape(s.id, quote=True)}">{escape(s.name)} ({escape(s.id)})</option>'
        for s in stores
    )
    return (
        '<label class="field" for="store">The store the key belongs to</label>\n'
        f'<select class="consent-input" id="store" name="store" required>\n{options}\n</select>'
    )


def render_store_step(
    request: ConsentRequest, stores: Sequence[Store], operator_key: str, token: str
) -> str:
    """Step 2: the store (ONE), then "Approve" or "Decline". The operator's key rides
    along (checked again on this post) with the single-use token of this consent."""
    fields = "\n".join(
        [
            _hidden("operator_key", operator_key),
            _hidden("token", token),
            _store_choice(stores),
            '<div class="actions">'
            '<button type="submit" class="button" name="step" value="approve" id="approve">'
            "Approve</button>"
            '<button type="submit" class="button secondary" name="step" value="decline" '
            'id="decline">Decline</button></div>',
        ]
    )
    return _render(request, "store", fields, None)


def render_post(request: ConsentRequest, store: Store, fields: Sequence[tuple[str, str]]) -> str:
    """The page that posts ``fields`` (``apiKey``, ``userId``, ``permissions[]``...) to
    the redirect: by its script at once, or by its button."""
    html = CONSENT_PAGE.render(
        "post.html",
        None,
        title="Connecting " + escape(request.application_name),
        store=escape(store.name),
        redirect_host=escape(request.redirect_host),
        action=escape(request.redirect, quote=True),
        fields="\n".join(_hidden(name, value) for name, value in fields),
    )
    # After </main>, before </body>: the script runs once the form is parsed.
    return html.replace("</body>", f"<script>{POST_SCRIPT}</script>\n</body>", 1)


def form_target(redirect: str) -> str:
    """The CSP source of the redirect's origin (an IPv6 literal has no host-source
    syntax in CSP: then its scheme, the action being ours and fixed anyway)."""
    parts = urlsplit(redirect)
    try:
        literal = ipaddress.ip_address(parts.hostname or "")
    except ValueError:
        literal = None
    if isinstance(literal, ipaddress.IPv6Address):
        return f"{parts.scheme}:"
    return f"{parts.scheme}://{parts.netloc}"


def post_response(html: str, redirect: str) -> HTMLResponse:
    """The answer of ``render_post``: the public page's headers, with its script's hash
    and the redirect's origin as the only form target."""
    policy = CONSENT_PAGE.content_security_policy(form=True).replace(
        "form-action 'self'", f"form-action {form_target(redirect)}"
    )
    headers = security_headers(f"{policy}; script-src {csp_hash(POST_SCRIPT)}")
    headers["Referrer-Policy"] = PUBLIC_FORM_REFERRER
    return HTMLResponse(html, headers=headers)
