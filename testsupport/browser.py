"""Headless Chromium from Debian for the browser tests, driven by its chromedriver.

Nothing is downloaded (a test tool's own browser download does not work here); a
missing package fails the test instead of skipping it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: How long the waits below wait by default, in seconds.
WAIT = 20.0
CHROME_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
]


def start_chromium(profile: Path, *, width: int, height: int, console: bool = False) -> WebDriver:
    """A headless Chromium with its own ``profile`` folder and a window of that size;
    ``console`` keeps the page's console messages for ``driver.get_log("browser")``."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: install Debian's chromium and chromium-driver "
            "(make system-deps)"
        )
    options = Options()
    options.binary_location = CHROMIUM
    for flag in [*CHROME_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
        options.add_argument(flag)
    if console:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_output=str(profile / "chromedriver.log"))
    driver = WebDriver(service=service, options=options)
    driver.set_page_load_timeout(30)
    return driver


@contextmanager
def chromium(
    tmp_path_factory: pytest.TempPathFactory, size: tuple[int, int], *, console: bool = False
) -> Iterator[WebDriver]:
    """:func:`start_chromium` in a new profile folder with a window of ``size``, quit on
    leaving; the body of a test module's ``browser`` fixture."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    driver = start_chromium(profile, width=size[0], height=size[1], console=console)
    try:
        yield driver
    finally:
        driver.quit()


def css(driver: WebDriver | WebElement, selector: str) -> list[WebElement]:
    """The elements that match the CSS ``selector``."""
    return driver.find_elements(By.CSS_SELECTOR, selector)


def visible_text(driver: WebDriver, selector: str) -> str:
    """The text of the first element that matches, its white space collapsed; "" when
    there is none or it is hidden."""
    found = driver.execute_script(
        "var e = document.querySelector(arguments[0]);"
        "return e && e.offsetParent !== null ? e.innerText : '';",
        selector,
    )
    return " ".join(str(found).split())


def wait_for(
    driver: WebDriver,
    what: str,
    check: Callable[[], Any],
    *,
    timeout: float = WAIT,
    page: str = "main",
) -> Any:
    """Poll ``check`` until it gives something true, and give that; an element a redraw
    replaced meanwhile (``StaleElementReferenceException``) counts as not yet. Fails
    with "no ``what``" and the text of the page's ``page`` element."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = check()
        except StaleElementReferenceException:
            found = None
        if found:
            return found
        time.sleep(0.05)
    pytest.fail(f"no {what}; the page shows: {visible_text(driver, page)!r}")


def wait_text(driver: WebDriver, selector: str, wanted: str, *, timeout: float = WAIT) -> None:
    """Wait until :func:`visible_text` of ``selector`` is ``wanted``."""
    wait_for(
        driver,
        f"{selector} = {wanted!r}",
        lambda: visible_text(driver, selector) == wanted,
        timeout=timeout,
    )


def displayed(driver: WebDriver, selector: str) -> WebElement | None:
    """The first displayed element that matches, if any."""
    return next((e for e in css(driver, selector) if e.is_displayed()), None)


def shown(driver: WebDriver, selector: str, *, timeout: float = WAIT) -> WebElement:
    """Wait for a displayed element that matches, and give it."""
    found: WebElement = wait_for(
        driver, selector, lambda: displayed(driver, selector), timeout=timeout
    )
    return found


def click(driver: WebDriver, selector: str, *, timeout: float = WAIT) -> None:
    """Click the first displayed element that matches, waiting for one (found again if a
    redraw replaced it meanwhile)."""

    def done() -> bool:
        found = displayed(driver, selector)
        if found is None:
            return False
        found.click()
        return True

    wait_for(driver, f"{selector} to click", done, timeout=timeout)


def console_errors(driver: WebDriver, *allowed: str) -> list[str]:
    """The page's console errors (needs ``console=True``) since the last call, but for
    those that contain one of ``allowed``."""
    entries: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    return [
        str(e["message"])
        for e in entries
        if e["level"] == "SEVERE" and not any(a in e["message"] for a in allowed)
    ]
