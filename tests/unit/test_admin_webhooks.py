"""The dashboard's Webhooks page in headless Chromium, on the real app over fakes.

The real app (``create_app``) served by uvicorn on loopback over ``GreenfieldSite``: its
stores have the real ``GreenfieldWebhooks`` over webhook rows in memory, with a URL guard
that refuses internal hosts, so the page works through the same ``/api/v1`` routes a shop
plugin calls.

- An operator key picks ``shop-a`` in the switcher, adds a webhook with chosen event
  types: its secret is shown once (Copy, a warning), the API lists the webhook without
  it; Edit (PUT) changes the URL, turns it off and takes every event, the secret kept;
  a delivery added as the announcer would shows with its status, time, HTTP code and
  error, and Redeliver makes a new one (recorded by the fake repository); Delete,
  confirmed, removes it. An internal URL is refused with the 422's ``path: message``.
- The page's event types are the gateway's (``EventType``).
- A store key with the webhooks permission acts on its own store; a key without it
  reads why, and sees no form.

Screenshots go to ``test-artifacts/admin/webhooks-*.png``; ``docs/img/admin-webhooks.png``
is refreshed when XMRGATE_UPDATE_DOC_IMAGES=1. Needs Debian's chromium and
chromium-driver; fails (never skips) without them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.support.select import Select

from tests.unit.greenfield_site import OP_READER, OPERATOR, SHOP_A, GreenfieldSite, auth
from testsupport.admin_page import look_again, page_errors, screenshots, text
from testsupport.browser import chromium, click, css, shown, wait_for
from testsupport.page_shots import DESKTOP
from testsupport.served_app import ServedApp
from xmrgate.core.greenfield_webhooks import Delivery
from xmrgate.domain.greenfield.events import EventType

pytestmark = pytest.mark.browser

URL = "https://shop.example/hook"


class Site(ServedApp):
    """``GreenfieldSite``'s app served by uvicorn; ``gf`` is the site (its webhook rows)."""

    def __init__(self) -> None:
        self.gf = GreenfieldSite()
        super().__init__(self.gf.app)


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as served:
        yield served


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, DESKTOP, console=True) as driver:
        yield driver


def sign_in(driver: WebDriver, site: Site, key: str) -> None:
    driver.get(f"{site.url}/admin#/webhooks")
    shown(driver, "#api-key").send_keys(key)
    click(driver, "#login button[type=submit]")


def leave(driver: WebDriver) -> None:
    """Forget the key and leave the page before its server stops: a poll of this page
    must not fail (a console error) in the next test."""
    driver.execute_script("sessionStorage.clear();")
    driver.get("about:blank")


def listed(site: Site, store: str) -> list[dict[str, object]]:
    answer = httpx.get(f"{site.url}/api/v1/stores/{store}/webhooks", headers=auth(OPERATOR))
    assert answer.status_code == 200, answer.text
    found: list[dict[str, object]] = answer.json()
    return found


def panel_says(driver: WebDriver, words: str) -> None:
    wait_for(driver, repr(words), lambda: words in text(driver, "#hook-panel"))


def fill(driver: WebDriver, selector: str, value: str) -> None:
    box = shown(driver, selector)
    box.clear()
    box.send_keys(value)


def test_an_operator_adds_edits_redelivers_and_deletes_a_webhook(
    browser: WebDriver, site: Site
) -> None:
    try:
        sign_in(browser, site, OPERATOR)
        Select(shown(browser, "#store-select")).select_by_value("shop-a")
        wait_for(browser, "shop-a's page", lambda: "shop-a" in text(browser, "#webhooks h1"))
        shown(browser, "#hook-results .notice")
        assert "no webhooks yet" in text(browser, "#hook-results")
        assert shown(browser, "#nav-webhooks").get_attribute("aria-current") == "page"
        names = browser.execute_script("return XmrAdmin.webhooks.EVENTS;")
        assert sorted(names) == sorted(t.value for t in EventType)

        # A new webhook with two event types: the secret shown once.
        click(browser, "#hook-new")
        fill(browser, "#hook-url", URL)
        assert not css(browser, "#hook-event-list")[0].is_displayed()
        click(browser, "#hook-specific")
        click(browser, '#hook-event-list input[value="InvoiceSettled"]')
        click(browser, '#hook-event-list input[value="InvoiceExpired"]')
        screenshots(browser, "webhooks-form")
        click(browser, "#hook-submit")
        secret = shown(browser, "#hook-made-secret").get_attribute("value") or ""
        hook_id = text(browser, "#hook-made-id")
        assert len(secret) >= 16 and hook_id
        assert "shown only now" in text(browser, "#hook-once")
        click(browser, "#hook-made-secret-copy")
        said = wait_for(browser, "copy feedback", lambda: text(browser, "#hook-made-secret-said"))
        assert said == "Copied." or said.startswith("Could not copy"), said

        (hook,) = listed(site, "shop-a")
        assert "secret" not in hook
        assert hook == {
            "id": hook_id,
            "enabled": True,
            "automaticRedelivery": True,
            "url": URL,
            "authorizedEvents": {
                "everything": False,
                "specificEvents": ["InvoiceSettled", "InvoiceExpired"],
            },
        }
        assert site.gf.webhook_rows.webhooks[hook_id].secret == secret
        assert listed(site, "default") == []
        card = f'#hook-results article[data-hook="{hook_id}"]'
        wait_for(browser, "the webhook listed", lambda: bool(css(browser, card)))
        assert "InvoiceSettled" in text(browser, card) and "No deliveries yet" in text(
            browser, card
        )
        # The secret shown stays through the list's redraw.
        assert shown(browser, "#hook-made-secret").get_attribute("value") == secret

        # Edit: another URL, off, every event; the secret left empty is kept.
        click(browser, f'{card} button[data-action="edit"]')
        assert shown(browser, "#hook-url").get_attribute("value") == URL
        fill(browser, "#hook-url", URL + "/v2")
        click(browser, "#hook-enabled")
        click(browser, "#hook-everything")
        click(browser, "#hook-submit")
        panel_says(browser, "Webhook saved")
        (hook,) = listed(site, "shop-a")
        assert hook["url"] == URL + "/v2" and hook["enabled"] is False
        assert hook["authorizedEvents"] == {"everything": True, "specificEvents": []}
        assert site.gf.webhook_rows.webhooks[hook_id].secret == secret
        wait_for(
            browser,
            "the edit shown",
            lambda: css(browser, card)[0].get_attribute("data-enabled") == "false",
        )
        assert "everything" in text(browser, card)

        # A delivery, as the announcer writes one, then Redeliver.
        site.gf.webhook_rows.deliver(
            "shop-a",
            Delivery(
                id="delivery-0001",
                webhook_id=hook_id,
                created_at=datetime(2026, 11, 26, 10, 0, tzinfo=UTC),
                status="failed",
                attempts=3,
                last_status=500,
                last_error="HTTP 500",
                payload=json.dumps(
                    {
                        "deliveryId": "delivery-0001",
                        "webhookId": hook_id,
                        "isRedelivery": False,
                        "originalDeliveryId": "delivery-0001",
                        "type": "InvoiceSettled",
                        "timestamp": 1795687200,
                        "storeId": "shop-a",
                        "invoiceId": "inv1",
                    }
                ),
            ),
        )
        look_again(browser)
        row = f'{card} tr[data-delivery="delivery-0001"]'
        wait_for(browser, "the delivery listed", lambda: bool(css(browser, row)))
        assert css(browser, row)[0].get_attribute("data-status") == "HttpError"
        assert "500" in text(browser, row)
        click(browser, "#hook-close")
        screenshots(browser, "webhooks", docs=True)
        click(browser, f'{row} button[data-action="redeliver"]')
        panel_says(browser, "Delivery sent again")
        fresh = [d for _, d in site.gf.webhook_rows.deliveries if d.id != "delivery-0001"]
        assert len(fresh) == 1 and fresh[0].status == "pending"
        again = json.loads(fresh[0].payload)
        assert again["isRedelivery"] is True and again["deliveryId"] == fresh[0].id
        assert again["originalDeliveryId"] == "delivery-0001" and again["invoiceId"] == "inv1"
        assert fresh[0].id in text(browser, "#hook-panel")
        new_row = f'{card} tr[data-delivery="{fresh[0].id}"]'
        wait_for(browser, "the redelivery listed", lambda: bool(css(browser, new_row)))
        assert css(browser, new_row)[0].get_attribute("data-status") == "Failed"
        assert "Not delivered yet" in text(browser, new_row)

        # Delete, confirmed.
        click(browser, f'{card} button[data-action="delete"]')
        assert hook_id in text(browser, "#hook-panel")
        click(browser, "#hook-delete-confirm")
        panel_says(browser, "Webhook deleted")
        assert listed(site, "shop-a") == []
        wait_for(browser, "the list empty", lambda: not css(browser, card))

        # An internal URL: the 422's path and message.
        click(browser, "#hook-new")
        fill(browser, "#hook-url", "https://127.0.0.1/hook")
        click(browser, "#hook-submit")
        error = shown(browser, "#hook-error").text
        assert error.startswith("url: ") and "internal" in error and "HTTP 422" in error, error
        screenshots(browser, "webhooks-refused")
        assert listed(site, "shop-a") == []
        assert page_errors(browser, 401, 422) == []
    finally:
        leave(browser)


def test_a_store_key_manages_its_own_stores_webhooks(browser: WebDriver, site: Site) -> None:
    try:
        sign_in(browser, site, SHOP_A)
        wait_for(browser, "shop-a's page", lambda: "shop-a" in text(browser, "#webhooks h1"))
        assert not css(browser, "#nav-webhooks")[0].is_displayed()
        click(browser, "#hook-new")
        fill(browser, "#hook-url", URL)
        click(browser, "#hook-submit")
        shown(browser, "#hook-made-secret")
        (hook,) = listed(site, "shop-a")
        assert hook["authorizedEvents"] == {"everything": True, "specificEvents": []}
        assert page_errors(browser, 401, 403) == []
    finally:
        leave(browser)


def test_a_key_without_the_permission_sees_no_form(browser: WebDriver, site: Site) -> None:
    try:
        sign_in(browser, site, OP_READER)
        assert "canmodifywebhooks" in shown(browser, "#hooks-no-permission").text
        assert not css(browser, "#hook-new") and not css(browser, "#hook-form")
        assert page_errors(browser, 401, 403, 404) == []
    finally:
        leave(browser)
