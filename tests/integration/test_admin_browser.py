"""The dashboard at /admin in a real headless Chromium against a real regtest gateway.

An operator signs in with an API key, creates a payment request in the form, and
watches it go waiting -> paid -> complete as it is paid and mined; its callbacks fail
(the receiver answers 500) until given up, and "Deliver again" shows the new try. The
list is filtered, searched and paged; a payout whose outcome is unknown is marked on
the payouts page; a key without the 'receive' scope is refused and told why. The
browser runs in UTC+05:30 so that local times and the chart's days are not UTC's.

Screenshots of every page (phone and desktop, light and dark) go to
``test-artifacts/admin/``; the desktop light ones also to ``docs/img/`` when
XMRGATE_UPDATE_DOC_IMAGES=1. The tests run in order and share the module's gateway.
"""

# ruff: noqa: F811

from __future__ import annotations

import base64
import os
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from tests.integration.callback_support import mine_until_unlocked, transfer_height
from tests.integration.receiver import Receiver, start_receiver

# The checkout test's Chromium fixture; tests name it as a parameter (hence F811 above).
from tests.integration.test_checkout_browser import browser, emulate  # noqa: F401
from testsupport.gateway import Gateway
from xmrgate.devnet import Devnet
from xmrgate.domain.money import piconero_to_xmr

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "admin"
DOCS_IMG = REPO / "docs" / "img"
PHONE = (390, 844)
DESKTOP = (1280, 800)
TIMEZONE = "Asia/Kolkata"  # UTC+05:30, no daylight saving time
OFFSET = timedelta(hours=5, minutes=30)

ADMIN_KEY = "dashboard-admin-key-0123456789"
READER_KEY = "dashboard-reader-key-0123456789"
XMR = 10**12
AMOUNT = 1_234_500_000_000  # 1.2345 XMR
DESCRIPTION = "Order #7: 2 teas <b>& a scone</b>"
STATE: dict[str, str] = {}

GATEWAY_ARGS = [
    "--api-key",
    f"{ADMIN_KEY}:read+receive+transfer {READER_KEY}:read",
    # A failing callback is given up after a few seconds (tries at ~0, 1, 3 s).
    "--callback-retry-base",
    "1s",
    "--callback-retry-for",
    "4s",
    # The wallet needs far longer than this to build a transaction: every payout here
    # times out after the wallet was asked, which is the "outcome unknown" case.
    "--transfer-timeout",
    "50ms",
]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    # The pages read the API, whose stores tests/db and test_api cover on both backends;
    # one backend keeps this slow test to one regtest wallet.
    pytest.mark.parametrize("gateway", ["sqlite"], indirect=True),
]


# ------------------------------------------------------------------ fixtures and helpers


@pytest.fixture(scope="module")
def hook() -> Iterator[Receiver]:
    """The shop's callback receiver, alive for the whole module (the URL is stored)."""
    r = start_receiver()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture(autouse=True)
def api_key(gateway: Gateway) -> None:
    """The test's own API calls (creating requests, reading answers) use the admin key."""
    gateway.client.headers["Authorization"] = f"Bearer {ADMIN_KEY}"


@pytest.fixture(autouse=True)
def local_time(browser: WebDriver) -> None:
    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": TIMEZONE})


def wait_for(
    driver: WebDriver,
    what: str,
    probe: Callable[[WebDriver], Any],
    timeout: float,
    done: Callable[[Any], bool] = bool,
) -> Any:
    """Poll ``probe`` until ``done(value)``; fail saying what, the last value and the page."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe(driver)
        except StaleElementReferenceException:  # redrawn between find and read
            last = None
        else:
            if done(last):
                return last
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    text = driver.find_element(By.ID, "main").text[:1500]
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; last {last!r}; {text}")


def css(driver: WebDriver, selector: str) -> list[WebElement]:
    return driver.find_elements(By.CSS_SELECTOR, selector)


def text_of(selector: str) -> Callable[[WebDriver], str]:
    return lambda d: " ".join(e.text for e in css(d, selector))


def attr_of(selector: str, name: str) -> Callable[[WebDriver], str | None]:
    def probe(d: WebDriver) -> str | None:
        found = css(d, selector)
        return found[0].get_attribute(name) if found else None

    return probe


def go(driver: WebDriver, gateway: Gateway, fragment: str, ready: str) -> None:
    """Open a page of the dashboard and wait until ``ready`` (a CSS selector) is shown."""
    driver.get(f"{gateway.url}/admin#{fragment}")
    wait_for(driver, f"{ready} on #{fragment}", lambda d: css(d, ready), 30)


def log_in(driver: WebDriver, key: str) -> None:
    field = wait_for(driver, "the sign-in form", lambda d: css(d, "#login #api-key"), 15)[0]
    field.clear()
    field.send_keys(key)
    css(driver, "#login button[type=submit]")[0].click()


def page_errors(driver: WebDriver) -> list[str]:
    """Console errors other than the browser's note about 4xx answers (refusals we provoke)."""
    entries: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    return [
        str(e["message"])
        for e in entries
        if e["level"] == "SEVERE" and "the server responded with a status of 4" not in e["message"]
    ]


def screenshot(driver: WebDriver, name: str, max_height: int = 2400) -> Path:
    """A full-page PNG (at most ``max_height`` pixels tall) into test-artifacts/admin/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    viewport = metrics["cssLayoutViewport"]
    clip = {
        "x": 0,
        "y": 0,
        "width": viewport["clientWidth"],
        "height": min(
            max(metrics["cssContentSize"]["height"], viewport["clientHeight"]), max_height
        ),
        "scale": 1,
    }
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    path = ARTIFACTS / f"{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def screenshots(driver: WebDriver, page: str, max_height: int = 2400) -> None:
    """Phone and desktop, light and dark; nothing wider than a phone's screen."""
    for size, label in ((PHONE, "phone"), (DESKTOP, "desktop")):
        for dark in (False, True):
            emulate(driver, size, dark)
            time.sleep(0.1)
            overflow = driver.execute_script(
                "return document.documentElement.scrollWidth - window.innerWidth;"
            )
            assert overflow <= 0, f"{page} is {overflow}px wider than the {label} screen"
            shot = screenshot(driver, f"{page}-{label}{'-dark' if dark else ''}", max_height)
            if label == "desktop" and not dark and os.environ.get("XMRGATE_UPDATE_DOC_IMAGES"):
                DOCS_IMG.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(shot, DOCS_IMG / f"admin-{page}.png")
    emulate(driver, DESKTOP)


# ------------------------------------------------------------------ the tests, in order


def test_sign_in_with_a_key_kept_in_the_tab(gateway: Gateway, browser: WebDriver) -> None:
    """With API keys the dashboard asks for one; a wrong one is refused; the right one opens
    the overview and lives in sessionStorage only."""
    emulate(browser, DESKTOP)
    browser.get(f"{gateway.url}/admin")
    log_in(browser, "not-a-key-of-this-gateway")
    wait_for(browser, "the refusal", text_of("#login .notice"), 15, lambda t: "refused" in t)
    assert browser.execute_script("return sessionStorage.length;") == 0
    screenshots(browser, "sign-in")

    log_in(browser, ADMIN_KEY)
    wait_for(browser, "health", text_of("#health-status"), 30, lambda t: t == "Healthy")
    assert text_of("#wallet-mode")(browser) == "full"
    assert text_of("#sync-behind")(browser) in ("up to date", "1 blocks", "2 blocks")
    stored = browser.execute_script(
        "return [sessionStorage.getItem('xmrgate.apiKey'), localStorage.length, document.cookie];"
    )
    assert stored == [ADMIN_KEY, 0, ""]
    assert not css(browser, "#key-state")[0].get_attribute("hidden")
    assert page_errors(browser) == []


def test_request_from_the_form_goes_waiting_paid_complete(
    gateway: Gateway,
    devnet: Devnet,
    browser: WebDriver,
    hook: Receiver,
) -> None:
    """Created in the form, then followed live on its page while it is paid and mined."""
    hook.responses[:] = [500] * 1000  # the shop is broken: every callback fails
    go(browser, gateway, "/new", "#new-form")
    css(browser, "#new-amount")[0].send_keys("1.2345")
    css(browser, "#new-description")[0].send_keys(DESCRIPTION)
    css(browser, "#new-callback")[0].send_keys(hook.url)
    screenshots(browser, "new-request")
    css(browser, "#new-submit")[0].click()
    address = wait_for(browser, "the new request's page", text_of("#req-address"), 30)
    STATE["address"] = address
    assert browser.current_url.endswith("#/request/" + address)
    assert gateway.status(address)["amount"]["expected"] == AMOUNT
    assert text_of("#req-expected")(browser) == "1.2345 XMR"
    assert text_of("#req-due")(browser) == "1.2345 XMR"
    assert attr_of("#req-status", "data-status")(browser) == "waiting"
    assert DESCRIPTION in text_of("#request")(browser)  # as text, not as markup
    link = css(browser, "#checkout-link")[0].get_attribute("href")
    assert link == f"{gateway.url}/pay/{address}"

    seen: list[str] = []

    def status(d: WebDriver) -> str | None:
        value = attr_of("#req-status", "data-status")(d)
        if value and (not seen or seen[-1] != value):
            seen.append(value)
        return value

    tx_hash = devnet.pay(address, AMOUNT, mine_blocks=1)
    wait_for(browser, "paid", status, 60, lambda s: s == "paid")
    wait_for(browser, "the transaction", attr_of("#tx-list tbody tr", "data-tx"), 30)
    assert text_of("#req-received")(browser) == "1.2345 XMR"
    assert text_of("#req-unlocked")(browser) == "0 XMR"
    mine_until_unlocked(devnet, transfer_height(gateway, address, tx_hash))
    wait_for(browser, "complete", status, 90, lambda s: s == "complete")
    assert seen[0] == "waiting" and seen[-1] == "complete" and "paid" in seen, seen
    assert text_of("#req-unlocked")(browser) == "1.2345 XMR"
    assert text_of("#req-due")(browser) == "0 XMR"
    assert text_of("#req-complete")(browser).endswith("yes")
    confirmations = int(text_of("#tx-list tbody tr td:nth-child(3)")(browser))
    assert confirmations >= 10
    # Times: the browser's zone on the page, UTC on hover.
    stamp = css(browser, "#request time")[0]
    at = datetime.fromisoformat(str(stamp.get_attribute("datetime")).replace("Z", "+00:00"))
    assert stamp.get_attribute("title") == at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert (at + OFFSET).strftime("%H:%M") in stamp.text or (at + OFFSET).strftime("%-I:%M") in (
        stamp.text
    )
    assert page_errors(browser) == []


def test_failed_callback_delivered_again_shows_the_new_try(
    gateway: Gateway,
    browser: WebDriver,
    hook: Receiver,
) -> None:
    """Both callbacks fail for good (HTTP 500 each try); "Deliver again" on one of them,
    with the shop fixed, shows a new try answered 200 and the callback delivered."""
    address = STATE["address"]
    go(browser, gateway, f"/request/{address}", "#req-status")
    failed = wait_for(
        browser,
        "both callbacks failed",
        lambda d: [e.get_attribute("data-callback") for e in css(d, "article[data-status=failed]")],
        60,
        lambda ids: len(ids) == 2,
    )
    first = failed[0]
    card = f"article[data-callback='{first}']"
    tries = int(text_of(f"{card} .tries-count")(browser))
    assert tries >= 2
    rows = css(browser, f"{card} table.tries tbody tr")
    assert len(rows) == tries
    assert all("HTTP 500" in r.text for r in rows)
    before = len(hook.attempts)

    hook.responses.clear()  # the shop is fixed: 200 from now on
    css(browser, f"{card} button[data-retry]")[0].click()
    wait_for(browser, "delivered", attr_of(card, "data-status"), 30, lambda s: s == "delivered")
    wait_for(
        browser, "the new try", text_of(f"{card} .tries-count"), 10, lambda t: t == str(tries + 1)
    )
    last = css(browser, f"{card} table.tries tbody tr")[-1]
    assert "HTTP 200" in last.text and "delivered" in last.text
    assert "ok" in (last.get_attribute("class") or "")
    assert len(hook.attempts) == before + 1
    assert hook.attempts[-1].answered == 200
    # The API says the same as the page.
    listed = gateway.get(f"/receive/{address}/callbacks").json()["callbacks"]
    entry = next(c for c in listed if c["id"] == first)
    assert [t["status_code"] for t in entry["tries"]] == [500] * tries + [200]
    assert entry["tries"][-1]["delivered"] is True
    screenshots(browser, "request")
    assert page_errors(browser) == []


def test_overview_shows_the_gateway_and_what_it_received(
    gateway: Gateway,
    browser: WebDriver,
) -> None:
    """Balance, callbacks failed, requests by status, and the chart from real transfers."""
    go(browser, gateway, "/", "#overview")
    balance = gateway.get("/balance").json()
    wait_for(
        browser,
        "the balance",
        text_of("#balance-total"),
        30,
        lambda t: t == f"{piconero_to_xmr(balance['total'])} XMR",
    )
    assert text_of("#callbacks-failed")(browser) == "1"
    assert text_of("[data-count=complete]")(browser) == "1"
    assert text_of("#received-total")(browser) == "1.2345 XMR"
    # Today in the browser's zone (UTC+05:30) holds the payment; 30 bars in all.
    today = (datetime.now(UTC) + OFFSET).date().isoformat()
    bars = {
        b.get_attribute("data-date"): b.get_attribute("data-amount")
        for b in css(browser, "rect.bar")
    }
    assert len(bars) == 30 and bars[today] == str(AMOUNT), bars
    daily = gateway.get("/received/daily", params={"days": 30, "utc_offset": 330}).json()
    assert daily["total"] == AMOUNT and daily["days"][-1] == {
        "date": today,
        "amount": AMOUNT,
        "count": 1,
    }
    screenshots(browser, "overview")
    assert page_errors(browser) == []


def test_list_is_filtered_searched_and_paged(gateway: Gateway, browser: WebDriver) -> None:
    """30 more requests: pages of 25, status filters, search by words and by address."""
    for i in range(27):
        gateway.receive(XMR + i, description=f"Batch item {i}")
    gateway.receive(2 * XMR, description="Two COFFEES to go")
    gateway.receive(3 * XMR, description="coffee beans, 1 kg")
    expiring = gateway.receive(XMR, description="Expires at once", expires_in=1)["address"]
    time.sleep(1.5)

    go(browser, gateway, "/requests", "#request-list")
    rows = css(browser, "#request-list tbody tr")
    assert len(rows) == 25
    assert rows[0].get_attribute("data-address") == expiring  # newest first
    screenshots(browser, "requests", max_height=1000)  # 25 rows: the top shows enough

    def listed() -> list[str]:
        return [
            r.get_attribute("data-address") or "" for r in css(browser, "#request-list tbody tr")
        ]

    def page_of(count: int, what: str) -> list[str]:
        wait_for(browser, what, lambda _d: len(listed()), 15, lambda n: n == count)
        return listed()

    css(browser, "#older")[0].click()
    assert STATE["address"] in page_of(31 - 25, "the second page")
    css(browser, "#newest")[0].click()
    page_of(25, "the first page")

    def only(statuses: list[str], search: str = "") -> list[str]:
        for box in css(browser, "#filters input[name=status]"):
            if box.is_selected() != (box.get_attribute("value") in statuses):
                box.click()
        field = css(browser, "#search")[0]
        field.clear()
        if search:
            field.send_keys(search)
        css(browser, "#apply")[0].click()
        time.sleep(0.3)
        wait_for(
            browser, "the filtered list", lambda d: css(d, "#results table, #results .notice"), 15
        )
        return listed()

    assert only(["complete"]) == [STATE["address"]]
    assert only(["expired"]) == [expiring]
    assert "status=expired" in browser.current_url
    assert len(only(["waiting"])) == 25
    assert len(only(["expired", "complete"])) == 2
    coffee = only([], "coffee")
    assert len(coffee) == 2
    assert "Two COFFEES to go" in text_of("#request-list")(browser)
    assert only([], STATE["address"]) == [STATE["address"]]  # a whole address: that request
    assert only(["waiting"], "coffee") == coffee
    assert only(["complete"], "coffee") == []
    assert "No payment request matches." in text_of("#results")(browser)
    assert page_errors(browser) == []


def test_payout_with_unknown_outcome_is_marked(
    gateway: Gateway, devnet: Devnet, browser: WebDriver
) -> None:
    """The wallet was asked and no answer came in time: the journal says 'unknown' and the
    page tells the operator to check the wallet before sending again."""
    recipient = devnet.funder.call("create_address", {"account_index": 0})["address"]
    r = gateway.post(
        "/transfer", json={"destinations": [{"amount": XMR // 10, "address": recipient}]}
    )
    assert r.status_code == 504, r.text
    go(browser, gateway, "/payouts", "#payout-list")
    row = css(browser, "#payout-list tr[data-state=unknown]")
    assert len(row) == 1
    assert "check the wallet" in row[0].text
    assert "0.1 XMR" in row[0].text
    assert "unknown outcome" in text_of("#payouts .notice")(browser)
    screenshots(browser, "payouts")
    assert page_errors(browser) == []


def test_key_without_the_scope_is_refused_and_told_why(
    gateway: Gateway, browser: WebDriver
) -> None:
    """A read-only key reads everything; deliver again and create are refused, saying why."""
    go(browser, gateway, "/", "#overview")
    css(browser, "#logout")[0].click()
    log_in(browser, READER_KEY)
    wait_for(browser, "the overview", lambda d: css(d, "#overview"), 30)
    assert browser.execute_script("return sessionStorage.getItem('xmrgate.apiKey');") == READER_KEY

    def tries() -> list[int]:
        listed = gateway.get(f"/receive/{STATE['address']}/callbacks").json()["callbacks"]
        return [len(c["tries"]) for c in listed]

    go(browser, gateway, f"/request/{STATE['address']}", "button[data-retry]")
    before = tries()
    css(browser, "button[data-retry]")[-1].click()
    said = wait_for(browser, "the refusal", text_of("p.said"), 15, lambda t: "scope" in t)
    assert "this key lacks the 'receive' scope" in said.lower()
    time.sleep(1.5)
    assert tries() == before

    go(browser, gateway, "/new", "#new-form")
    css(browser, "#new-amount")[0].send_keys("0.5")
    css(browser, "#new-submit")[0].click()
    said = wait_for(browser, "the refusal", text_of("#new-result"), 15, lambda t: "scope" in t)
    assert "this key lacks the 'receive' scope" in said.lower()
    assert page_errors(browser) == []
