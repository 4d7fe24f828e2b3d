"""Rendering of the refund claim page: pure functions from a refund to HTML and headers.

The page is a public page (``web/public_page.py``): the checkout's stylesheet and the
store's brand, no script at all (the claim is a plain HTML form), and a CSP of exactly
its inline style blocks. Here: what is the claim page's own, its style block, its
``<main>`` (``templates/claim.html``) and the answer to a claim.
"""

from __future__ import annotations

from datetime import datetime
from html import escape

from xmrgate.domain.money import piconero_to_xmr
from xmrgate.domain.refunds import Refund, RefundStatus, rfc3339
from xmrgate.web.checkout.page import Brand
from xmrgate.web.public_page import PublicPage

#: What the checkout's stylesheet lacks for a form: the field, its hint and its error.
REFUND_STYLE = (
    ".claim { margin: 1.25rem 0 0; }\n"
    ".field { display: block; font-weight: 600; margin: 0 0 .25rem; }\n"
    ".hint, .pico, .expiry { color: var(--muted); font-size: .875rem; }\n"
    ".pico { margin: -.75rem 0 .75rem; font-variant-numeric: tabular-nums; }\n"
    ".address-input {\n"
    "  display: block; width: 100%; min-height: 2.75rem; margin: .5rem 0 .75rem;\n"
    "  padding: .625rem .75rem; border: 1px solid var(--line); border-radius: .5rem;\n"
    "  background: var(--code-bg); color: var(--text);\n"
    '  font: .9375rem/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;\n'
    "}\n"
    ".address-input[aria-invalid=true] { border: 2px solid var(--accent); }\n"
    ".error { color: var(--accent); font-weight: 600; overflow-wrap: anywhere; }\n"
    "[data-outcome=claimed] h2 { color: var(--ok); }\n"
)

#: The claim page's templates (``templates/claim.html``), style, ``<main id="refund">``
#: and heading when no refund is known; the rest is ``web/public_page.py``'s.
REFUND_PAGE = PublicPage("xmrgate.web.refund_page", REFUND_STYLE, "refund", "Monero refund")


def expiry_text(value: datetime) -> str:
    """When a claim link ends, in UTC to the minute: ``2026-11-30 12:00 UTC``."""
    return value.strftime("%Y-%m-%d %H:%M UTC")


def render_claim_form(
    refund: Refund, brand: Brand | None = None, *, value: str = "", error: str | None = None
) -> str:
    """The claim form of an open refund: shop, amount, reason, expiry, the address field.

    ``value`` is what the customer typed (shown again with ``error`` after a refusal).
    Everything from the refund and the customer is HTML-escaped.
    """
    amount_xmr = piconero_to_xmr(refund.amount)
    reason = (
        f'<p class="desc" id="reason">{escape(refund.reason)}</p>' if refund.reason.strip() else ""
    )
    error_html = (
        f'<p class="error" id="address-error" role="alert">{escape(error)}</p>' if error else ""
    )
    return REFUND_PAGE.render(
        "claim.html",
        brand,
        title=escape(f"Refund of {amount_xmr} XMR"),
        reason=reason,
        amount_xmr=escape(amount_xmr),
        amount_piconero=str(refund.amount),
        expires_iso=rfc3339(refund.expires_at) or "",
        expires_text=escape(expiry_text(refund.expires_at)),
        error=error_html,
        value=escape(value, quote=True),
        described_by="address-error address-hint" if error else "address-hint",
        invalid=' aria-invalid="true"' if error else "",
    )


def render_claimed(refund: Refund, brand: Brand | None = None) -> str:
    """The answer to a successful claim: where the refund goes and what happens next."""
    amount = piconero_to_xmr(refund.amount)
    address = refund.claim_address or ""
    sent = refund.status in (RefundStatus.SENT, RefundStatus.CONFIRMED)
    next_step = (
        "The shop has sent it: it appears in your wallet within minutes, and can be spent "
        "once the transaction is confirmed (about 20 minutes)."
        if sent
        else "What happens next: the shop sends the refund to this address. You will see it "
        "in your wallet once the transaction is on the Monero network; it can be spent "
        "once confirmed (about 20 minutes)."
    )
    return REFUND_PAGE.render_message(
        "Refund claimed",
        f"The refund of {amount} XMR goes to this address:",
        next_step,
        "You can close this page. This link cannot be used again.",
        brand=brand,
        outcome="claimed",
        code=address,
    )
