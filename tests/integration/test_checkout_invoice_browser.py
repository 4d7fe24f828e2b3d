"""The checkout page's invoice states in a real headless Chromium on regtest: the
countdown, expiry, a partial payment with a QR code for the rest, and a payment after
the expiry (shown as paid late, with the overpayment). Screenshots as in
``test_checkout_browser.py`` (``docs/img/checkout-<state>.png`` when
XMRGATE_UPDATE_DOC_IMAGES=1)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By

from tests.integration.test_checkout_browser import (
    AMOUNT,
    DESCRIPTION,
    PART,
    PHONE,
    browser,
    console_errors,
    emulate,
    page_state,
    qr_from_page,
    screenshots,
    visible_text,
    wait_for,
)
from testsupport.gateway import SYNC_WAIT, Gateway
from xmrgate.devnet import Devnet
from xmrgate.web.checkout.qr import payment_uri

__all__ = ["browser"]  # the module-scoped Chromium fixture, shared with the other file

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.parametrize("gateway", ["sqlite", "postgresql"], indirect=True),
]


def countdown(driver: WebDriver) -> str:
    return visible_text(driver, "#countdown-value")


def seconds(text: str) -> int:
    """``M:SS`` or ``H:MM:SS`` as seconds."""
    total = 0
    for part in text.split(":"):
        total = total * 60 + int(part)
    return total


def open_page(driver: WebDriver, gateway: Gateway, address: str) -> None:
    # The browser outlives each database's gateway: the page left open by the previous
    # gateway's last test polls a stopped server, and its refused requests must not be
    # counted as this page's console errors. Leave it, then drop what it logged.
    driver.get("about:blank")
    console_errors(driver)
    emulate(driver, PHONE)
    driver.get(f"{gateway.url}/pay/{address}")
    driver.execute_script("window.__loadedOnce = 'first-load';")


def not_reloaded(driver: WebDriver) -> bool:
    return bool(driver.execute_script("return window.__loadedOnce === 'first-load';"))


def test_countdown_then_expired(gateway: Gateway, browser: WebDriver) -> None:
    """A countdown that runs by itself, then the expired state with what to do if paid."""
    address = gateway.receive(AMOUNT, description=DESCRIPTION, expires_in=12)["address"]
    open_page(browser, gateway, address)
    assert page_state(browser) == "waiting"
    first = seconds(countdown(browser))
    assert 8 <= first <= 12
    screenshots(browser, "countdown")
    wait_for(browser, "the countdown to go down", lambda d: seconds(countdown(d)) < first, 5)
    assert qr_from_page(browser, Path(gateway.workdir)) == payment_uri(address, AMOUNT, DESCRIPTION)

    wait_for(browser, "the expired state", page_state, SYNC_WAIT, lambda s: s == "expired")
    text = visible_text(browser, "#status")
    assert "This payment request has expired" in text
    assert "Paid anyway?" in text
    assert not browser.find_element(By.CSS_SELECTOR, "svg.qr").is_displayed()
    assert not browser.find_element(By.ID, "countdown").is_displayed()
    assert browser.title == "Expired payment request"
    assert not_reloaded(browser)
    screenshots(browser, "expired")
    assert console_errors(browser) == []


def test_partial_payment_shows_rest_due_with_countdown(
    gateway: Gateway, devnet: Devnet, browser: WebDriver
) -> None:
    """Partially paid before the expiry: what is still due, a QR code for it, the countdown."""
    address = gateway.receive(AMOUNT, description=DESCRIPTION, expires_in=1800)["address"]
    open_page(browser, gateway, address)
    devnet.pay(address, PART)
    wait_for(browser, "the partial state", page_state, SYNC_WAIT, lambda s: s == "seen")
    status = visible_text(browser, "#status")
    assert "Partial payment received" in status
    assert "0.7345 XMR still due" in status
    rest = payment_uri(address, AMOUNT - PART, DESCRIPTION)
    wait_for(
        browser,
        "the QR code of the rest",
        lambda d: qr_from_page(d, Path(gateway.workdir)),
        SYNC_WAIT,
        lambda uri: uri == rest,
    )
    assert 25 * 60 < seconds(countdown(browser)) <= 30 * 60
    assert not_reloaded(browser)
    screenshots(browser, "partial-due")
    assert console_errors(browser) == []


def test_payment_after_expiry_is_shown_as_late(
    gateway: Gateway, devnet: Devnet, browser: WebDriver
) -> None:
    """Expired, then paid (more than asked): the page switches to "paid late" by itself."""
    address = gateway.receive(AMOUNT, description=DESCRIPTION, expires_in=2)["address"]
    open_page(browser, gateway, address)
    wait_for(browser, "the expired state", page_state, SYNC_WAIT, lambda s: s == "expired")
    time.sleep(0.5)
    devnet.pay(address, AMOUNT + PART, mine_blocks=1)
    wait_for(browser, "the late state", page_state, SYNC_WAIT, lambda s: s == "late")
    text = visible_text(browser, "#status")
    assert "Paid after the deadline" in text
    assert "Received 1.7345 XMR after this payment request expired" in text
    assert "You sent 0.5 XMR more than requested" in text
    assert browser.title == "Paid late: 1.7345 XMR"
    assert not_reloaded(browser)
    screenshots(browser, "late")
    assert console_errors(browser) == []
