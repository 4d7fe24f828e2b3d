"""The checkout page's invoice states (pure): countdown, expired, partial with the rest
due, paid and confirming, paid late, overpaid."""

from __future__ import annotations

import pytest

from xmrgate.domain.checkout_state import checkout_status
from xmrgate.domain.invoice import Invoice
from xmrgate.domain.ledger import Transfer, TransferState
from xmrgate.web.checkout.page import countdown_text, current_uri, render_checkout_page

XMR = 10**12
NOW = 1_700_000_000
EXPIRES = NOW + 600
ADDRESS = "8" + "A" * 94
POOL = TransferState.POOL
CONFIRMED = TransferState.CONFIRMED


def tr(amount: int, state: TransferState, seen: int = NOW) -> Transfer:
    return Transfer(
        tx_hash="ab" * 32,
        subaddr_index=1,
        amount=amount,
        fee=1,
        height=0 if state is TransferState.POOL else 95,
        timestamp=seen,
        unlock_time=0,
        double_spend_seen=False,
        state=state,
        first_seen=seen,
    )


@pytest.mark.parametrize(
    ("transfers", "now", "state", "status_value", "left"),
    [
        pytest.param([], NOW, "waiting", "waiting", 600, id="countdown"),
        pytest.param([], EXPIRES, "expired", "expired", None, id="expired"),
        pytest.param([tr(XMR // 4, POOL)], NOW + 1, "seen", "partial", 599, id="partial"),
        pytest.param(
            [tr(XMR, TransferState.CONFIRMED)], NOW, "seen", "paid", None, id="confirming"
        ),
        pytest.param([tr(XMR, TransferState.UNLOCKED)], NOW, "paid", "complete", None, id="paid"),
        pytest.param(
            [tr(XMR, TransferState.CONFIRMED, seen=EXPIRES + 5)],
            EXPIRES + 9,
            "late",
            "paid_late",
            None,
            id="late",
        ),
    ],
)
def test_states(
    transfers: list[Transfer], now: int, state: str, status_value: str, left: int | None
) -> None:
    """Each invoice status maps to what the page shows; the countdown only while open."""
    s = checkout_status(XMR, transfers, 100, invoice=Invoice(XMR, 0, EXPIRES), now=now)
    assert (s.state, s.status.value, s.seconds_left) == (state, status_value, left)
    assert s.to_json()["expires_at"] == "2023-11-14T22:23:20.000000Z"


def test_partial_payment_asks_for_the_rest() -> None:
    """A quarter paid: three quarters due, and the QR code's URI asks for exactly that."""
    s = checkout_status(
        XMR, [tr(XMR // 4, TransferState.POOL)], 100, invoice=Invoice(XMR, 0, EXPIRES), now=NOW
    )
    assert s.due == 3 * XMR // 4
    assert "tx_amount=0.75" in current_uri(ADDRESS, XMR, "", s)


def test_tolerance_lowers_what_is_due() -> None:
    """With a tolerance, what is still due is expected - tolerance - received."""
    s = checkout_status(
        XMR, [tr(XMR // 2, TransferState.POOL)], 100, invoice=Invoice(XMR, 1000), now=NOW
    )
    assert s.due == XMR // 2 - 1000


def test_overpayment_is_shown() -> None:
    """More than asked: overpaid is the difference, shown in the page."""
    s = checkout_status(XMR, [tr(3 * XMR, TransferState.UNLOCKED)], 100, now=NOW)
    assert (s.state, s.overpaid, s.to_json()["overpaid_xmr"]) == ("paid", 2 * XMR, "2")
    html = render_checkout_page(
        address=ADDRESS, amount=XMR, description="", return_url=None, status=s
    )
    assert 'data-overpaid="yes"' in html


def test_no_expiry_no_countdown() -> None:
    """Requests without expires_in: no countdown, states as before."""
    s = checkout_status(XMR, [], 100, now=NOW)
    assert (s.state, s.seconds_left, s.expires_at) == ("waiting", None, None)
    html = render_checkout_page(
        address=ADDRESS, amount=XMR, description="", return_url=None, status=s
    )
    assert 'id="countdown" hidden' in html


def test_expired_page_hides_the_payment_details() -> None:
    """Expired: the page says so and what to do if paid anyway."""
    s = checkout_status(XMR, [], 100, invoice=Invoice(XMR, 0, EXPIRES), now=EXPIRES + 1)
    html = render_checkout_page(
        address=ADDRESS, amount=XMR, description="", return_url=None, status=s
    )
    assert 'data-state="expired"' in html and "Paid anyway?" in html


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0:00"), (59, "0:59"), (61, "1:01"), (3600, "1:00:00"), (90061, "1 d 01:01:01")],
)
def test_countdown_text(seconds: int, text: str) -> None:
    """M:SS, H:MM:SS, D d HH:MM:SS (checkout.js formats the same way)."""
    assert countdown_text(seconds) == text
