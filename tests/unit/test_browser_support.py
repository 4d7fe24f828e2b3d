"""The browser tests' own tools (``testsupport/browser.py``) in headless Chromium.

- ``displayed`` (what ``shown`` and ``click`` wait on) gives the first matching element
  a person can see, and skips one that is ``display: none`` (itself, by the ``hidden``
  attribute or by a parent), ``visibility: hidden``, transparent, without an area, or in a
  closed ``<details>``: the rules of Selenium's ``is_displayed`` it replaced, checked
  against ``is_displayed`` itself on the same elements.
- A module borrows the shared browser without the local and session storage, cookies
  and tabs that the module before it left.
- The headless shell is started through a script that names the page to open (it opens
  none otherwise); the full browser is started as it is.

Needs Debian's chromium-headless-shell and chromium-driver; fails (never skips) without
them.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver import Chrome as WebDriver
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from testsupport.browser import SHARED, chromium, css, displayed, launcher
from testsupport.served_app import ServedApp

pytestmark = pytest.mark.browser

#: Elements with class "x", each hidden in one way but the one whose id is "seen".
PAGE = """<!doctype html><html><body>
<p class="x" id="none" style="display: none">display none</p>
<p class="x" id="attr" hidden>hidden attribute</p>
<div style="display: none"><p class="x" id="parent">parent display none</p></div>
<p class="x" id="invisible" style="visibility: hidden">visibility hidden</p>
<p class="x" id="clear" style="opacity: 0">opacity 0</p>
<span class="x" id="empty"></span>
<details><summary>more</summary><p class="x" id="closed">in a closed details</p></details>
<p class="x" id="seen">seen</p>
<p class="x" id="later">seen too, but later</p>
<p class="y" id="only-hidden" hidden>nothing of class y is shown</p>
</body></html>"""


async def page(request: Request) -> HTMLResponse:
    return HTMLResponse(PAGE)


@pytest.fixture(scope="module")
def site() -> Iterator[ServedApp]:
    with ServedApp(Starlette(routes=[Route("/", page)])) as served:
        yield served


@pytest.fixture
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, (800, 600)) as driver:
        yield driver


def test_displayed_is_the_first_element_a_person_sees(site: ServedApp, browser: WebDriver) -> None:
    browser.get(site.url + "/")
    found = displayed(browser, ".x")
    assert found is not None and found.get_attribute("id") == "seen"
    assert displayed(browser, ".y") is None
    assert displayed(browser, ".nothing-matches") is None
    # The same verdict as Selenium's is_displayed for every element of the page.
    shown_by_selenium = [e.get_attribute("id") for e in css(browser, ".x") if e.is_displayed()]
    assert shown_by_selenium == ["seen", "later"]


def test_a_module_borrows_the_browser_without_the_last_modules_storage(
    site: ServedApp, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Lend it (as a module's fixture does), leave storage and a second tab behind, give
    it back, and lend it again: nothing of that is left."""
    with SHARED.lend(tmp_path_factory, (800, 600)) as driver:
        driver.get(site.url + "/")
        driver.execute_script(
            "localStorage.setItem('k', 'v'); sessionStorage.setItem('k', 'v');"
            "document.cookie = 'k=v; path=/';"
        )
        driver.switch_to.new_window("tab")
        driver.get(site.url + "/")
    with SHARED.lend(tmp_path_factory, (640, 480)) as driver:
        assert len(driver.window_handles) == 1
        driver.get(site.url + "/")
        left = driver.execute_script(
            "return [localStorage.getItem('k'), sessionStorage.getItem('k'), document.cookie];"
        )
        assert left == [None, None, ""]
        assert driver.execute_script("return window.innerWidth;") == 640


def test_the_headless_shell_is_started_with_a_page_and_the_full_browser_as_it_is(
    tmp_path: Path,
) -> None:
    assert launcher("/usr/bin/chromium", tmp_path) == "/usr/bin/chromium"
    shell = tmp_path / "bin dir" / "chromium-headless-shell"
    shell.parent.mkdir()
    # A stand-in for the shell that prints what it was given, one argument a line.
    shell.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n', "utf-8")
    shell.chmod(0o755)
    script = launcher(str(shell), tmp_path)
    given = subprocess.run([script, "--no-sandbox", "--window-size=1,2"], capture_output=True)
    assert given.returncode == 0, given.stderr
    assert given.stdout.decode().split("\n")[:-1] == [
        "--no-sandbox",
        "--window-size=1,2",
        "about:blank",
    ]
