"""Headless Chromium from Debian for the browser tests, driven by its chromedriver.

Nothing is downloaded (a test tool's own browser download does not work here); a
missing package fails the test instead of skipping it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
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
