"""The point-of-sale screen (``/pos``) in headless Chromium, on the real app over fakes.

The app is ``test_pos_api.PosSite`` (two stores on in-memory fakes, a fixed rate book)
served by uvicorn on loopback; the till signs in with shop-a's ``pos`` key. A payment is
a transfer the test adds to the fake store (in the pool, then mined); the page must
follow by polling, never by a reload (a mark set in the page's window must survive).

- Keypad to Charge to the QR code (the checkout's image, loaded), the amount and note;
  a pool transfer shows "Seen, waiting for the block"; one confirmation shows "Paid".
- A partial payment shows what is still due; a reload keeps the sale (it is in the URL).
- The device's setting of confirmations (2: "Confirming 1 of 2" before "Paid").
- The store's ``pos_confirmations`` raises a device's lower setting (the settings say
  so; "Paid" waits for the store's number), and a device may ask for more.
- A fiat price in the currency chosen once (kept on the device).
- The last 20 sales of this device with their state; a sale of them opens again.
- A key without ``pos`` is refused with a message saying so.

Screenshots go to ``test-artifacts/pos/``; ``docs/img/pos-*.png`` (phone size, light and
dark) are refreshed when XMRGATE_UPDATE_DOC_IMAGES=1. Needs Debian's chromium and
chromium-driver; fails (never skips) without them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.unit.test_pos_api import HEIGHT, SHOP_A, TILL_A, XMR, PosSite
from testsupport import browser as chrome
from testsupport.browser import chromium, console_errors, displayed, visible_text
from testsupport.page_shots import (
    ARTIFACTS,
    PHONE,
    assert_fits,
    clear_emulation,
    copy_to_docs,
    emulate,
    settle,
    viewport_png,
)
from testsupport.served_app import ServedApp

pytestmark = pytest.mark.browser

WAIT = 15.0


class Served(ServedApp):
    """``PosSite``'s app served by uvicorn on its own loop in a thread."""

    def __init__(self) -> None:
        self.site = PosSite()
        self.payments = self.site.payments["shop-a"]
        super().__init__(self.site.app, start_timeout=WAIT)


@pytest.fixture
def served() -> Iterator[Served]:
    with Served() as found:
        yield found


#: pos.js polls the sale shown every POLL_MS (2 s); the tests make each of its polls
#: QUICK_POLL_MS instead, so that a payment shows within a tenth of a second rather than
#: up to 2 s later (ten waits of about 2 s each were two thirds of this module's time).
#: The page still follows only by polling, on its own timer: the tests prove the same.
POLL_MS = 2000
QUICK_POLL_MS = 100
QUICK_POLLS = f"""(function () {{
  var later = window.setTimeout;
  window.setTimeout = function (callback, ms) {{
    var rest = Array.prototype.slice.call(arguments, 2);
    return later.apply(window, [callback, ms === {POLL_MS} ? {QUICK_POLL_MS} : ms].concat(rest));
  }};
}})();"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, PHONE, console=True) as driver:
        # In every page this tab opens, before pos.js runs; the shared Chromium's next
        # module gets a new tab, without it.
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": QUICK_POLLS})
        yield driver


# ------------------------------------------------------------------ helpers


text = visible_text


def wait_for(driver: WebDriver, what: str, check: Callable[[], Any]) -> Any:
    """Poll ``check`` until it gives something true (for at most WAIT seconds)."""
    return chrome.wait_for(driver, what, check, timeout=WAIT)


def wait_text(driver: WebDriver, selector: str, wanted: str) -> None:
    chrome.wait_text(driver, selector, wanted, timeout=WAIT)


def click(driver: WebDriver, selector: str) -> None:
    chrome.click(driver, selector, timeout=WAIT)


def keys(driver: WebDriver, *pressed: str) -> None:
    for key in pressed:
        click(driver, f'#keypad button[data-key="{key}"]')


def sign_in(driver: WebDriver, served: Served, key: str = TILL_A) -> None:
    driver.get(f"{served.url}/pos")
    field = wait_for(driver, "the sign-in form", lambda: displayed(driver, "#api-key"))
    field.send_keys(key)
    click(driver, "#login button[type=submit]")


def sale_address(driver: WebDriver) -> str:
    def found() -> str:
        url = str(driver.current_url)
        return url.split("#sale=", 1)[1] if "#sale=" in url else ""

    return str(wait_for(driver, "the sale in the URL", found))


def qr_loaded(driver: WebDriver) -> bool:
    return bool(
        driver.execute_script(
            "var i = document.getElementById('qr');"
            "return i.offsetParent !== null && i.complete && i.naturalWidth > 0;"
        )
    )


def state(driver: WebDriver) -> str:
    return str(driver.execute_script("return document.getElementById('sale-state').dataset.state;"))


def recent(driver: WebDriver) -> list[dict[str, str]]:
    found: list[dict[str, str]] = driver.execute_script(
        "return Array.from(document.querySelectorAll('#recent li')).map(function (li) {"
        "  return {address: li.dataset.address, state: li.dataset.state,"
        "    text: li.innerText.replace(/\\s+/g, ' ').trim()}; });"
    )
    return found


def screenshots(driver: WebDriver, name: str, docs: bool = True) -> None:
    """Phone size, light and dark; nothing wider than the screen; docs/img on request."""
    try:
        for dark in (False, True):
            emulate(driver, PHONE, dark)
            settle(driver)
            assert_fits(driver, name, "phone's screen")
            path = viewport_png(driver, ARTIFACTS / "pos" / f"{name}{'-dark' if dark else ''}.png")
            if docs:
                copy_to_docs(path, path.name)
    finally:
        clear_emulation(driver)


page_errors = console_errors


@pytest.fixture(autouse=True)
def fresh_device(browser: WebDriver) -> Iterator[None]:
    """Each test starts on a new device: nothing in local or session storage."""
    yield
    browser.execute_script("try { localStorage.clear(); sessionStorage.clear(); } catch (e) {}")


# ------------------------------------------------------------------ the tests


def test_a_sale_from_keypad_to_paid(browser: WebDriver, served: Served) -> None:
    sign_in(browser, served)
    wait_text(browser, "#store-name", "Café Alpha")
    wait_text(browser, "#display", "0 XMR")
    assert text(browser, "#no-sales") == "No sales yet."
    keys(browser, "1", "2", "clear", "0", "0", "1", ".", "2", "5", "9", "back")
    wait_text(browser, "#display", "1.25 XMR")
    keys(browser, ".")  # a second point is ignored
    wait_text(browser, "#display", "1.25 XMR")
    displayed(browser, "#note").send_keys("Table 4 <b>")
    screenshots(browser, "pos-keypad")
    click(browser, "#charge")

    address = sale_address(browser)
    request = served.payments.requests[address]
    assert (request.amount, request.description) == (XMR * 5 // 4, "Table 4 <b>")
    wait_for(browser, "the QR code", lambda: qr_loaded(browser))
    wait_text(browser, "#sale-amount", "1.25 XMR")
    assert text(browser, "#sale-note") == "Table 4 <b>"  # as text, never as HTML
    assert state(browser) == "waiting"
    assert text(browser, "#state-text") == "Waiting for payment"
    assert text(browser, "#state-detail").startswith("Expires in 1")  # 15 minutes
    browser.execute_script("window.stillHere = 'yes';")
    screenshots(browser, "pos-qr")

    served.payments.pay(address, XMR * 5 // 4)  # in the pool
    wait_text(browser, "#state-text", "Seen, waiting for the block")
    assert not qr_loaded(browser)
    assert text(browser, "#state-detail") == "1.25 XMR received (in the pool)"
    screenshots(browser, "pos-seen")

    served.payments.mine(address, HEIGHT)
    served.payments.height = HEIGHT + 1
    wait_text(browser, "#state-text", "Paid")
    assert state(browser) == "paid"
    assert text(browser, "#state-detail") == "1.25 XMR received, 1 confirmation"
    assert browser.execute_script("return window.stillHere;") == "yes"  # never reloaded
    screenshots(browser, "pos-paid")

    click(browser, "#new-sale")
    wait_text(browser, "#display", "0 XMR")
    assert not browser.current_url.endswith(address)
    (listed,) = wait_for(browser, "the last sale", lambda: recent(browser))
    assert listed["address"] == address and listed["state"] == "paid"
    assert "1.25 XMR" in listed["text"] and "Paid" in listed["text"]
    assert "Table 4 <b>" in listed["text"]
    click(browser, f'#recent li[data-address="{address}"] a')
    wait_text(browser, "#state-text", "Paid")
    assert page_errors(browser) == []


def test_a_partial_payment_and_a_reload(browser: WebDriver, served: Served) -> None:
    sign_in(browser, served)
    wait_text(browser, "#display", "0 XMR")
    keys(browser, "2")
    click(browser, "#charge")
    address = sale_address(browser)
    wait_for(browser, "the QR code", lambda: qr_loaded(browser))
    first_qr = browser.find_element(By.ID, "qr").get_attribute("src")

    served.payments.pay(address, XMR // 2, height=HEIGHT - 1)
    wait_text(browser, "#state-text", "Partly paid: 1.5 XMR still due")
    assert state(browser) == "partial"
    assert text(browser, "#sale-amount") == "1.5 XMR"
    assert text(browser, "#state-detail") == "0.5 XMR received. Scan again for the rest."
    # A new QR code, for the rest.
    wait_for(
        browser,
        "a QR code for the rest",
        lambda: (
            qr_loaded(browser)
            and browser.find_element(By.ID, "qr").get_attribute("src") != first_qr
        ),
    )
    screenshots(browser, "pos-partial")

    browser.refresh()
    wait_text(browser, "#state-text", "Partly paid: 1.5 XMR still due")
    assert sale_address(browser) == address
    wait_for(browser, "the QR code after the reload", lambda: qr_loaded(browser))

    served.payments.pay(address, 3 * XMR // 2)
    wait_text(browser, "#state-text", "Seen, waiting for the block")
    served.payments.mine(address, HEIGHT + 1)
    served.payments.height = HEIGHT + 2
    wait_text(browser, "#state-text", "Paid")


def test_the_devices_confirmations_and_a_fiat_price(browser: WebDriver, served: Served) -> None:
    sign_in(browser, served)
    wait_text(browser, "#display", "0 XMR")
    click(browser, "#settings-open")
    field = displayed(browser, "#confirmations")
    assert field.get_attribute("value") == "1"
    field.clear()
    field.send_keys("2")
    click(browser, "#settings-close")
    assert (
        browser.execute_script("return localStorage.getItem('xmrgate.pos.confirmations');") == "2"
    )

    Select(displayed(browser, "#currency")).select_by_value("EUR")
    wait_text(browser, "#display", "0 EUR")
    keys(browser, "7", ".", "5", "0", "9")  # EUR takes two decimals: the 9 is ignored
    wait_text(browser, "#display", "7.50 EUR")
    click(browser, "#charge")
    address = sale_address(browser)
    assert served.payments.requests[address].amount == XMR // 20
    wait_text(browser, "#sale-price", "7.50 EUR")
    assert text(browser, "#sale-amount") == "0.05 XMR"

    served.payments.pay(address, XMR // 20, height=HEIGHT)
    served.payments.height = HEIGHT + 1
    wait_text(browser, "#state-text", "Confirming 1 of 2")
    served.payments.height = HEIGHT + 2
    wait_text(browser, "#state-text", "Paid")

    # The currency stays chosen on this device, after a reload too.
    click(browser, "#new-sale")
    browser.refresh()
    wait_text(browser, "#display", "0 EUR")


def device_confirmations(driver: WebDriver, typed: str | None = None) -> str:
    """Open the settings (typing ``typed`` into the device's confirmations, then Done and
    open again): the value they show."""
    click(driver, "#settings-open")
    field = chrome.shown(driver, "#confirmations", timeout=WAIT)
    if typed is not None:
        field.clear()
        field.send_keys(typed)
        click(driver, "#settings-close")  # the field's change, then the keypad
        wait_for(driver, "the keypad", lambda: displayed(driver, "#display"))
        return device_confirmations(driver)
    return str(field.get_attribute("value"))


def test_the_store_raises_a_device_asking_fewer_confirmations(
    browser: WebDriver, served: Served
) -> None:
    rows = served.site.rows
    rows.stores = [replace(s, pos_confirmations=2) if s.id == "shop-a" else s for s in rows.stores]
    served.run(served.site.stores.load())
    sign_in(browser, served)
    wait_text(browser, "#display", "0 XMR")
    assert device_confirmations(browser) == "2"  # the store's 2, above the device's default 1
    click(browser, "#settings-close")
    assert device_confirmations(browser, "0") == "2"
    assert (
        browser.execute_script("return localStorage.getItem('xmrgate.pos.confirmations');") == "0"
    )  # kept as the device asked, raised while the store asks more
    assert text(browser, "#store-confirmations") == (
        "This store asks for at least 2 confirmations: this device's setting (0) is raised to 2."
    )
    click(browser, "#settings-close")

    wait_text(browser, "#display", "0 XMR")
    keys(browser, "0", ".", "0", "5")
    click(browser, "#charge")
    address = sale_address(browser)
    served.payments.pay(address, XMR // 20)  # in the pool: the device alone would say Paid
    wait_text(browser, "#state-text", "Seen, waiting for the block")
    served.payments.mine(address, HEIGHT)
    served.payments.height = HEIGHT + 1
    wait_text(browser, "#state-text", "Confirming 1 of 2")
    served.payments.height = HEIGHT + 2
    wait_text(browser, "#state-text", "Paid")

    # A device may ask for more than its store.
    click(browser, "#new-sale")
    wait_text(browser, "#display", "0 XMR")
    assert device_confirmations(browser, "3") == "3"
    assert text(browser, "#store-confirmations") == (
        "This store asks for at least 2 confirmations; this device may ask for more."
    )


def test_the_last_20_sales_of_this_device(browser: WebDriver, served: Served) -> None:
    sign_in(browser, served)
    wait_text(browser, "#display", "0 XMR")
    older = [
        {
            "address": f"8Old{n:02d}",
            "amount": str(n * XMR),
            "note": f"old {n}",
            "at": "2026-11-20T10:00:00Z",
            "state": "paid",
            "label": "Paid",
        }
        for n in range(1, 21)
    ]
    browser.execute_script(
        "localStorage.setItem('xmrgate.pos.sales', arguments[0]);", json.dumps(older)
    )
    keys(browser, "3")
    click(browser, "#charge")
    address = sale_address(browser)
    wait_for(browser, "the QR code", lambda: qr_loaded(browser))
    click(browser, "#new-sale")
    listed = wait_for(browser, "the list", lambda: recent(browser))
    assert len(listed) == 20
    assert listed[0]["address"] == address and listed[0]["state"] == "waiting"
    assert "3 XMR" in listed[0]["text"] and "Waiting" in listed[0]["text"]
    assert [x["address"] for x in listed[1:]] == [f"8Old{n:02d}" for n in range(1, 20)]
    screenshots(browser, "pos-sales", docs=False)


def test_a_key_without_pos_is_refused(browser: WebDriver, served: Served) -> None:
    sign_in(browser, served, SHOP_A)
    said = wait_for(browser, "the refusal", lambda: text(browser, "#login-error"))
    assert "'pos' scope" in said
    assert displayed(browser, "#api-key") is not None
    assert page_errors(browser, "status of 403") == []
