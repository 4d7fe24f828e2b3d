"""The dashboard's Keys page in headless Chromium, on the real app over fakes.

The real app (``create_app``) served by uvicorn on loopback, over a default store whose
rows (the stores and keys tables) are ``StoreRows`` in memory: the real ``StoreAdmin``
answers ``/stores/{id}/keys`` and the real ``StoreGateways`` reads the keys it makes, so a
key made on the page works at once on the API and a revoked one is refused at once.

- An operator key (``admin``) makes a shop plugin's key with the preselected Greenfield
  permissions (WooCommerce's four and its two optional ones): the key is shown once with
  Copy, with the gateway's URL and the store id; ``GET /api/v1/api-keys/current`` with
  it reports exactly those permissions, each ``name:default``; the list shows them in
  words; Revoke (confirmed) makes the key refused (401). An API key is made with scopes.
- The page's lists of scopes and permissions are the gateway's (``STORE_KEY_SCOPES``,
  the permissions ``key_permissions.py`` allows, ``describe()``'s words).
- A key without ``admin`` sees no "Keys" in the navigation, and no form on ``#/keys``.

Screenshots go to ``test-artifacts/admin/keys-*.png``; ``docs/img/admin-keys.png`` is
refreshed when XMRGATE_UPDATE_DOC_IMAGES=1. Needs Debian's chromium and chromium-driver;
fails (never skips) without them.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from selenium.webdriver import Chrome as WebDriver

from tests.unit.gateway_builder import StoreRows, fake_app, fake_gateway, fake_stores
from testsupport.admin_page import page_errors, screenshots, text
from testsupport.browser import chromium, click, css, shown, wait_for
from testsupport.page_shots import DESKTOP
from testsupport.served_app import ServedApp
from xmrgate.config import Settings
from xmrgate.domain.api_keys import SCOPES, ApiKey
from xmrgate.domain.greenfield.key_permissions import check_key_permissions, key_scopes
from xmrgate.domain.greenfield.permissions import STORE_POLICIES, describe
from xmrgate.domain.stores import DEFAULT_STORE, STORE_KEY_SCOPES, key_digest

pytestmark = pytest.mark.browser

OPERATOR = "operator-key-of-the-keys-page"
READER = "reader-key-of-the-keys-page"
WOO = [
    "btcpay.store.canviewinvoices",
    "btcpay.store.cancreateinvoice",
    "btcpay.store.canviewstoresettings",
    "btcpay.store.canmodifyinvoices",
    "btcpay.store.cancreatenonapprovedpullpayments",
    "btcpay.store.webhooks.canmodifywebhooks",
]


class Site(ServedApp):
    """The app over fakes, the stores and keys tables in memory, served by uvicorn."""

    def __init__(self) -> None:
        keys = [
            ApiKey(digest=key_digest(OPERATOR), label="key:operator", scopes=SCOPES),
            ApiKey(digest=key_digest(READER), label="key:read", scopes=frozenset({"read"})),
        ]
        gateway = fake_gateway(api_keys=keys)
        self.rows = StoreRows()
        # The registry reads the same rows the administration writes: a new key works.
        stores = fake_stores(gateway, self.rows, operator_keys=keys)
        super().__init__(fake_app(Settings(), stores, rows=self.rows))


@pytest.fixture
def site(browser: WebDriver) -> Iterator[Site]:
    with Site() as served:
        yield served
        # Leave its page before its server stops: a refresh due meanwhile would log a
        # refused connection that the next test's page_errors would read as its own.
        browser.get("about:blank")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, DESKTOP, console=True) as driver:
        yield driver


def sign_in(driver: WebDriver, site: Site, key: str) -> None:
    driver.get(f"{site.url}/admin#/keys")
    shown(driver, "#api-key").send_keys(key)
    click(driver, "#login button[type=submit]")


def ticked(driver: WebDriver, box: str) -> list[str]:
    found: list[str] = driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0] + ' input:checked'))"
        ".map(function (c) { return c.value; });",
        box,
    )
    return found


def current(site: Site, key: str) -> httpx.Response:
    return httpx.get(
        f"{site.url}/api/v1/api-keys/current", headers={"Authorization": f"token {key}"}
    )


def row_state(driver: WebDriver, key_id: str) -> str | None:
    found = css(driver, f'#key-list tr[data-key="{key_id}"]')
    return found[0].get_attribute("data-revoked") if found else None


def test_an_operator_makes_a_plugin_key_that_works_and_revokes_it(
    browser: WebDriver, site: Site
) -> None:
    try:
        sign_in(browser, site, OPERATOR)
        shown(browser, "#key-results .notice")
        assert "no keys of its own" in text(browser, "#key-results")
        assert shown(browser, "#nav-keys").get_attribute("aria-current") == "page"

        # The page offers what the gateway allows, in the gateway's words.
        scopes, permissions = browser.execute_script(
            "return [XmrAdmin.keys.SCOPES, XmrAdmin.keys.PERMISSIONS];"
        )
        assert {s[0] for s in scopes} == STORE_KEY_SCOPES
        allowed = set()
        for name in STORE_POLICIES:
            try:
                key_scopes(check_key_permissions([name], DEFAULT_STORE))
            except ValueError:
                continue
            allowed.add(name)
        assert {p[0] for p in permissions} == allowed
        assert all(p[1] == describe(p[0]) for p in permissions)

        click(browser, "#key-new")
        assert ticked(browser, "#key-permissions") == WOO
        assert not css(browser, "#key-scopes")[0].is_displayed()
        screenshots(browser, "keys-form")
        click(browser, "#key-submit")

        key = shown(browser, "#made-key").get_attribute("value") or ""
        assert key.startswith("xgs_")
        assert shown(browser, "#made-url").get_attribute("value") == site.url
        assert shown(browser, "#made-store").get_attribute("value") == DEFAULT_STORE
        assert "shown only now" in text(browser, "#key-once")
        click(browser, "#made-key-copy")
        said = wait_for(browser, "copy feedback", lambda: text(browser, "#made-key-said"))
        assert said == "Copied." or said.startswith("Could not copy"), said

        answer = current(site, key)
        assert answer.status_code == 200, answer.text
        assert answer.json()["permissions"] == [f"{name}:{DEFAULT_STORE}" for name in WOO]

        # Listed with its permissions in words; the key shown stays through the redraw.
        (made,) = site.rows.key_rows
        assert made.permissions == tuple(WOO)
        wait_for(browser, "the key listed", lambda: row_state(browser, made.id) == "false")
        listed = text(browser, f'#key-list tr[data-key="{made.id}"]')
        assert "See invoices and their payments" in listed
        assert "Add, change and remove webhooks" in listed
        assert shown(browser, "#made-key").get_attribute("value") == key
        screenshots(browser, "keys", docs=True)

        # Revoke, confirmed: refused at once.
        click(browser, "#key-close")
        click(browser, f'#key-list button[data-action="revoke"][data-key="{made.id}"]')
        assert made.id in text(browser, "#key-panel")
        click(browser, "#revoke-confirm")
        wait_for(browser, "the key revoked", lambda: row_state(browser, made.id) == "true")
        assert "revoked" in text(browser, "#key-panel")
        assert current(site, key).status_code == 401
        assert not css(browser, f'#key-list button[data-key="{made.id}"]')

        # An API key, with scopes.
        click(browser, "#key-new")
        click(browser, "#key-kind-scopes")
        assert ticked(browser, "#key-scopes") == ["read", "receive"]
        click(browser, '#key-scopes input[value="refund"]')
        click(browser, "#key-submit")
        scoped = shown(browser, "#made-key").get_attribute("value") or ""
        assert not css(browser, "#made-url")
        assert text(browser, "#made-powers") == "read, receive, refund"
        assert current(site, scoped).status_code == 200
        assert site.rows.key_rows[-1].scopes == frozenset({"read", "receive", "refund"})
        assert page_errors(browser, 401) == []
    finally:
        browser.execute_script("sessionStorage.clear();")


def test_a_key_without_admin_sees_no_keys_form(browser: WebDriver, site: Site) -> None:
    try:
        sign_in(browser, site, READER)
        assert "operator's key" in shown(browser, "#keys-no-admin").text
        assert not css(browser, "#key-new") and not css(browser, "#key-form")
        assert not css(browser, "#nav-keys")[0].is_displayed()
        # The API says the same: no key made.
        refused = httpx.post(
            f"{site.url}/stores/{DEFAULT_STORE}/keys",
            json={"permissions": WOO},
            headers={"Authorization": f"Bearer {READER}"},
        )
        assert refused.status_code == 403 and site.rows.key_rows == []
        assert page_errors(browser, 401) == []
    finally:
        browser.execute_script("sessionStorage.clear();")
