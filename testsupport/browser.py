"""Headless Chromium from Debian for the browser tests, driven by its chromedriver.

Nothing is downloaded (a test tool's own browser download does not work here); a
missing package fails the test instead of skipping it.

One Chromium per test process: :func:`chromium` (the body of a module's ``browser``
fixture) hands the modules of a process the same browser, each in a fresh tab with its
window size, no cookies, no local or session storage and no console messages of the
module before (:class:`SharedChromium`); ``tests/conftest.py`` quits it when the session
ends. Starting a Chromium costs 1-2 s of CPU, once per module before.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

#: Debian's chromium-headless-shell: Chromium's own headless build (its engine, Blink and
#: V8, without the full browser's window and UI layers), as Puppeteer runs by default.
#: The browser tests cost it 44 CPU-s against 60 for the full browser with --headless=new
#: (its browser process 14 against 25: less work per DevTools command). The full browser
#: still runs them: XMRGATE_TEST_CHROMIUM=/usr/bin/chromium.
CHROMIUM = os.environ.get("XMRGATE_TEST_CHROMIUM", "/usr/bin/chromium-headless-shell")
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
    # A page left for another goes into the back/forward cache, so the next page needs a
    # new renderer process: 70 ms for each driver.get("about:blank") and 55 ms for each
    # page after it, against 35 and 40 without (no test goes back in history).
    "--disable-features=BackForwardCache",
]


class Chromium(WebDriver):
    """Chrome's WebDriver that notes the origin of every page it is told to open (what
    :class:`SharedChromium` clears between modules)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.origins: set[str] = set()
        super().__init__(*args, **kwargs)

    def get(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme in ("http", "https"):
            self.origins.add(f"{parts.scheme}://{parts.netloc}")
        super().get(url)


def start_chromium(profile: Path, *, width: int, height: int, console: bool = False) -> Chromium:
    """A headless Chromium with its own ``profile`` folder and a window of that size;
    ``console`` keeps the page's console messages for ``driver.get_log("browser")``."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: install Debian's chromium-headless-shell and "
            "chromium-driver (make system-deps)"
        )
    options = Options()
    options.binary_location = launcher(CHROMIUM, profile)
    for flag in [*CHROME_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
        options.add_argument(flag)
    if console:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # chromedriver logs every command and its answer at its default level (INFO), each
    # screenshot's base64 too: 30 % of its and the browser's CPU per command. Warnings
    # and errors still go to the log; CHROMEDRIVER_LOG_LEVEL=INFO brings the rest back.
    level = os.environ.get("CHROMEDRIVER_LOG_LEVEL", "WARNING")
    service = Service(
        executable_path=CHROMEDRIVER,
        log_output=str(profile / "chromedriver.log"),
        service_args=[f"--log-level={level}"],
    )
    driver = Chromium(service=service, options=options)
    driver.set_page_load_timeout(30)
    return driver


def launcher(binary: str, profile: Path) -> str:
    """What chromedriver starts: the headless shell through a script that adds the page
    to open. chromedriver names no page and passes every argument as a switch, and the
    shell opens no page without one; chromedriver then fails ("unable to discover open
    pages"). The full browser opens its own and is started as it is."""
    if "headless-shell" not in Path(binary).name:
        return binary
    script = profile / "launch-chromium"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(binary)} "$@" about:blank\n', "utf-8")
    script.chmod(0o755)
    return str(script)


class SharedChromium:
    """The Chromium of this test process, handed to one module at a time.

    :meth:`lend` gives it in the state of a fresh one: a new tab (so no session storage,
    no emulation, no script added to new documents, no page of the module before still
    polling its server), the window at the size asked, no cookies, no local storage or
    other data of the origins opened before, the console messages before read and
    dropped. Its console is always kept (``console=True``): a module that does not read
    it loses nothing. A browser that no longer answers is replaced.
    """

    def __init__(self) -> None:
        self._driver: Chromium | None = None
        self._lent = False

    @contextmanager
    def lend(
        self, tmp_path_factory: pytest.TempPathFactory, size: tuple[int, int]
    ) -> Iterator[WebDriver]:
        """The browser, fresh, with a window of ``size``, until the block ends."""
        assert not self._lent, "the shared Chromium is lent to another module already"
        driver = self._fresh(tmp_path_factory, size)
        self._lent = True
        try:
            yield driver
        finally:
            self._lent = False
            with contextlib.suppress(WebDriverException):
                driver.get("about:blank")  # its pages stop calling their closed servers

    def _fresh(self, tmp_path_factory: pytest.TempPathFactory, size: tuple[int, int]) -> Chromium:
        if self._driver is not None:
            try:
                self._reset(self._driver, size)
                return self._driver
            except WebDriverException:
                self.quit()
        profile = tmp_path_factory.mktemp("chromium-profile")
        self._driver = start_chromium(profile, width=size[0], height=size[1], console=True)
        # As after a reset: a window narrower than 500 px is only that narrow once set so
        # (started so, its page is 500 px wide all the same).
        self._driver.set_window_size(*size)
        return self._driver

    @staticmethod
    def _reset(driver: Chromium, size: tuple[int, int]) -> None:
        old = driver.window_handles
        driver.switch_to.new_window("tab")
        fresh = driver.current_window_handle
        for handle in old:
            driver.switch_to.window(handle)
            driver.close()
        driver.switch_to.window(fresh)
        driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        # What the pages keep (ui.js, pos.js, pos_key.js): "all" also walked a dozen
        # other stores per origin, 14 ms of the browser's CPU each against 1.
        for origin in sorted(driver.origins):
            driver.execute_cdp_cmd(
                "Storage.clearDataForOrigin",
                {"origin": origin, "storageTypes": "local_storage,session_storage"},
            )
        driver.origins.clear()
        driver.set_window_size(*size)
        driver.get_log("browser")  # type: ignore[no-untyped-call]

    def quit(self) -> None:
        """Quit the browser (at the end of the session)."""
        if self._driver is not None:
            driver, self._driver = self._driver, None
            with contextlib.suppress(Exception):
                driver.quit()


#: This test process's Chromium (``tests/conftest.py`` quits it at the end of the session).
SHARED = SharedChromium()


@contextmanager
def chromium(
    tmp_path_factory: pytest.TempPathFactory, size: tuple[int, int], *, console: bool = False
) -> Iterator[WebDriver]:
    """This process's Chromium (:data:`SHARED`), fresh, with a window of ``size``, for
    the block; the body of a test module's ``browser`` fixture. Its console is kept
    whatever ``console`` says (``console_errors`` needs it)."""
    del console  # always on in the shared browser
    with SHARED.lend(tmp_path_factory, size) as driver:
        yield driver


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
    # Most waits end within a few tens of milliseconds (a fetch, a redraw): look again
    # after 10 ms, then less often, up to every 50 ms.
    pause = 0.01
    while time.monotonic() < deadline:
        try:
            found = check()
        except StaleElementReferenceException:
            found = None
        if found:
            return found
        time.sleep(pause)
        pause = min(2 * pause, 0.05)
    pytest.fail(f"no {what}; the page shows: {visible_text(driver, page)!r}")


def wait_text(driver: WebDriver, selector: str, wanted: str, *, timeout: float = WAIT) -> None:
    """Wait until :func:`visible_text` of ``selector`` is ``wanted``."""
    wait_for(
        driver,
        f"{selector} = {wanted!r}",
        lambda: visible_text(driver, selector) == wanted,
        timeout=timeout,
    )


#: The first element that matches ``arguments[0]`` and is shown: rendered (no
#: ``display: none`` or ``content-visibility: hidden`` on it or above it), not
#: ``visibility: hidden``, not transparent (``opacity: 0``) and with an area on the page.
#: The browser's own ``checkVisibility`` in one script, where Selenium's
#: ``is_displayed`` sent its 40 KB atom once per matching element: each poll of
#: :func:`shown` and :func:`click` cost 14 ms of the browser's CPU instead of 4.
FIRST_SHOWN = (
    "for (const e of document.querySelectorAll(arguments[0])) {"
    "  if (!e.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;"
    "  const box = e.getBoundingClientRect();"
    "  if (box.width > 0 && box.height > 0) return e;"
    "}"
    "return null;"
)


def displayed(driver: WebDriver, selector: str) -> WebElement | None:
    """The first displayed element that matches, if any (:data:`FIRST_SHOWN`)."""
    found = driver.execute_script(FIRST_SHOWN, selector)
    return found if isinstance(found, WebElement) else None


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
