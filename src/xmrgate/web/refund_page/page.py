"""Rendering of the refund claim page: pure functions from a refund to HTML and headers.

The page is the checkout's (``web/checkout/page.py``): the same stylesheet, read from
the checkout package and inlined, the store's name and accent (``Brand``), no foreign
asset. It has no script at all: the claim is a plain HTML form. The
Content-Security-Policy allows exactly the inline style blocks, by their hashes, and
lets a form post only to the page's own origin (``form-action 'self'``, on the form page
alone; every other page has ``form-action 'none'``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from html import escape
from importlib.resources import files
from string import Template

from xmrgate.domain.money import piconero_to_xmr
from xmrgate.domain.refunds import Refund, RefundStatus, rfc3339
from xmrgate.web.checkout.page import Brand, assets, csp_hash

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

#: The heading of a page that belongs to no known refund (404, 403, 429, 413).
GENERIC_HEADING = "Monero refund"


@dataclass(frozen=True, slots=True)
class RefundAssets:
    """The page's templates, read once."""

    claim: Template
    message: Template


def _read(name: str) -> str:
    # HTML parsers turn CRLF into LF before hashing; do the same (as the checkout does).
    text = (files("xmrgate.web.refund_page") / "templates" / name).read_text(encoding="utf-8")
    return text.replace("\r\n", "\n")


@functools.cache
def refund_assets() -> RefundAssets:
    """The templates from the package (cached after the first call)."""
    return RefundAssets(
        claim=Template(_read("claim.html")), message=Template(_read("message.html"))
    )


def content_security_policy(brand: Brand | None = None, *, form: bool = False) -> str:
    """The CSP of a refund page: its inline styles by hash, no script, no framing."""
    brand_style = brand.style() if brand is not None else ""
    styles = [assets().style_hash, csp_hash(REFUND_STYLE)]
    if brand_style:
        styles.append(csp_hash(brand_style))
    return "; ".join(
        [
            "default-src 'none'",
            f"style-src {' '.join(styles)}",
            "img-src data:",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'self'" if form else "form-action 'none'",
        ]
    )


def expiry_text(value: datetime) -> str:
    """When a claim link ends, in UTC to the minute: ``2026-11-30 12:00 UTC``."""
    return value.strftime("%Y-%m-%d %H:%M UTC")


def _common(brand: Brand | None) -> dict[str, str]:
    brand = brand or Brand()
    brand_style = brand.style()
    return {
        "style": assets().style,
        "refund_style": REFUND_STYLE,
        "brand_style": f"<style>{brand_style}</style>" if brand_style else "",
        "heading": escape(brand.name or GENERIC_HEADING),
    }


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
    return refund_assets().claim.substitute(
        _common(brand),
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


def render_message(
    title: str,
    *paragraphs: str,
    brand: Brand | None = None,
    outcome: str = "refused",
    code: str | None = None,
) -> str:
    """A plain page: a title and a few paragraphs (escaped here), never a form.

    ``code`` (an address) is shown in a ``<code>`` block after the first paragraph.
    """
    parts = [f"<p>{escape(p)}</p>" for p in paragraphs]
    if code is not None:
        parts.insert(1, f'<code id="claim-address">{escape(code)}</code>')
    return refund_assets().message.substitute(
        _common(brand), title=escape(title), paragraphs="\n".join(parts), outcome=outcome
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
    return render_message(
        "Refund claimed",
        f"The refund of {amount} XMR goes to this address:",
        next_step,
        "You can close this page. This link cannot be used again.",
        brand=brand,
        outcome="claimed",
        code=address,
    )
