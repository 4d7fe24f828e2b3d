"""A store's name and accent on its checkout page (``web/checkout/page.py`` ``Brand``)."""

from __future__ import annotations

import re

from xmrgate.domain.checkout_state import CheckoutStatus
from xmrgate.web.checkout.page import (
    Brand,
    content_security_policy,
    csp_hash,
    render_checkout_page,
)

ADDRESS = "8" + "Bq3xZ" * 18 + "abcd"
WAITING = CheckoutStatus("waiting", 10**12, 0, 0, 10**12, 0, False)


def _page(brand: Brand | None) -> str:
    return render_checkout_page(
        address=ADDRESS,
        amount=10**12,
        description="",
        return_url=None,
        status=WAITING,
        brand=brand,
    )


def _styles(html: str) -> list[str]:
    return re.findall(r"<style>(.*?)</style>", html, flags=re.S)


def test_the_stores_name_is_the_heading_escaped() -> None:
    html = _page(Brand(name="Bob's <b>Bikes</b>"))
    assert "Bob&#x27;s &lt;b&gt;Bikes&lt;/b&gt;</h1>" in html
    assert "Monero payment</h1>" in _page(None)


def test_the_accent_is_a_style_block_the_csp_allows() -> None:
    brand = Brand(accent="#1d4ed8")
    html = _page(brand)
    styles = _styles(html)
    assert len(styles) == 2 and styles[1] == ":root{--accent:#1d4ed8;--accent-text:#fff}"
    csp = content_security_policy(with_script=True, brand=brand)
    allowed = re.search(r"style-src ([^;]+)", csp)
    assert allowed is not None
    for style in styles:  # every inline style on the page is allowed, by its own hash
        assert csp_hash(style) in allowed.group(1).split()


def test_a_light_accent_gets_dark_text() -> None:
    assert Brand(accent="#fde047").style().endswith("--accent-text:#18181b}")


def test_a_hostile_accent_is_never_written_into_css() -> None:
    for accent in ("red;}body{display:none", "#12345", "#1234567", "</style><script>"):
        brand = Brand(accent=accent)
        assert brand.style() == ""
        assert len(_styles(_page(brand))) == 1
        assert content_security_policy(with_script=True, brand=brand) == (
            content_security_policy(with_script=True)
        )
