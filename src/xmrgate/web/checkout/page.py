"""Rendering of the checkout page: pure functions from stored state to HTML and headers.

The CSS and JS live in ``static/`` and are inlined into the page, so one response
carries everything (no CDN, no fonts: it works offline on a LAN). The
Content-Security-Policy allows exactly those two inline blocks by their SHA-256
hashes instead of ``'unsafe-inline'``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext
from html import escape
from importlib.resources import files
from string import Template
from urllib.parse import quote, urlsplit

from xmrgate.domain.checkout_state import REQUIRED_CONFIRMATIONS, CheckoutStatus
from xmrgate.domain.fiat import CURRENCY_DECIMALS, Quote
from xmrgate.domain.money import piconero_to_xmr
from xmrgate.domain.payloads import rfc3339
from xmrgate.domain.playground_rate import (
    PLAYGROUND_RATE_NOTE,
    PLAYGROUND_RATE_SOURCE,
    uses_playground_rate,
)
from xmrgate.domain.stores import ACCENT
from xmrgate.web.checkout.qr import payment_uri, qr_svg

# Without JavaScript the page still tells the truth if it reloads now and then.
NOSCRIPT_REFRESH_SECONDS = 15


@dataclass(frozen=True, slots=True)
class Assets:
    """The package files the page is made of, read once."""

    page: Template
    not_found: Template
    style: str
    script: str

    @property
    def style_hash(self) -> str:
        """CSP source expression of the inline ``<style>``."""
        return csp_hash(self.style)

    @property
    def script_hash(self) -> str:
        """CSP source expression of the inline ``<script>``."""
        return csp_hash(self.script)


def _read(folder: str, name: str) -> str:
    # HTML parsers turn CRLF into LF before hashing; do the same so the hashes match.
    text = (files("xmrgate.web.checkout") / folder / name).read_text(encoding="utf-8")
    return text.replace("\r\n", "\n")


@functools.cache
def assets() -> Assets:
    """Templates, CSS and JS from the package (cached after the first call)."""
    return Assets(
        page=Template(_read("templates", "page.html")),
        not_found=Template(_read("templates", "not_found.html")),
        style=_read("static", "checkout.css"),
        script=_read("static", "checkout.js"),
    )


def csp_hash(text: str) -> str:
    """``'sha256-…'`` of an inline block, as Content-Security-Policy spells it."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def origin_of(url: str | None) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, else None."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True, slots=True)
class Brand:
    """A store's name and accent colour on its checkout pages (``docs/stores.md``)."""

    name: str | None = None
    accent: str | None = None

    def heading(self) -> str:
        """The page's heading: the store's name, else the generic one."""
        return self.name or "Monero payment"

    def style(self) -> str:
        """The inline ``<style>`` body that sets the accent ('' without one).

        The accent is checked again here (it goes into CSS): only ``#rrggbb``. Its text
        colour is black or white, whichever is more legible on it.
        """
        if self.accent is None or ACCENT.fullmatch(self.accent) is None:
            return ""
        red, green, blue = (int(self.accent[i : i + 2], 16) for i in (1, 3, 5))
        text = "#18181b" if 0.299 * red + 0.587 * green + 0.114 * blue > 150 else "#fff"
        return f":root{{--accent:{self.accent};--accent-text:{text}}}"


def content_security_policy(
    *, with_script: bool, public_url: str | None = None, brand: Brand | None = None
) -> str:
    """The page's CSP: nothing but its own inline CSS/JS and polls to its own origin."""
    a = assets()
    brand_style = brand.style() if brand is not None else ""
    styles = a.style_hash + (f" {csp_hash(brand_style)}" if brand_style else "")
    directives = [
        "default-src 'none'",
        f"style-src {styles}",
        "img-src data:",
        "frame-ancestors 'none'",
    ]
    if with_script:
        connect = " ".join(s for s in ("'self'", origin_of(public_url)) if s)
        directives += [f"script-src {a.script_hash}", f"connect-src {connect}"]
    directives += ["base-uri 'none'", "form-action 'none'"]
    return "; ".join(directives)


def security_headers(csp: str | None = None) -> dict[str, str]:
    """Headers of every checkout answer; ``csp`` for HTML ones."""
    headers = {
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        # No shop page may frame the checkout (clickjacking): old browsers read this one.
        "X-Frame-Options": "DENY",
    }
    if csp:
        headers["Content-Security-Policy"] = csp
    return headers


def checkout_urls(address: str, public_url: str | None = None) -> tuple[str, str]:
    """URLs of ``status.json`` and ``qr.svg`` as the page at ``/pay/{address}`` uses them.

    Relative by default (``<address>/status.json`` resolves against ``/pay/<address>``),
    so the page works behind a reverse proxy under any path prefix; absolute under
    ``public_url`` when that is set.
    """
    segment = quote(address, safe="")
    base = f"{public_url.rstrip('/')}/pay/{segment}" if public_url else segment
    return f"{base}/status.json", f"{base}/qr.svg"


def current_uri(address: str, amount: int, description: str, status: CheckoutStatus) -> str:
    """The payment URI for what is still to pay: the rest after a partial payment."""
    due_now = status.due if status.state == "seen" and status.due > 0 else amount
    return payment_uri(address, due_now, description)


def countdown_text(seconds: int) -> str:
    """Time left as the page shows it: ``M:SS``, ``H:MM:SS`` or ``D d HH:MM:SS``.

    ``static/checkout.js`` formats its countdown the same way.
    """
    days, rest = divmod(max(seconds, 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours:02}:{minutes:02}:{secs:02}"
    if hours:
        return f"{hours}:{minutes:02}:{secs:02}"
    return f"{minutes}:{secs:02}"


def _return_link(return_url: str | None) -> str:
    if not return_url or origin_of(return_url) is None:
        return ""
    return (
        f'<p class="back"><a class="button wide" id="return-link" href="{escape(return_url)}"'
        ' target="_top" rel="noreferrer">Back to the shop</a></p>'
    )


def rate_text(quote: Quote) -> str:
    """The quote's rate (fiat per XMR) to the currency's minor units: ``150.12``.

    The stored rate may carry more digits than a customer can use (a median of two
    answers: ``150.125``); the page shows the exact one on hover. A rate that is not a
    number (a hand-edited row) is shown as stored rather than breaking the page.
    """
    decimals = CURRENCY_DECIMALS.get(quote.currency, 2)
    try:
        with localcontext() as ctx:
            ctx.prec = 100  # room for the 40 digits a source may send, and the decimals
            rate = Decimal(quote.rate).quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_EVEN)
    except (InvalidOperation, ValueError):
        return quote.rate
    return format(rate, "f") if rate.is_finite() else quote.rate


def lock_text(expires_at: float) -> str:
    """When the rate lock ends, as the page says it without its script: UTC, to the minute.

    ``static/checkout.js`` rewrites it in the browser's own time zone.
    """
    return datetime.fromtimestamp(expires_at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def price_html(quote: Quote | None, expires_at: float | None) -> str:
    """The fiat price beside the XMR amount and the rate that made it ('' without one).

    The amount is shown as the client wrote it (``Quote.amount`` is the validated
    string, "19.90" keeps its zero) followed by the currency code. A fiat-priced request
    expires when its rate lock does, so the request's expiry is the lock's end.
    """
    if quote is None:
        return ""
    currency = escape(quote.currency)
    lock = ""
    if expires_at is not None:
        iso = rfc3339(datetime.fromtimestamp(expires_at, UTC))
        lock = (
            f', locked until <time id="price-lock" datetime="{iso}">'
            f"{escape(lock_text(expires_at))}</time>"
        )
    exact = escape(f"1 XMR = {quote.rate} {quote.currency}", quote=True)
    # ``xmrgate dev``'s made-up rate: the page must not pass it off as the market's.
    playground = (
        f'\n<span class="rate" id="price-source">A {PLAYGROUND_RATE_NOTE} '
        f"({PLAYGROUND_RATE_SOURCE})</span>"
        if uses_playground_rate(quote.sources)
        else ""
    )
    return (
        f'\n<p class="price" id="price"><span class="fiat" id="price-amount">'
        f"{escape(quote.amount)} {currency}</span>\n"
        f'<span class="rate" id="price-rate">Rate 1 XMR = '
        f'<span title="{exact}">{escape(rate_text(quote))}</span> {currency}{lock}</span>'
        f"{playground}</p>"
    )


def render_checkout_page(
    *,
    address: str,
    amount: int,
    description: str,
    return_url: str | None,
    status: CheckoutStatus,
    public_url: str | None = None,
    brand: Brand | None = None,
    price: Quote | None = None,
) -> str:
    """The whole checkout page (HTML with inline CSS, JS and QR code SVG).

    Every value from the payment request is HTML-escaped; the state shown first is
    ``status``, then the page polls ``status.json``. ``price`` is the quote of a
    request priced in fiat: the page then shows that price beside the XMR amount.
    """
    a = assets()
    status_url, qr_url = checkout_urls(address, public_url)
    uri = current_uri(address, amount, description, status)
    amount_xmr = piconero_to_xmr(amount) if amount > 0 else "Any amount"
    title = f"Pay {amount_xmr} XMR" if amount > 0 else "Pay with Monero"
    if price is not None:
        title += f" ({price.amount} {price.currency})"
    qr = qr_svg(uri, title="Payment QR code")
    noscript = (
        ""
        if status.state == "paid"
        else f'<noscript><meta http-equiv="refresh" content="{NOSCRIPT_REFRESH_SECONDS}">'
        "</noscript>"
    )
    brand = brand or Brand()
    brand_style = brand.style()
    return a.page.substitute(
        heading=escape(brand.heading()),
        brand_style=f"<style>{brand_style}</style>" if brand_style else "",
        title=escape(title),
        noscript=noscript,
        style=a.style,
        script=a.script,
        state=status.state,
        status=status.status.value,
        overpaid_flag="yes" if status.overpaid > 0 else "no",
        overpaid_xmr=piconero_to_xmr(status.overpaid),
        received_flag="yes" if status.received > 0 else "no",
        seconds_left="" if status.seconds_left is None else str(status.seconds_left),
        countdown_hidden=" hidden" if status.seconds_left is None else "",
        countdown=countdown_text(status.seconds_left or 0),
        due_flag="yes" if status.due > 0 else "no",
        due_xmr=piconero_to_xmr(status.due),
        status_url=escape(status_url),
        qr_url=escape(qr_url),
        description=f'<p class="desc">{escape(description)}</p>' if description else "",
        amount_xmr=escape(amount_xmr),
        amount_unit="XMR" if amount > 0 else "",
        price=price_html(price, status.expires_at),
        qr=qr,
        uri=escape(uri),
        address=escape(address),
        received_xmr=piconero_to_xmr(status.received),
        confirmations=min(status.confirmations, REQUIRED_CONFIRMATIONS),
        required=REQUIRED_CONFIRMATIONS,
        return_link=_return_link(return_url),
    )


def render_message(title: str, *paragraphs: str) -> str:
    """A plain page with a title and a few paragraphs (404, 503), in the checkout's style."""
    a = assets()
    body = "\n".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    return a.not_found.substitute(style=a.style, title=escape(title), paragraphs=body)


def render_not_found() -> str:
    """The page for an unknown payment request (served with status 404)."""
    return render_message(
        "Payment request not found",
        "There is no payment request at this address. The link may be mistyped, "
        "or the request was withdrawn.",
        "Please go back to the shop and start the payment again.",
    )


def render_unavailable() -> str:
    """The page while the gateway cannot read its database (served with status 503)."""
    return render_message(
        "Temporarily unavailable",
        "The payment page cannot be shown right now. Please reload it in a minute.",
        "If you have already paid, your payment is safe: it is recorded on the Monero "
        "network and will be credited.",
    )
