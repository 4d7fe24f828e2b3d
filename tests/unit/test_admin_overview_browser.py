"""The dashboard's overview in headless Chromium, fed a canned ``GET /status``.

A small HTTP server serves the real shell and static files, and a ``/status`` body made
by the real ``overview_json`` from an ``OverviewReport``. Two things are checked:

- amounts beyond 2^53 piconero show exactly where ``JSON.parse`` gives its reviver no
  source text (browsers before 2023): the page's ``JSON.parse`` is replaced, before any
  script of the page runs, by one that drops the reviver's third argument;
- with ``--daemon-address`` the wallet card shows monerod's height and how far the
  wallet is behind it; without, nothing about a daemon.

Needs Debian's chromium and chromium-driver; fails (never skips) without them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By

from testsupport.browser import start_chromium
from xmrgate.core.overview import DaemonFacts, OverviewReport, StoreFacts
from xmrgate.core.wallet_status import HealthReport
from xmrgate.domain.money import piconero_to_xmr
from xmrgate.web.admin.routes import shell, static_file
from xmrgate.web.api.status import overview_json

pytestmark = pytest.mark.browser

TOTAL = 2**64 - 1  # 18446744.073709551615 XMR: a float shows 18446744.073709551616
UNLOCKED = 2**53 + 1
# Runs before the page's scripts: notes whether this Chromium passes the source text
# (so the test shows the override matters), then takes it away as older browsers do.
NO_SOURCE_TEXT = """
window.__hadSourceText = false;
JSON.parse("1", function (k, v, context) {
  window.__hadSourceText = !!(context && typeof context.source === "string");
  return v;
});
(function () {
  var parse = JSON.parse;
  JSON.parse = function (text, reviver) {
    if (typeof reviver !== "function") { return parse(text); }
    return parse(text, function (key, value) { return reviver.call(this, key, value); });
  };
})();
"""


def report(daemon: DaemonFacts | None) -> OverviewReport:
    return OverviewReport(
        health=HealthReport(200, {"wallet": True, "database": True}, wallet_mode="full"),
        balance=(TOTAL, UNLOCKED),
        wallet_height=1000,
        facts=StoreFacts(998, 0, 0, {"waiting": 1}),
        problems=[],
        daemon=daemon,
    )


class Site:
    """The shell, its static files and a ``/status`` body the test sets."""

    def __init__(self) -> None:
        self.status: dict[str, Any] = overview_json(report(None))
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/admin":
                    self._send(shell(), "text/html; charset=utf-8")
                elif path.startswith("/admin/static/"):
                    found = static_file(path.rsplit("/", 1)[1])
                    self._send(found.body, found.media_type)
                elif path == "/status":
                    # json.dumps writes Python's ints exactly, as the gateway does.
                    self._send(json.dumps(site.status).encode(), "application/json")
                elif path == "/received/daily":
                    self._send(b'{"days": []}', "application/json")
                else:
                    self.send_error(404)

            def _send(self, body: bytes, media_type: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", media_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    served = Site()
    try:
        yield served
    finally:
        served.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """Headless Chromium without the reviver's source text (see NO_SOURCE_TEXT)."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    driver = start_chromium(profile, width=1280, height=800)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": NO_SOURCE_TEXT})
    try:
        yield driver
    finally:
        driver.quit()


def texts(driver: WebDriver, selector: str) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]


def overview(driver: WebDriver, site: Site) -> None:
    """Load the overview afresh and wait until it is drawn (or say what the page shows)."""
    driver.get("about:blank")  # the same URL again would only be a fragment navigation
    driver.get(f"{site.url}/admin#/")
    deadline = time.monotonic() + 20
    while not texts(driver, "#card-wallet") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert texts(driver, "#card-wallet"), f"no overview drawn: {texts(driver, '#main')}"


def test_amounts_beyond_2_53_are_exact_without_the_revivers_source_text(
    browser: WebDriver, site: Site
) -> None:
    site.status = overview_json(report(None))
    overview(browser, site)
    assert browser.execute_script("return window.__hadSourceText") is True
    assert browser.execute_script('return JSON.parse("1", (k, v, c) => c === undefined)')
    assert texts(browser, "#balance-total") == [f"{piconero_to_xmr(TOTAL)} XMR"]
    assert texts(browser, "#balance-total")[0].startswith("18446744.073709551615")
    assert texts(browser, "#balance-unlocked") == [f"{piconero_to_xmr(UNLOCKED)} XMR"]


def test_wallet_card_shows_the_wallet_against_the_daemon(browser: WebDriver, site: Site) -> None:
    site.status = overview_json(report(DaemonFacts(height=1040)))
    overview(browser, site)
    assert texts(browser, "#daemon-height") == ["1040"]
    assert texts(browser, "#wallet-behind-daemon") == ["40 blocks"]
    behind = browser.find_element(By.ID, "wallet-behind-daemon")
    assert behind.get_attribute("class") == "bad"

    site.status = overview_json(report(DaemonFacts(height=None)))
    overview(browser, site)
    assert texts(browser, "#daemon-height") == ["unknown (monerod did not answer)"]
    assert texts(browser, "#wallet-behind-daemon") == ["unknown"]


def test_without_a_daemon_address_the_card_says_nothing_of_a_daemon(
    browser: WebDriver, site: Site
) -> None:
    site.status = overview_json(report(None))
    overview(browser, site)
    assert texts(browser, "#sync-behind") == ["2 blocks"]
    assert not texts(browser, "#daemon-height")
    assert "aemon" not in texts(browser, "#card-wallet")[0]
