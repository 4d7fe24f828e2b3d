"""Helpers for the dashboard's (``/admin``) browser tests on the app over fakes."""

from __future__ import annotations

from selenium.webdriver import Chrome as WebDriver

from testsupport.browser import console_errors
from testsupport.page_shots import ARTIFACTS
from testsupport.page_shots import screenshots as page_screenshots


def text(driver: WebDriver, selector: str) -> str:
    """The text of the first element that matches (hidden or not), stripped; "" when
    there is none."""
    found = driver.execute_script(
        "var e = document.querySelector(arguments[0]); return e ? e.innerText : '';", selector
    )
    return str(found).strip()


def page_errors(driver: WebDriver, *expected: int) -> list[str]:
    """Console errors other than the browser's note about the refusals a test provokes
    (and ``GET /stores``'s 404: a gateway without stores, which the header expects; and
    ``GET /rates``'s 400: a gateway without fiat prices, which the refund, link and
    request forms expect, offering XMR only)."""
    allowed = [f"status of {code}" for code in expected]
    return console_errors(
        driver, "/stores - Failed to load resource", "/rates - Failed to load resource", *allowed
    )


def look_again(driver: WebDriver) -> None:
    """The operator comes back to the dashboard's tab: its ``visibilitychange`` (the page
    is visible) makes the page shown load its data at once (``live`` in ``ui.js``), where
    it would otherwise show a change at its next refresh, 3 to 15 s later. The same code
    then draws what changed: a test that calls this still proves the page follows."""
    driver.execute_script("document.dispatchEvent(new Event('visibilitychange'));")


def screenshots(driver: WebDriver, page: str, docs: bool = False) -> None:
    """Phone and desktop, light and dark, into ``test-artifacts/admin/<page>-*.png``;
    nothing wider than a phone's screen; with ``docs`` the desktop one (light) is
    ``docs/img/admin-<page>.png`` when XMRGATE_UPDATE_DOC_IMAGES=1."""
    doc_image = f"admin-{page}.png" if docs else None
    page_screenshots(driver, page, ARTIFACTS / "admin", doc_image=doc_image)
