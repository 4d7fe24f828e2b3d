"""The checkout page of a request priced in fiat (``web/checkout/page.py``).

The price shows beside the XMR amount as the client wrote it, with the rate that made
the amount (to the currency's minor units, the exact one on hover) and the end of the
rate lock (UTC without script; ``checkout.js`` rewrites it in local time, which the
browser test checks). A request priced in XMR renders exactly as before.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from xmrgate.domain.checkout_state import CheckoutStatus
from xmrgate.domain.fiat import Quote
from xmrgate.web.checkout.page import (
    content_security_policy,
    csp_hash,
    price_html,
    rate_text,
    render_checkout_page,
)

ADDRESS = "8" + "Bq3xZ" * 18 + "abcd"
AMOUNT = 132_556_203_165  # 19.90 EUR at 150.125 EUR per XMR, rounded up
LOCK_END = datetime(2026, 11, 25, 14, 5, 37, tzinfo=UTC)
WAITING = CheckoutStatus(
    "waiting", AMOUNT, 0, 0, AMOUNT, 0, False, expires_at=LOCK_END.timestamp(), seconds_left=900
)


def quote(amount: str = "19.90", currency: str = "EUR", rate: str = "150.125") -> Quote:
    rate_at = datetime(2026, 11, 25, tzinfo=UTC)
    return Quote(amount, currency, rate, ("coingecko", "kraken"), rate_at)


def page(price: Quote | None, status: CheckoutStatus = WAITING) -> str:
    return render_checkout_page(
        address=ADDRESS,
        amount=AMOUNT,
        description="Order 42",
        return_url=None,
        status=status,
        price=price,
    )


def test_the_price_shows_beside_the_xmr_amount_as_written() -> None:
    """'19.90 EUR' keeps its trailing zero and sits right under the amount in XMR."""
    html = page(quote())
    amount_line = '<p class="big"><span id="amount">0.132556203165</span> <span class="unit">XMR'
    price_start = '</span></p>\n<p class="price" id="price"><span class="fiat" id="price-amount">'
    assert amount_line + price_start + "19.90 EUR</span>" in html
    assert "<title>Pay 0.132556203165 XMR (19.90 EUR)</title>" in html


def test_the_rate_line_names_the_rate_and_the_lock() -> None:
    """Rate to the cent, the exact one on hover, and the lock's end in UTC to the minute."""
    html = page(quote())
    rate = re.search(r'<span class="rate" id="price-rate">(.*?)</span></p>', html)
    assert rate is not None
    assert rate.group(1) == (
        'Rate 1 XMR = <span title="1 XMR = 150.125 EUR">150.12</span> EUR, locked until '
        '<time id="price-lock" datetime="2026-11-25T14:05:37.000000Z">2026-11-25 14:05 UTC</time>'
    )


@pytest.mark.parametrize(
    ("currency", "rate", "shown"),
    [
        ("EUR", "150.125", "150.12"),  # half to even: never a cent more than the median
        ("EUR", "150.135", "150.14"),
        ("EUR", "150.5", "150.50"),  # a rate in money shows its cents
        ("EUR", "150", "150.00"),
        ("JPY", "23456.7", "23457"),  # no minor unit
        ("KWD", "46.1234", "46.123"),  # three
        ("EUR", "1" + "2" * 39 + ".5", "1" + "2" * 39 + ".50"),  # 40 digits: exact, no exponent
        ("EUR", "not a number", "not a number"),  # a hand-edited row: shown, not a crash
        ("EUR", "NaN", "NaN"),
    ],
)
def test_the_rate_is_shown_to_the_currencys_minor_units(
    currency: str, rate: str, shown: str
) -> None:
    assert rate_text(quote(currency=currency, rate=rate)) == shown


def test_jpy_price_shows_without_decimals() -> None:
    html = page(quote(amount="3000", currency="JPY", rate="23456.7"))
    assert '<span class="fiat" id="price-amount">3000 JPY</span>' in html
    assert ">23457</span> JPY, locked until" in html


def test_without_an_expiry_the_rate_line_names_no_lock() -> None:
    """A quote on a request without an expiry (none is made so today) still renders."""
    html = price_html(quote(), None)
    assert "locked" not in html and "<time" not in html
    assert html.endswith("150.12</span> EUR</span></p>")


def test_a_request_priced_in_xmr_shows_no_price() -> None:
    """No price: the amount line ends the block as before, and nothing of fiat is on the page."""
    html = page(None)
    assert '<span class="unit">XMR</span></p>\n<div class="pay-only">' in html
    assert 'id="price' not in html and "EUR" not in html and "locked until" not in html
    assert "<title>Pay 0.132556203165 XMR</title>" in html
    assert price_html(None, LOCK_END.timestamp()) == ""


def test_hostile_quote_values_are_escaped() -> None:
    """A quote read back from a tampered row injects nothing."""
    evil = "<script>alert(1)</script>"
    html = page(Quote(evil, '"><img src=x>', evil, (evil,), datetime(2026, 1, 1, tzinfo=UTC)))
    assert "<script>alert" not in html and "<img src=x" not in html
    assert html.count("<script>") == 1  # the page's own
    shown = "&lt;script&gt;alert(1)&lt;/script&gt; &quot;&gt;&lt;img src=x&gt;"
    assert f"{shown}</span>" in html  # the amount and currency
    assert f'title="1 XMR = {shown}"' in html  # the exact rate and currency


def test_the_price_needs_nothing_the_csp_does_not_allow() -> None:
    """No inline style or handler: the page's CSP hashes still cover every inline block."""
    html = page(quote())
    fragment = price_html(quote(), LOCK_END.timestamp())
    assert "style=" not in fragment and not re.search(r"\son[a-z]+=", fragment)
    (script,) = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    (style,) = re.findall(r"<style>(.*?)</style>", html, flags=re.S)
    csp = content_security_policy(with_script=True)
    assert f"script-src {csp_hash(script)};" in csp
    assert f"style-src {csp_hash(style)};" in csp
