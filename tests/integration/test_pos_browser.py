"""The point-of-sale screen in headless Chromium against a real regtest gateway.

A till signs in with a ``pos`` key and charges 1 XMR on the keypad; a devnet wallet
pays it: the screen says "Seen, waiting for the block" while the transaction is in the
pool and "Paid" after one block (the device's default, 1 confirmation), without a
reload. A second sale of 2 XMR gets 0.5 XMR, mined: the screen shows the 1.5 XMR still
due. Screenshots go to ``test-artifacts/pos/regtest-*.png``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By

from testsupport.browser import chromium, click, console_errors, visible_text, wait_for, wait_text
from testsupport.gateway import Gateway
from testsupport.page_shots import ARTIFACTS, PHONE, viewport_png
from xmrgate.devnet import Devnet

XMR = 10**12
OPERATOR_KEY = "pos-operator-key-0123456789"
TILL_KEY = "pos-till-key-0123456789abcdef"
GATEWAY_ARGS = ["--api-key", f"{OPERATOR_KEY}:read {TILL_KEY}:pos"]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    # Both databases (every part runs on both), each on its own regtest wallet.
    pytest.mark.parametrize("gateway", ["sqlite", "postgresql"], indirect=True),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, PHONE, console=True) as driver:
        yield driver


text = visible_text


def charge(driver: WebDriver, *keys: str) -> str:
    """Type ``keys`` on the keypad, Charge, and wait for the QR code; the sale's address."""
    wait_text(driver, "#display", "0 XMR")
    for key in keys:
        click(driver, f'#keypad button[data-key="{key}"]')
    click(driver, "#charge")
    address = str(
        wait_for(
            driver,
            "the sale in the URL",
            lambda: (
                driver.current_url.split("#sale=", 1)[1] if "#sale=" in driver.current_url else ""
            ),
        )
    )
    wait_for(
        driver,
        "the QR code",
        lambda: driver.execute_script(
            "var i = document.getElementById('qr'); return i.complete && i.naturalWidth > 0;"
        ),
    )
    return address


def screenshot(driver: WebDriver, name: str) -> None:
    viewport_png(driver, ARTIFACTS / "pos" / f"regtest-{name}.png")


def test_a_sale_paid_on_regtest_and_a_partial_one(
    browser: WebDriver, gateway: Gateway, devnet: Devnet
) -> None:
    # The browser outlives each backend's gateway: the last page's polls of the gateway
    # closed before this one are in the log, not this test's errors.
    browser.get("about:blank")
    browser.get_log("browser")  # type: ignore[no-untyped-call]
    browser.get(f"{gateway.url}/pos")
    wait_for(browser, "the sign-in form", lambda: text(browser, "#login h1"))
    browser.find_element(By.ID, "api-key").send_keys(TILL_KEY)
    click(browser, "#login button[type=submit]")

    address = charge(browser, "1")
    assert text(browser, "#state-text") == "Waiting for payment"
    browser.execute_script("window.stillHere = 'yes';")
    devnet.pay(address, XMR)  # in the pool, no block yet
    wait_text(browser, "#state-text", "Seen, waiting for the block")
    screenshot(browser, "seen")
    devnet.mine(1)
    wait_text(browser, "#state-text", "Paid")
    assert text(browser, "#state-detail") == "1 XMR received, 1 confirmation"
    assert browser.execute_script("return window.stillHere;") == "yes"  # never reloaded
    screenshot(browser, "paid")

    click(browser, "#new-sale")
    partial = charge(browser, "2")
    devnet.pay(partial, XMR // 2, mine_blocks=1)
    wait_text(browser, "#state-text", "Partly paid: 1.5 XMR still due")
    assert text(browser, "#sale-amount") == "1.5 XMR"
    screenshot(browser, "partial")
    # What the screen says is what the gateway stored.
    body = gateway.get(f"/pos/sales/{partial}", headers={"Authorization": f"Bearer {TILL_KEY}"})
    assert (body.json()["received"], body.json()["due"]) == (XMR // 2, 3 * XMR // 2)
    assert console_errors(browser) == []
