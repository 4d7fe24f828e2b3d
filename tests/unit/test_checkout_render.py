"""Pure rendering of the checkout page: escaping, the payment URI, CSP, size, status."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from xmrgate.config import Settings
from xmrgate.domain.checkout_state import CheckoutStatus, checkout_status
from xmrgate.domain.invoice import InvoiceStatus
from xmrgate.domain.ledger import Transfer, TransferState
from xmrgate.runtime.app import build_app
from xmrgate.web.checkout.page import (
    checkout_urls,
    content_security_policy,
    render_checkout_page,
    render_not_found,
    security_headers,
)
from xmrgate.web.checkout.qr import MAX_URI_DESCRIPTION_BYTES, payment_uri, qr_svg

ADDRESS = "8" + "Bq3xZ" * 18 + "abcd"  # 95 characters, like a subaddress
HOSTILE = "</p><script>alert(1)</script><img src=x onerror=alert(2)> & \"quoted\" 'single'"
MAX_PAGE_BYTES = 50 * 1024

WAITING = CheckoutStatus("waiting", 10**12, 0, 0, 10**12, 0, False)
PARTIAL = CheckoutStatus("seen", 10**12, 4 * 10**11, 0, 6 * 10**11, 3, False, InvoiceStatus.PARTIAL)
PAID = CheckoutStatus("paid", 10**12, 10**12, 10**12, 0, 12, True, InvoiceStatus.COMPLETE)


def page(
    status: CheckoutStatus = WAITING,
    description: str = "Order 42",
    return_url: str | None = "https://shop.example/thanks?order=42&x=1",
    amount: int = 10**12,
    public_url: str | None = None,
) -> str:
    return render_checkout_page(
        address=ADDRESS,
        amount=amount,
        description=description,
        return_url=return_url,
        status=status,
        public_url=public_url,
    )


def inline_blocks(html: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.S)


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def transfer(amount: int, height: int, state: TransferState, tx: str = "a") -> Transfer:
    return Transfer(
        tx_hash=tx * 64,
        subaddr_index=1,
        amount=amount,
        fee=1,
        height=height,
        timestamp=1_700_000_000,
        unlock_time=0,
        double_spend_seen=False,
        state=state,
    )


# ------------------------------------------------------------------ escaping


def test_hostile_description_is_escaped() -> None:
    """A description full of markup shows as text and injects nothing."""
    html = page(description=HOSTILE)
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "onerror=alert(2)&gt;" in html
    assert "&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&amp; &quot;quoted&quot; &#x27;single&#x27;" in html
    # Our own script is the only one.
    assert html.count("<script>") == 1


def test_return_link_escaped_and_only_http() -> None:
    """The return URL is attribute-escaped; a javascript: URL is never a link."""
    html = page(return_url='https://shop.example/?a=1&b="><script>x</script>')
    assert 'href="https://shop.example/?a=1&amp;b=&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' in html
    assert "Back to the shop" in html
    assert "Back to the shop" not in page(return_url="javascript:alert(1)")
    assert "Back to the shop" not in page(return_url=None)


def test_return_link_is_inside_the_paid_block() -> None:
    """The link exists in the markup but belongs to the paid state only."""
    html = page(PAID)
    paid_block = html.split('class="st st-paid"', 1)[1].split("</section>", 1)[0]
    assert 'id="return-link"' in paid_block
    assert 'data-state="paid"' in html


# ------------------------------------------------------------------ payment URI


def test_uri_encodes_description() -> None:
    """Everything but unreserved characters is percent-encoded as UTF-8; spaces as %20."""
    uri = payment_uri(ADDRESS, 1_234_500_000_000, "Order #12 & co/ünï?=+")
    assert uri == (
        f"monero:{ADDRESS}?tx_amount=1.2345"
        "&tx_description=Order%20%2312%20%26%20co%2F%C3%BCn%C3%AF%3F%3D%2B"
    )


def test_uri_omits_empty_parts() -> None:
    """No tx_description for an empty description, no tx_amount for an any-amount request."""
    assert payment_uri(ADDRESS, 10**12, "") == f"monero:{ADDRESS}?tx_amount=1"
    assert payment_uri(ADDRESS, 0, "") == f"monero:{ADDRESS}"
    assert payment_uri(ADDRESS, 0, "tip") == f"monero:{ADDRESS}?tx_description=tip"


def test_uri_cuts_long_description_on_a_character_boundary() -> None:
    """A long description is cut to whole UTF-8 characters so the QR code stays scannable."""
    uri = payment_uri(ADDRESS, 1, "€" * 50)  # 3 bytes each
    encoded = uri.split("tx_description=", 1)[1]
    assert encoded == "%E2%82%AC" * (MAX_URI_DESCRIPTION_BYTES // 3)


def test_page_links_the_uri_of_what_is_due() -> None:
    """After a partial payment the QR code and wallet link ask for the rest only."""
    assert f'href="monero:{ADDRESS}?tx_amount=1&amp;tx_description=Order%2042"' in page()
    assert f'href="monero:{ADDRESS}?tx_amount=0.6&amp;tx_description=Order%2042"' in page(PARTIAL)


def test_qr_svg_is_inline_svg() -> None:
    """The QR code is an <svg> sized by its viewBox, with an escaped title."""
    svg = qr_svg(payment_uri(ADDRESS, 10**12, HOSTILE), title="<t>")
    assert svg.startswith('<svg viewBox="0 0 ')
    assert 'class="qr"' in svg
    assert "<title>&lt;t&gt;</title>" in svg
    assert "width=" not in svg.split(">", 1)[0]


# ------------------------------------------------------------------ content


def test_page_shows_amount_address_and_state() -> None:
    """Amount in XMR, the address with a real copy button, and the server-side state."""
    html = page(PARTIAL)
    assert '<span id="amount">1</span>' in html
    assert f'<code id="address">{ADDRESS}</code>' in html
    assert '<button type="button" class="button wide" id="copy"' in html
    assert 'data-state="seen"' in html
    assert 'data-due="yes"' in html
    assert '<strong data-field="due_xmr">0.6</strong> XMR still due' in html
    assert '<span data-field="confirmations">3</span> of 10' in html
    assert 'role="status"' in html
    assert 'aria-live="polite"' in html


def test_any_amount_request() -> None:
    """An amount of 0 reads 'Any amount' and the QR code carries no tx_amount."""
    html = page(CheckoutStatus("waiting", 0, 0, 0, 0, 0, False), amount=0)
    assert "Any amount" in html
    assert "tx_amount" not in html


def test_urls_are_relative_unless_public_url() -> None:
    """Relative URLs work under any proxy prefix; --public-url makes them absolute."""
    assert checkout_urls(ADDRESS) == (f"{ADDRESS}/status.json", f"{ADDRESS}/qr.svg")
    assert checkout_urls(ADDRESS, "https://pay.example/gw/")[0] == (
        f"https://pay.example/gw/pay/{ADDRESS}/status.json"
    )
    html = page(public_url="https://pay.example/gw")
    assert f'data-status-url="https://pay.example/gw/pay/{ADDRESS}/status.json"' in html
    assert "https://pay.example" in content_security_policy(
        with_script=True, public_url="https://pay.example/gw"
    )


def test_no_external_resources() -> None:
    """No CDN, no fonts, no remote anything: the page works offline on a LAN."""
    html = page(PARTIAL, description=HOSTILE)
    assert not re.search(r"""(src|href)=["']?(https?:)?//(?!shop\.example)""", html)
    assert "@import" not in html
    assert "url(" not in html


def test_page_size_under_50_kb_worst_case() -> None:
    """The longest description, the largest amount: still under 50 KB with CSS, JS and QR."""
    description = ("&<\U0001f600" * 342)[:1024]
    html = render_checkout_page(
        address=ADDRESS,
        amount=2**63 - 1,
        description=description,
        return_url="https://shop.example/" + "x" * 2000,
        status=CheckoutStatus("seen", 2**63 - 1, 1, 0, 2**63 - 2, 0, False),
    )
    size = len(html.encode("utf-8"))
    assert size < MAX_PAGE_BYTES, size
    assert len(page().encode()) < 20 * 1024


def test_not_found_page() -> None:
    """The 404 page is a complete page with the same styles and no script."""
    html = render_not_found()
    assert html.startswith("<!doctype html>")
    assert "Payment request not found" in html
    assert "<script>" not in html


# ------------------------------------------------------------------ headers


def test_csp_hashes_match_inline_blocks() -> None:
    """The CSP allows exactly the inline style and script of the page, nothing inline else."""
    html = page()
    csp = content_security_policy(with_script=True)
    (style,) = inline_blocks(html, "style")
    (script,) = inline_blocks(html, "script")
    assert f"style-src {sha256_source(style)};" in csp
    assert f"script-src {sha256_source(script)};" in csp
    assert "unsafe-inline" not in csp
    assert "default-src 'none'" in csp
    assert "connect-src 'self'" in csp
    assert "script-src" not in content_security_policy(with_script=False)


def test_security_headers() -> None:
    """nosniff, no referrer, no caching of a live status."""
    headers = security_headers("default-src 'none'")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["Cache-Control"] == "no-store"
    assert headers["Content-Security-Policy"] == "default-src 'none'"


# ------------------------------------------------------------------ status


@pytest.mark.parametrize(
    ("transfers", "state", "received", "due", "confirmations", "complete"),
    [
        ([], "waiting", 0, 10**12, 0, False),
        ([transfer(4 * 10**11, 0, TransferState.POOL)], "seen", 4 * 10**11, 6 * 10**11, 0, False),
        (
            [
                transfer(4 * 10**11, 90, TransferState.UNLOCKED, "a"),
                transfer(6 * 10**11, 97, TransferState.CONFIRMED, "b"),
            ],
            "seen",
            10**12,
            0,
            3,
            False,
        ),
        (
            [
                transfer(4 * 10**11, 80, TransferState.UNLOCKED, "a"),
                transfer(7 * 10**11, 90, TransferState.UNLOCKED, "b"),
            ],
            "paid",
            11 * 10**11,
            0,
            10,
            True,
        ),
        # A transfer removed by a reorg counts for nothing, not even confirmations.
        ([transfer(10**12, 95, TransferState.GONE)], "waiting", 0, 10**12, 0, False),
    ],
)
def test_checkout_status(
    transfers: list[Transfer],
    state: str,
    received: int,
    due: int,
    confirmations: int,
    complete: bool,
) -> None:
    """State, totals and least-confirmed transfer's confirmations at chain height 100."""
    s = checkout_status(10**12, transfers, 100)
    assert (s.state, s.received, s.due, s.confirmations, s.complete) == (
        state,
        received,
        due,
        confirmations,
        complete,
    )


def test_any_amount_is_not_paid_before_anything_unlocked() -> None:
    """expected == 0 is 'complete' by the spec's rule but the page still waits for money."""
    assert checkout_status(0, [], 100).state == "waiting"
    assert checkout_status(0, [transfer(5, 95, TransferState.CONFIRMED)], 100).state == "seen"
    assert checkout_status(0, [transfer(5, 80, TransferState.UNLOCKED)], 100).state == "paid"


def test_status_json_shape() -> None:
    """Integers in piconero, the same as XMR strings, and the required confirmations."""
    body = PARTIAL.to_json()
    assert body == {
        "state": "seen",
        "expected": 10**12,
        "received": 4 * 10**11,
        "unlocked": 0,
        "due": 6 * 10**11,
        "expected_xmr": "1",
        "received_xmr": "0.4",
        "unlocked_xmr": "0",
        "due_xmr": "0.6",
        "confirmations": 3,
        "required_confirmations": 10,
        "complete": False,
        "status": "partial",
        "expires_at": None,
        "seconds_left": None,
        "overpaid": 0,
        "overpaid_xmr": "0",
    }


# ------------------------------------------------------------------ --no-checkout


def _client(tmp_path: Path, checkout: bool) -> TestClient:
    # No lifespan (no `with`): nothing connects to a wallet or opens the database.
    settings = Settings(sqlite=str(tmp_path / "x.sqlite3"), checkout=checkout)
    return TestClient(build_app(settings))


def test_no_checkout_means_json_404(tmp_path: Path) -> None:
    """With --no-checkout, /pay/... is the API's ordinary JSON 404."""
    r = _client(tmp_path, checkout=False).get(f"/pay/{ADDRESS}")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["status"] == 404


def test_checkout_mounted_by_default(tmp_path: Path) -> None:
    """By default /pay/... is served; an over-long address is a 404 HTML page (no DB read)."""
    r = _client(tmp_path, checkout=True).get("/pay/" + "x" * 200)
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    assert "Payment request not found" in r.text
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["content-security-policy"].startswith("default-src 'none'")
