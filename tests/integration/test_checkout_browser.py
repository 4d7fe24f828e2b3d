"""The hosted checkout page in a real headless Chromium against a real regtest gateway.

One payment request goes waiting -> seen (partial) -> paid while the page stays
open: the page must follow by polling, never by reloading. Screenshots of every
state (phone light/dark, desktop) go to ``test-artifacts/checkout/``; the three
phone ones in light mode also to ``docs/img/`` when XMRGATE_UPDATE_DOC_IMAGES=1.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from testsupport.browser import start_chromium
from testsupport.gateway import Gateway
from xmrgate.devnet import Devnet
from xmrgate.web.checkout.qr import payment_uri

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "checkout"
DOCS_IMG = REPO / "docs" / "img"
PHONE = (390, 844)
DESKTOP = (1280, 800)

AMOUNT = 1_234_500_000_000  # 1.2345 XMR
PART = 500_000_000_000  # 0.5 XMR
DESCRIPTION = "Order #42: 2 coffees <b>& a croissant</b>"
RETURN_URL = "https://shop.example/thanks?order=42&lang=en"

# No skips: CI installs chromium, chromium-driver and zbar-tools (make system-deps), and a
# missing one fails the test with a message saying which.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    # The page reads through PaymentStore like GET /receive, which test_api covers on
    # both backends; one backend keeps this slow test to one regtest wallet.
    pytest.mark.parametrize("gateway", ["sqlite"], indirect=True),
]


# ------------------------------------------------------------------ helpers


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """Headless Chromium from Debian, driven by its chromedriver (nothing downloaded)."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    driver = start_chromium(profile, width=PHONE[0], height=PHONE[1], console=True)
    try:
        yield driver
    finally:
        driver.quit()


def emulate(driver: WebDriver, size: tuple[int, int], dark: bool = False) -> None:
    """Viewport (phone sizes as a mobile device) and colour scheme, without a reload."""
    width, height = size
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]},
    )


def screenshot(driver: WebDriver, name: str) -> Path:
    """A full-page PNG into test-artifacts/checkout/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    viewport = metrics["cssLayoutViewport"]
    content = metrics["cssContentSize"]
    clip = {
        "x": 0,
        "y": 0,
        "width": viewport["clientWidth"],
        "height": max(content["height"], viewport["clientHeight"]),
        "scale": 1,
    }
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    path = ARTIFACTS / f"{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def screenshots(driver: WebDriver, state: str, docs: bool = True) -> None:
    """Phone and desktop, light and dark; the light phone one also to docs/img/."""
    emulate(driver, PHONE)
    phone = screenshot(driver, f"{state}-phone")
    # The committed doc images change only when asked: XMRGATE_UPDATE_DOC_IMAGES=1.
    if docs and os.environ.get("XMRGATE_UPDATE_DOC_IMAGES") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(phone, DOCS_IMG / f"checkout-{state}.png")
    emulate(driver, PHONE, dark=True)
    screenshot(driver, f"{state}-phone-dark")
    emulate(driver, DESKTOP)
    screenshot(driver, f"{state}-desktop")
    emulate(driver, DESKTOP, dark=True)
    screenshot(driver, f"{state}-desktop-dark")
    emulate(driver, PHONE)


def wait_for(
    driver: WebDriver,
    what: str,
    probe: Callable[[WebDriver], Any],
    timeout: float,
    done: Callable[[Any], bool] = bool,
) -> Any:
    """Poll ``probe`` until ``done(value)``; fail with ``what``, the last value and page state."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe(driver)
        except StaleElementReferenceException:
            # The page redrew the element between finding and reading it (the QR code of
            # the rest due replaces the first one): read again, as test_admin_browser does.
            last = None
        else:
            if done(last):
                return last
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    state = driver.find_element(By.ID, "checkout").get_attribute("data-state")
    raise AssertionError(
        f"timed out after {timeout:g}s waiting for {what}; last seen {last!r}; page state {state!r}"
    )


def page_state(driver: WebDriver) -> str | None:
    return driver.find_element(By.ID, "checkout").get_attribute("data-state")


def visible_text(driver: WebDriver, css: str) -> str:
    element = driver.find_element(By.CSS_SELECTOR, css)
    assert element.is_displayed(), f"{css} is not displayed"
    return element.text


def zbar(png: bytes, tmp_path: Path) -> str:
    """Decode a QR code image with zbarimg; fail (never skip) when it is not installed."""
    zbarimg = shutil.which("zbarimg")
    if zbarimg is None:
        pytest.fail("zbarimg not found: install Debian's zbar-tools (make system-deps)")
    path = tmp_path / "qr.png"
    path.write_bytes(png)
    out = subprocess.run(
        [zbarimg, "--raw", "-q", str(path)], capture_output=True, timeout=30, check=False
    )
    # 0: read a code; 4: found none (then "" is what a camera would read, too).
    assert out.returncode in (0, 4), f"zbarimg failed ({out.returncode}): {out.stderr!r}"
    return out.stdout.decode().strip()


def qr_from_page(driver: WebDriver, tmp_path: Path) -> str:
    """What a phone camera would read from the QR code as the browser draws it."""
    svg: WebElement = driver.find_element(By.CSS_SELECTOR, "svg.qr")
    return zbar(svg.screenshot_as_png, tmp_path)


def console_errors(driver: WebDriver) -> list[str]:
    """Console errors since the last call: CSP blocks, failed scripts, failed requests."""
    entries: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    return [str(entry["message"]) for entry in entries if entry["level"] == "SEVERE"]


# ------------------------------------------------------------------ HTTP level


def test_unknown_address_is_a_404_page(gateway: Gateway) -> None:
    """An unknown address gets a proper HTML page with status 404; status.json a JSON 404."""
    r = gateway.get("/pay/8UnknownAddressThatWasNeverHandedOut")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    assert "Payment request not found" in r.text
    assert r.headers["content-security-policy"].startswith("default-src 'none'")
    r = gateway.get("/pay/8UnknownAddressThatWasNeverHandedOut/status.json")
    assert r.status_code == 404
    assert r.json()["status"] == 404


def test_page_headers_and_status_json(gateway: Gateway) -> None:
    """A fresh request: the page with security headers, status.json waiting, qr.svg an image."""
    address = gateway.receive(AMOUNT, description=DESCRIPTION)["address"]
    r = gateway.get(f"/pay/{address}")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp
    assert "script-src 'sha256-" in csp
    assert "unsafe" not in csp
    assert len(r.content) < 50 * 1024
    assert "Order #42: 2 coffees &lt;b&gt;&amp; a croissant&lt;/b&gt;" in r.text

    body = gateway.get(f"/pay/{address}/status.json").json()
    assert body == {
        "state": "waiting",
        "expected": AMOUNT,
        "received": 0,
        "unlocked": 0,
        "due": AMOUNT,
        "expected_xmr": "1.2345",
        "received_xmr": "0",
        "unlocked_xmr": "0",
        "due_xmr": "1.2345",
        "confirmations": 0,
        "required_confirmations": 10,
        "complete": False,
        # Invoices (docs/invoices.md): no expiry asked, so no countdown.
        "status": "waiting",
        "expires_at": None,
        "seconds_left": None,
        "overpaid": 0,
        "overpaid_xmr": "0",
        "uri": payment_uri(address, AMOUNT, DESCRIPTION),
    }
    r = gateway.get(f"/pay/{address}/qr.svg")
    assert r.headers["content-type"].startswith("image/svg+xml")
    assert r.text.startswith('<svg xmlns="http://www.w3.org/2000/svg"')


# ------------------------------------------------------------------ the browser


def test_checkout_follows_payment_live(
    gateway: Gateway, devnet: Devnet, browser: WebDriver, tmp_path: Path
) -> None:
    """Waiting -> partial payment seen -> paid with the return link, all without a reload."""
    address = gateway.receive(AMOUNT, description=DESCRIPTION, return_url=RETURN_URL)["address"]
    emulate(browser, PHONE)
    browser.get(f"{gateway.url}/pay/{address}")
    browser.execute_script("window.__loadedOnce = 'first-load';")

    # --- waiting
    assert page_state(browser) == "waiting"
    assert visible_text(browser, "#amount") == "1.2345"
    assert visible_text(browser, ".big") == "1.2345 XMR"
    assert visible_text(browser, "#address") == address
    assert visible_text(browser, ".desc") == DESCRIPTION
    assert "Waiting for payment" in visible_text(browser, "#status")
    assert not browser.find_element(By.ID, "return-link").is_displayed()
    assert qr_from_page(browser, tmp_path) == payment_uri(address, AMOUNT, DESCRIPTION)
    assert browser.title == "Pay 1.2345 XMR"

    screenshots(browser, "waiting")

    # The copy button is a real button, reachable by keyboard, and copies the address.
    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {"origin": gateway.url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    body = browser.find_element(By.TAG_NAME, "body")
    body.click()
    for _ in range(10):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        if browser.switch_to.active_element.get_attribute("id") == "copy":
            break
    copy = browser.switch_to.active_element
    assert copy.get_attribute("id") == "copy", "copy button not reachable with Tab"
    assert copy.tag_name == "button"
    copy.send_keys(Keys.ENTER)
    wait_for(
        browser,
        "copy confirmation",
        lambda d: d.find_element(By.ID, "copy-status").get_attribute("textContent"),
        5,
    )
    assert browser.find_element(By.ID, "copy-status").get_attribute("textContent") == (
        "Address copied."
    )
    clipboard = browser.execute_async_script(
        "navigator.clipboard.readText().then(arguments[0], e => arguments[0]('ERR ' + e));"
    )
    assert clipboard == address
    # The label comes back, so the next screenshots show the page as a buyer sees it.
    wait_for(browser, "copy label reset", lambda _d: copy.text, 5, lambda t: t == "Copy address")
    browser.execute_script("document.activeElement.blur();")

    # --- seen: part of the amount arrives
    devnet.pay(address, PART, mine_blocks=1)
    wait_for(browser, "state seen", page_state, 90, lambda state: state == "seen")
    status = visible_text(browser, "#status")
    assert "Partial payment received" in status
    assert "Received 0.5 XMR." in status
    assert "0.7345 XMR still due." in status
    assert "of 10" in status
    # The QR code and wallet link now ask for the rest only.
    rest_uri = payment_uri(address, AMOUNT - PART, DESCRIPTION)
    wait_for(
        browser,
        "wallet link for the rest",
        lambda d: d.find_element(By.ID, "wallet-link").get_attribute("href"),
        10,
        lambda href: href == rest_uri,
    )
    wait_for(
        browser,
        "QR code for the rest",
        lambda d: qr_from_page(d, tmp_path),
        10,
        lambda text: text == rest_uri,
    )
    screenshots(browser, "seen")

    # --- paid: the rest arrives and unlocks
    devnet.pay(address, AMOUNT - PART, mine_blocks=1)
    wait_for(
        browser,
        "full amount seen",
        lambda d: d.find_element(By.ID, "status").text,
        90,
        lambda text: "Payment received" in text,
    )
    assert "Confirmations:" in visible_text(browser, "#status")
    assert not browser.find_element(By.CSS_SELECTOR, "svg.qr").is_displayed()
    screenshots(browser, "confirming", docs=False)
    devnet.mine(11)
    wait_for(browser, "state paid", page_state, 120, lambda state: state == "paid")
    assert "Paid. Thank you!" in visible_text(browser, "#status")
    assert "Received 1.2345 XMR." in visible_text(browser, "#status")
    back = browser.find_element(By.ID, "return-link")
    assert back.is_displayed()
    assert back.text == "Back to the shop"
    assert back.get_attribute("href") == RETURN_URL
    assert not browser.find_element(By.CSS_SELECTOR, "svg.qr").is_displayed()
    assert not browser.find_element(By.ID, "copy").is_displayed()
    assert browser.title == "Paid: 1.2345 XMR"
    screenshots(browser, "paid")

    # Never reloaded: the marker set after the first load is still there.
    assert browser.execute_script("return window.__loadedOnce;") == "first-load"
    assert browser.execute_script("return performance.getEntriesByType('navigation').length;") == 1
    assert console_errors(browser) == []
    assert gateway.status(address)["complete"] is True


class PrefixProxy:
    """A reverse proxy publishing the gateway under ``/shop/xmr`` (prefix stripped)."""

    PREFIX = "/shop/xmr"

    def __init__(self, upstream: str) -> None:
        self.paths: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                proxy.paths.append(self.path)
                if not self.path.startswith(proxy.PREFIX + "/"):
                    self.send_error(404)
                    return
                r = httpx.get(upstream + self.path[len(proxy.PREFIX) :], timeout=30)
                self.send_response(r.status_code)
                for name, value in r.headers.items():
                    if name.lower() not in (
                        "content-length",
                        "content-encoding",
                        "connection",
                        "transfer-encoding",
                        "date",
                        "server",
                    ):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.PREFIX}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def test_page_works_behind_a_path_prefix(gateway: Gateway, browser: WebDriver) -> None:
    """Behind a proxy under /shop/xmr the page polls /shop/xmr/pay/<address>/status.json."""
    address = gateway.receive(AMOUNT)["address"]
    proxy = PrefixProxy(gateway.url)
    try:
        browser.get(f"{proxy.url}/pay/{address}")
        assert page_state(browser) == "waiting"
        wanted = f"{PrefixProxy.PREFIX}/pay/{address}/status.json"
        wait_for(
            browser,
            "a status poll through the proxy",
            lambda _d: list(proxy.paths),
            15,
            lambda paths: wanted in paths,
        )
        assert all(p.startswith(PrefixProxy.PREFIX + "/") for p in proxy.paths), proxy.paths
        assert not browser.find_element(By.ID, "conn").is_displayed()
        assert console_errors(browser) == []
    finally:
        proxy.close()
