"""The dashboard without API keys (a loopback gateway): open at once, as the API is.

No sign-in form, no key stored; the overview loads and a request made in the form
opens its page. (With keys: test_admin_browser.py.)
"""

# ruff: noqa: F811

from __future__ import annotations

import pytest
from selenium.webdriver import Chrome as WebDriver

from tests.integration.test_admin_browser import css, text_of, wait_for

# The checkout test's Chromium fixture; tests name it as a parameter (hence F811 above).
from tests.integration.test_checkout_browser import browser  # noqa: F401
from testsupport.gateway import Gateway

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.parametrize("gateway", ["sqlite"], indirect=True),
]


def test_without_keys_the_dashboard_is_open(gateway: Gateway, browser: WebDriver) -> None:
    browser.get(f"{gateway.url}/admin")
    wait_for(browser, "health", text_of("#health-status"), 30, lambda t: t == "Healthy")
    assert css(browser, "#login") == []
    assert css(browser, "#key-state")[0].get_attribute("hidden") is not None
    assert browser.execute_script("return sessionStorage.length;") == 0

    browser.get(f"{gateway.url}/admin#/new")
    wait_for(browser, "the form", lambda d: css(d, "#new-form"), 15)
    css(browser, "#new-amount")[0].send_keys("0.000000000001")
    css(browser, "#new-description")[0].send_keys("one piconero")
    css(browser, "#new-submit")[0].click()
    address = wait_for(browser, "the new request's page", text_of("#req-address"), 30)
    body = gateway.status(address)
    assert body["amount"]["expected"] == 1 and body["description"] == "one piconero"
    assert text_of("#req-expected")(browser) == "0.000000000001 XMR"
