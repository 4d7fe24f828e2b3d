"""Rendering of a payment link's page: pure functions from a link to HTML and headers.

The page is the checkout's (``web/checkout/page.py``): the same stylesheet, read from
the checkout package and inlined, the store's name and accent (``Brand``), no foreign
asset. It has no script at all: "Pay" is a plain HTML form posted to the page's own
URL. The Content-Security-Policy allows exactly the inline style blocks, by their
hashes, and lets a form post only to the page's own origin (``form-action 'self'``, on
the form page alone; every other page has ``form-action 'none'``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from html import escape
from importlib.resources import files
from string import Template

from xmrgate.domain.links import Link
from xmrgate.domain.money import piconero_to_xmr
from xmrgate.web.checkout.page import Brand, assets, csp_hash

#: What the checkout's stylesheet lacks for the form: the field with its unit, the hint,
#: the error, the notice of an unpaid payment and a large "Pay".
LINK_STYLE = (
    ".pay-form { margin: 1.25rem 0 0; }\n"
    ".field { display: block; font-weight: 600; margin: 0 0 .25rem; }\n"
    ".hint { color: var(--muted); font-size: .875rem; margin: .75rem 0 0; }\n"
    ".amount-row { display: flex; align-items: center; gap: .5rem; margin: .25rem 0 .5rem; }\n"
    ".amount-input {\n"
    "  flex: 1; min-width: 0; min-height: 3rem; padding: .625rem .75rem;\n"
    "  border: 1px solid var(--line); border-radius: .5rem;\n"
    "  background: var(--code-bg); color: var(--text);\n"
    "  font: inherit; font-size: 1.25rem; font-weight: 600; font-variant-numeric: tabular-nums;\n"
    "}\n"
    ".amount-input[aria-invalid=true] { border: 2px solid var(--accent); }\n"
    ".min { color: var(--muted); font-size: .875rem; margin: 0 0 .75rem; }\n"
    ".pay { min-height: 3.25rem; font-size: 1.125rem; margin-top: .5rem; }\n"
    ".resume { margin: 1rem 0 0; padding: .75rem 1rem; border-radius: .75rem;\n"
    "  border: 1px solid var(--accent); background: var(--code-bg); }\n"
    ".resume a { font-weight: 600; padding: .625rem .25rem; }\n"
    ".error { color: var(--accent); font-weight: 600; overflow-wrap: anywhere; }\n"
)

#: The heading of a page that belongs to no known link (404, 403, 429, 413).
GENERIC_HEADING = "Monero payment"


@dataclass(frozen=True, slots=True)
class LinkAssets:
    """The page's templates, read once."""

    link: Template
    message: Template


def _read(name: str) -> str:
    # HTML parsers turn CRLF into LF before hashing; do the same (as the checkout does).
    text = (files("xmrgate.web.link_page") / "templates" / name).read_text(encoding="utf-8")
    return text.replace("\r\n", "\n")


@functools.cache
def link_assets() -> LinkAssets:
    """The templates from the package (cached after the first call)."""
    return LinkAssets(link=Template(_read("link.html")), message=Template(_read("message.html")))


def content_security_policy(brand: Brand | None = None, *, form: bool = False) -> str:
    """The CSP of a link's page: its inline styles by hash, no script, no framing."""
    brand_style = brand.style() if brand is not None else ""
    styles = [assets().style_hash, csp_hash(LINK_STYLE)]
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


def _common(brand: Brand | None) -> dict[str, str]:
    brand = brand or Brand()
    brand_style = brand.style()
    return {
        "style": assets().style,
        "link_style": LINK_STYLE,
        "brand_style": f"<style>{brand_style}</style>" if brand_style else "",
        "heading": escape(brand.name or GENERIC_HEADING),
    }


def kind_of(link: Link) -> str:
    """``fixed`` (an XMR amount), ``price`` (a fiat price) or ``open`` (the payer types)."""
    if link.fields.amount is not None:
        return "fixed"
    if link.fields.price is not None:
        return "price"
    return "open"


def open_unit(link: Link) -> str:
    """The unit the payer types an open amount in: the link's currency, else XMR."""
    return link.fields.currency or "XMR"


def _amount_block(link: Link, value: str, error: str | None) -> str:
    f = link.fields
    kind = kind_of(link)
    if kind == "fixed" and f.amount is not None:
        return (
            '<p class="label" id="amount-label">Amount</p>\n'
            f'<p class="big"><span id="amount">{escape(piconero_to_xmr(f.amount))}</span> '
            '<span class="unit">XMR</span></p>'
        )
    if kind == "price" and f.price is not None:
        return (
            '<p class="label" id="amount-label">Price</p>\n'
            f'<p class="big"><span id="amount">{escape(f.price.get("amount", ""))}</span> '
            f'<span class="unit">{escape(f.price.get("currency", ""))}</span></p>\n'
            '<p class="min" id="amount-note">Paid in XMR at the exchange rate when you '
            "press Pay.</p>"
        )
    unit = escape(open_unit(link))
    minimum = (
        f'<p class="min" id="amount-min">At least {escape(piconero_to_xmr(f.min_amount))} XMR.</p>'
        if f.min_amount
        else ""
    )
    error_html = (
        f'<p class="error" id="amount-error" role="alert">{escape(error)}</p>' if error else ""
    )
    described = " ".join(
        part
        for part, present in (("amount-error", bool(error)), ("amount-min", bool(minimum)))
        if present
    )
    return (
        f'<label class="field" for="amount">Amount in {unit}</label>\n'
        f"{error_html}\n"
        '<div class="amount-row">'
        f'<input class="amount-input" id="amount" name="amount" type="text" '
        f'inputmode="decimal" value="{escape(value, quote=True)}" required maxlength="40" '
        'autocomplete="off" autocapitalize="none" autocorrect="off" spellcheck="false"'
        + (f' aria-describedby="{described}"' if described else "")
        + (' aria-invalid="true"' if error else "")
        + f'> <span class="unit">{unit}</span></div>\n'
        f"{minimum}"
    )


def render_link_page(
    link: Link,
    brand: Brand | None = None,
    *,
    value: str = "",
    error: str | None = None,
    resume_url: str | None = None,
) -> str:
    """The page of an active link: title, description, amount (or its field), "Pay".

    ``value`` is what the payer typed (shown again with ``error`` after a refusal);
    ``resume_url`` is the checkout of this browser's unpaid request of this link, if any.
    Everything from the link and the payer is HTML-escaped.
    """
    f = link.fields
    description = (
        f'<p class="desc" id="description">{escape(f.description)}</p>'
        if f.description.strip()
        else ""
    )
    resume = (
        '<p class="resume" id="resume">You have an unpaid payment for this link: '
        f'<a id="resume-link" href="{escape(resume_url, quote=True)}">continue</a></p>'
        if resume_url
        else ""
    )
    return link_assets().link.substitute(
        _common(brand),
        title=escape(f.title),
        kind=kind_of(link),
        description=description,
        resume=resume,
        amount=_amount_block(link, value, error),
    )


def render_message(
    title: str, *paragraphs: str, brand: Brand | None = None, outcome: str = "refused"
) -> str:
    """A plain page: a title and a few paragraphs (escaped here), never a form."""
    return link_assets().message.substitute(
        _common(brand),
        title=escape(title),
        paragraphs="\n".join(f"<p>{escape(p)}</p>" for p in paragraphs),
        outcome=outcome,
    )
