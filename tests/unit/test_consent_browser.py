"""The consent page in headless Chromium (docs/greenfield.md).

The real app over the Greenfield fake site (``tests/unit/greenfield_site.py``: stores
``default``, ``shop-a``, ``shop-b``, a disabled ``shop-c``) served on loopback, and a
receiver on another loopback port standing for WooCommerce's callback
(``home_url('?btcpay-settings-callback')``). The browser opens the authorize URL exactly
as WooCommerce builds it (A1), gives the operator key, picks ``shop-a``, approves; the
page's own script posts the form (A2) to the receiver, which records the fields; the
posted key then answers ``GET /api/v1/api-keys/current`` with exactly the permissions,
each ``name:shop-a``. Needs Debian's chromium and chromium-driver; fails (never skips)
without them.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote

import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.support.ui import Select

from tests.unit.greenfield_site import OPERATOR, GreenfieldSite
from testsupport.browser import chromium, click, shown, wait_for
from testsupport.page_shots import DESKTOP
from testsupport.served_app import ServedApp

pytestmark = pytest.mark.browser

WOO = [
    "btcpay.store.canviewinvoices",
    "btcpay.store.cancreateinvoice",
    "btcpay.store.canviewstoresettings",
    "btcpay.store.canmodifyinvoices",
    "btcpay.store.cancreatenonapprovedpullpayments",
    "btcpay.store.webhooks.canmodifywebhooks",
]


class Receiver:
    """A loopback HTTP server that records each POST (its path and form fields)."""

    def __init__(self) -> None:
        posts: list[tuple[str, dict[str, list[str]]]] = []
        self.posts = posts

        class Handler(BaseHTTPRequestHandler):
            # TCP_NODELAY: http.server writes the headers and the body apart, and without
            # it the body waits for the client's delayed ACK of the headers (40 ms each).
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length).decode()
                assert self.headers["content-type"] == "application/x-www-form-urlencoded"
                posts.append((self.path, parse_qs(body)))
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.end_headers()
                self.wfile.write(b"<p id='received'>received</p>")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/?btcpay-settings-callback"
        # shutdown() waits for serve_forever to look again: every 0.5 s unless told.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    with chromium(tmp_path_factory, DESKTOP) as driver:
        yield driver


@pytest.fixture
def served() -> Iterator[tuple[ServedApp, Receiver]]:
    receiver = Receiver()
    with ServedApp(GreenfieldSite().app) as app:
        yield app, receiver
    receiver.close()


def authorize_url(base: str, redirect: str) -> str:
    """The URL PHPLIB's ``ApiKey::getAuthorizeUrl`` builds for WooCommerce (A1)."""
    query = "&".join(f"permissions={quote(p, safe='')}" for p in WOO)
    return (
        f"{base}/api-keys/authorize?{query}&applicationName=WooCommerce&strict=true"
        f"&selectiveStores=true&redirect={quote(redirect, safe='')}"
    )


def test_the_operator_approves_and_the_browser_posts_the_key(
    browser: WebDriver, served: tuple[ServedApp, Receiver]
) -> None:
    app, receiver = served
    browser.get(authorize_url(app.url, receiver.url))
    assert shown(browser, "#application").text == "WooCommerce"
    assert shown(browser, "#redirect-host").text.startswith("127.0.0.1:")
    shown(browser, "#operator-key").send_keys(OPERATOR)
    click(browser, "#next")
    Select(shown(browser, "select#store")).select_by_value("shop-a")
    click(browser, "#approve")
    wait_for(browser, "the post to the redirect", lambda: receiver.posts)
    [(path, fields)] = receiver.posts
    assert path == "/?btcpay-settings-callback"  # the redirect's query kept
    assert fields["permissions[]"] == [f"{p}:shop-a" for p in WOO]
    assert fields["userId"] and fields["userId"][0].startswith("key:")
    [key] = fields["apiKey"]
    shown(browser, "#received")
    request = urllib.request.Request(
        f"{app.url}/api/v1/api-keys/current", headers={"Authorization": f"token {key}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        current = json.load(answer)
    assert current["permissions"] == [f"{p}:shop-a" for p in WOO]
