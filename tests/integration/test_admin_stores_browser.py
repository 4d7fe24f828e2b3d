"""The dashboard's store switcher in a real headless Chromium against a real regtest gateway.

Three stores on one gateway (the default one, ``shop-b``, and ``shop-c`` disabled), each
default and ``shop-b`` with one payment request made through the API. An operator key
(configured, no scopes listed: it has ``admin``) sees a select of the stores in the
header; choosing ``shop-b`` makes the list show ``shop-b``'s request only, survives a
reload (sessionStorage), and a request made in the form lands in ``shop-b``. A store key
and a configured key without ``admin`` see no switcher, only the store they act on, and
the overview degrades for the store key (``GET /status`` is the operator's: 404).

Screenshots (phone and desktop, light and dark) go to ``test-artifacts/admin/stores-*``.
The tests run in order and share the module's gateway and stores.
"""

# ruff: noqa: F811

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.support.select import Select

from tests.integration.test_admin_browser import (
    DESKTOP,
    css,
    log_in,
    page_errors,
    screenshots,
    text_of,
    wait_for,
)

# The checkout test's Chromium fixture; tests name it as a parameter (hence F811 above).
from tests.integration.test_checkout_browser import browser, emulate  # noqa: F401
from testsupport.gateway import Gateway

OPERATOR_KEY = "stores-operator-key-0123456789"
READER_KEY = "stores-reader-key-0123456789"
# No address pools: each store's would make 250 subaddresses at start, which this test of
# the page does not need (a request asks the wallet for one).
GATEWAY_ARGS = [
    "--api-key",
    f"{OPERATOR_KEY} {READER_KEY}:read+receive",
    "--address-pool-size",
    "0",
]
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}
XMR = 10**12

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    # Which store a call acts on is the API's (test_stores.py covers both backends); one
    # backend keeps this browser test to one regtest wallet.
    pytest.mark.parametrize("gateway", ["sqlite"], indirect=True),
]


@dataclass(frozen=True)
class Shops:
    """What the module's tests share: a request in each store, and shop-b's key."""

    default_address: str
    shop_b_address: str
    shop_b_key: str


def on(store: str) -> dict[str, str]:
    """The operator's headers acting on ``store``."""
    return {**OPERATOR, "X-Xmrgate-Store": store}


def addresses_of(gateway: Gateway, headers: dict[str, str]) -> list[str]:
    """The addresses ``GET /receive`` lists for these headers, newest first."""
    r = gateway.get("/receive", headers=headers)
    assert r.status_code == 200, r.text
    return [item["address"] for item in r.json()["requests"]]


@pytest.fixture(scope="module")
def shops(gateway: Gateway) -> Shops:
    """shop-b (with a store key) and shop-c (disabled), and a request in default and shop-b."""
    for store_id, name in (("shop-b", "Shop B"), ("shop-c", "Shop C")):
        r = gateway.post(
            "/stores",
            json={"id": store_id, "name": name, "wallet": {"account": "new"}},
            headers=OPERATOR,
        )
        assert r.status_code == 200, r.text
    r = gateway.client.patch(
        gateway.url + "/stores/shop-c", json={"enabled": False}, headers=OPERATOR
    )
    assert r.status_code == 200 and r.json()["enabled"] is False, r.text
    key = gateway.post(
        "/stores/shop-b/keys", json={"scopes": ["read", "receive"]}, headers=OPERATOR
    )
    assert key.status_code == 200, key.text
    made = {}
    for store_id in ("default", "shop-b"):
        r = gateway.post(
            "/receive",
            json={"amount": XMR, "description": f"Order of {store_id}"},
            headers=on(store_id),
        )
        assert r.status_code == 200, r.text
        made[store_id] = r.json()["address"]
    assert addresses_of(gateway, OPERATOR) == [made["default"]]
    assert addresses_of(gateway, on("shop-b")) == [made["shop-b"]]
    return Shops(made["default"], made["shop-b"], key.json()["key"])


def listed(driver: WebDriver) -> list[str]:
    """The addresses of the requests list as the page shows it (empty while none)."""
    return [r.get_attribute("data-address") or "" for r in css(driver, "#request-list tbody tr")]


def wait_listed(driver: WebDriver, expected: list[str], what: str) -> None:
    wait_for(driver, what, listed, 20, lambda found: found == expected)


def stored(driver: WebDriver, name: str) -> Any:
    return driver.execute_script("return sessionStorage.getItem(arguments[0]);", name)


def chosen(driver: WebDriver) -> str | None:
    found = css(driver, "#store-select")
    return Select(found[0]).first_selected_option.get_attribute("value") if found else None


def no_error_shown(driver: WebDriver) -> bool:
    return not css(driver, "#main .notice.error")


def choose(driver: WebDriver, store_id: str) -> None:
    Select(css(driver, "#store-select")[0]).select_by_value(store_id)


def test_operator_switches_store_and_the_choice_survives_a_reload(
    gateway: Gateway, browser: WebDriver, shops: Shops
) -> None:
    emulate(browser, DESKTOP)
    browser.get(f"{gateway.url}/admin#/requests")
    log_in(browser, OPERATOR_KEY)
    wait_for(browser, "the store switcher", lambda d: css(d, "#store-select"), 30)
    options = [
        (o.get_attribute("value"), o.text) for o in Select(css(browser, "#store-select")[0]).options
    ]
    assert [value for value, _ in options] == ["default", "shop-b", "shop-c"]
    labels = dict(options)
    assert "Shop B" in labels["shop-b"] and "disabled" not in labels["shop-b"]
    assert "Shop C" in labels["shop-c"] and "disabled" in labels["shop-c"]
    assert css(browser, "label[for=store-select]")[0].text == "Store"
    assert chosen(browser) == "default"
    assert stored(browser, "xmrgate.store") is None  # nothing chosen yet: no header
    wait_listed(browser, [shops.default_address], "the default store's request")

    choose(browser, "shop-b")
    wait_listed(browser, [shops.shop_b_address], "shop-b's request only")
    assert stored(browser, "xmrgate.store") == "shop-b"
    assert css(browser, "#store-state .badge") == []

    browser.refresh()  # the choice is kept in the tab
    wait_listed(browser, [shops.shop_b_address], "shop-b's request after a reload")
    assert chosen(browser) == "shop-b"
    screenshots(browser, "stores-requests")

    # A disabled store is marked, and its (empty) history still opens.
    choose(browser, "shop-c")
    wait_for(
        browser,
        "the 'disabled' mark",
        text_of("#store-state .badge"),
        10,
        lambda t: t == "disabled",
    )
    wait_for(browser, "shop-c's empty list", text_of("#results"), 20, lambda t: "No payment" in t)
    choose(browser, "shop-b")
    wait_listed(browser, [shops.shop_b_address], "shop-b's request again")

    # The overview: GET /status is the default store's, so shop-b's is its own.
    browser.get(f"{gateway.url}/admin#/")
    wait_for(browser, "shop-b's overview", text_of("#store-note"), 30, lambda t: "shop-b" in t)
    wait_for(browser, "shop-b's balance", text_of("#balance-total"), 10, lambda t: t == "0 XMR")
    latest = [e.get_attribute("data-address") for e in css(browser, "#latest-list li")]
    assert latest == [shops.shop_b_address]
    assert no_error_shown(browser)
    screenshots(browser, "stores-overview")

    # A request made in the form goes to the chosen store.
    browser.get(f"{gateway.url}/admin#/new")
    wait_for(browser, "the form", lambda d: css(d, "#new-form"), 15)
    css(browser, "#new-amount")[0].send_keys("0.25")
    css(browser, "#new-description")[0].send_keys("made in shop-b's dashboard")
    css(browser, "#new-submit")[0].click()
    address = wait_for(browser, "the new request's page", text_of("#req-address"), 30)
    assert addresses_of(gateway, on("shop-b")) == [address, shops.shop_b_address]
    assert gateway.get(f"/receive/{address}", headers=OPERATOR).status_code == 404

    # Back to the default store: the gateway's own overview again.
    browser.get(f"{gateway.url}/admin#/")
    wait_for(browser, "the store switcher", lambda d: css(d, "#store-select"), 30)
    choose(browser, "default")
    wait_for(browser, "the gateway's overview", lambda d: css(d, "#card-wallet"), 30)
    assert stored(browser, "xmrgate.store") == "default"
    assert css(browser, "#store-note") == []
    assert page_errors(browser) == []


def test_store_key_sees_its_own_store_and_no_switcher(
    gateway: Gateway, browser: WebDriver, shops: Shops
) -> None:
    emulate(browser, DESKTOP)
    # An operator's tab that had chosen the default store signs out, and the shop signs in.
    browser.get(f"{gateway.url}/admin")
    browser.execute_script(
        "sessionStorage.setItem('xmrgate.apiKey', arguments[0]);"
        "sessionStorage.setItem('xmrgate.store', 'default');"
        "location.hash = '#/requests';",
        OPERATOR_KEY,
    )
    browser.refresh()
    wait_for(browser, "the operator's switcher", chosen, 30, lambda v: v == "default")
    css(browser, "#logout")[0].click()
    assert stored(browser, "xmrgate.store") is None
    log_in(browser, shops.shop_b_key)

    own = addresses_of(gateway, {"Authorization": f"Bearer {shops.shop_b_key}"})
    assert shops.shop_b_address in own and shops.default_address not in own
    wait_listed(browser, own, "shop-b's requests, as its key lists them")
    wait_for(
        browser,
        "the store shown",
        text_of("#store-name"),
        10,
        lambda t: t == "this key's own store",
    )
    assert css(browser, "#store-select") == []
    assert stored(browser, "xmrgate.store") is None
    assert no_error_shown(browser)

    # The overview: GET /status answers 404 to a store key; the page shows the store's own.
    browser.get(f"{gateway.url}/admin#/")
    wait_for(browser, "the store's overview", text_of("#store-note"), 30, lambda t: "key" in t)
    wait_for(browser, "the balance", text_of("#balance-total"), 10, lambda t: t == "0 XMR")
    assert text_of("#health-status")(browser) == "Healthy"
    latest = [e.get_attribute("data-address") for e in css(browser, "#latest-list li")]
    assert latest == own[:5]
    wait_for(browser, "the chart", lambda d: css(d, "#received rect.bar"), 10)
    assert no_error_shown(browser)
    assert css(browser, "#store-select") == []
    screenshots(browser, "stores-own-overview")
    assert page_errors(browser) == []


def test_key_without_admin_acts_on_the_default_store_without_a_switcher(
    gateway: Gateway, browser: WebDriver, shops: Shops
) -> None:
    browser.get(f"{gateway.url}/admin")
    browser.execute_script("sessionStorage.clear(); location.hash = '#/requests';")
    browser.refresh()
    log_in(browser, READER_KEY)
    wait_listed(browser, [shops.default_address], "the default store's request")
    probe: Callable[[WebDriver], str] = text_of("#store-name")
    wait_for(browser, "the store shown", probe, 10, lambda t: t == "default")
    assert css(browser, "#store-select") == []
    browser.get(f"{gateway.url}/admin#/")
    wait_for(browser, "the gateway's overview", lambda d: css(d, "#card-wallet"), 30)
    assert css(browser, "#store-note") == [] and no_error_shown(browser)
    assert page_errors(browser) == []
