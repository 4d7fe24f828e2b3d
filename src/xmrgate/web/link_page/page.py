"""Rendering of a payment link's page: pure functions from a link to HTML and headers.

The page is a public page (``web/public_page.py``): the checkout's stylesheet and the
store's brand, no script at all ("Pay" is a plain HTML form posted to the page's own
URL), and a CSP of exactly its inline style blocks. Here: what is the link page's own,
its style block and its ``<main>`` (``templates/link.html``).
"""

from __future__ import annotations

from html import escape

from xmrgate.domain.links import Link
from xmrgate.domain.money import piconero_to_xmr
from xmrgate.web.checkout.page import Brand
from xmrgate.web.public_page import PublicPage

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

#: The link page: its templates, its style block, its ``<main>`` and its heading when
#: no link is known (404, 403, 429, 413). The frame, the message page and the CSP are
#: the public pages' (``web/public_page.py``).
LINK_PAGE = PublicPage(
    package="xmrgate.web.link_page",
    style=LINK_STYLE,
    main_id="link",
    generic_heading="Monero payment",
)


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


def minimum_text(link: Link) -> str | None:
    """An open amount's minimum as the payer reads it: "5.00 EUR" in the link's currency
    (beside a field in EUR), "0.01 XMR" for a minimum in piconero; None without one."""
    f = link.fields
    if f.min_price is not None and f.currency is not None:
        return f"{f.min_price} {f.currency}"
    if f.min_amount:
        return f"{piconero_to_xmr(f.min_amount)} XMR"
    return None


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
    least = minimum_text(link)
    minimum = f'<p class="min" id="amount-min">At least {escape(least)}.</p>' if least else ""
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
    return LINK_PAGE.render(
        "link.html",
        brand,
        title=escape(f.title),
        kind=kind_of(link),
        description=description,
        resume=resume,
        amount=_amount_block(link, value, error),
    )
