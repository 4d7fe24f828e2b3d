"""Every link and redirect the gateway hands out honours ``--public-url``, path prefix
included (``web/public_url.py``).

A proxy that publishes the gateway under ``https://shop.example/xmr`` must get
``https://shop.example/xmr/...`` in each of them: the Greenfield checkout link
``/i/{id}`` (and ``/invoice?id=``) and its redirect to the checkout, a payment link's
``url``, its "Pay" redirect, cookie path and "continue" link, and a refund's
``claim_url``. Without ``--public-url`` they are the request's own: redirects stay
root-relative (under the ASGI root path), API answers name the request's base. In
process: the shared functions over bare requests, then each answer of the real app.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError
from starlette.requests import Request

from tests.unit.test_link_page import build_shop as build_link_shop
from tests.unit.test_links_api import build_api
from tests.unit.test_refund_page import REQUEST_A
from tests.unit.test_refund_page import build_shop as build_refund_shop
from testsupport.migrated import MigratedTemplates
from testsupport.shop_rows import ADDRESS, INVOICE, SHOP, seed_shop
from xmrgate.config import Settings
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services
from xmrgate.web.greenfield.invoices import base_url as greenfield_base
from xmrgate.web.public_url import (
    checkout_path,
    configured,
    is_https,
    public_base,
    public_path,
    public_prefix,
)

PREFIXED = "https://shop.example/xmr"
OPERATOR = "operator-key-0123456789"
NO_WALLET = "http://127.0.0.1:9/json_rpc"
XMR = 10**12

# (--public-url, the ASGI root path) -> what each function gives.
CASES: list[tuple[str | None, str, dict[str, Any]]] = [
    (
        None,
        "",
        {"base": "http://gw.internal:5000", "pay": "/pay/A", "prefix": "", "https": False},
    ),
    (
        None,
        "/gw",
        {"base": "http://gw.internal:5000/gw", "pay": "/gw/pay/A", "prefix": "/gw", "https": False},
    ),
    (
        PREFIXED,
        "",
        {"base": PREFIXED, "pay": f"{PREFIXED}/pay/A", "prefix": "/xmr", "https": True},
    ),
    # A trailing slash names the same base; --public-url wins over the root path.
    (
        PREFIXED + "/",
        "/gw",
        {"base": PREFIXED, "pay": f"{PREFIXED}/pay/A", "prefix": "/xmr", "https": True},
    ),
    (
        "http://shop.example",
        "",
        {
            "base": "http://shop.example",
            "pay": "http://shop.example/pay/A",
            "prefix": "",
            "https": False,
        },
    ),
]


def bare_request(public_url: str | None, root_path: str = "") -> Request:
    """A request to the gateway at ``gw.internal:5000`` as a proxy hands it on."""
    app = FastAPI()
    app.state.public_url = public_url
    scope = {
        "type": "http",
        "app": app,
        "method": "GET",
        "scheme": "http",
        "server": ("gw.internal", 5000),
        "root_path": root_path,
        "path": f"{root_path}/l/coffee",
        "query_string": b"",
        "headers": [(b"host", b"gw.internal:5000")],
    }
    return Request(scope)


@pytest.mark.parametrize(("public_url", "root_path", "want"), CASES)
def test_the_shared_functions(public_url: str | None, root_path: str, want: dict[str, Any]) -> None:
    request = bare_request(public_url, root_path)
    assert public_base(request) == want["base"]
    assert public_path(request, "/pay/A") == want["pay"]
    assert checkout_path(request, "A") == want["pay"]
    assert public_prefix(request) == want["prefix"]
    assert is_https(request) is want["https"]
    assert configured(request) == (public_url.rstrip("/") if public_url else None)
    # Greenfield's checkoutLink and a refund's viewLink are appended to its own base.
    assert greenfield_base(request).rstrip("/") == want["base"]


def test_the_checkout_path_quotes_what_it_is_given() -> None:
    assert checkout_path(bare_request(PREFIXED), "a/b?c") == f"{PREFIXED}/pay/a%2Fb%3Fc"


def test_the_setting_is_a_base_or_refused_at_start() -> None:
    assert Settings(public_url=PREFIXED + "/").public_url == PREFIXED
    assert Settings(public_url=" http://127.0.0.1:5000 ").public_url == "http://127.0.0.1:5000"
    assert Settings(public_url="").public_url is None
    for bad in (
        "shop.example/xmr",
        "ftp://shop.example/xmr",
        "https:///xmr",
        "https://shop.example/xmr?store=1",
        "https://shop.example/xmr#top",
        "https://user:secret@shop.example/xmr",
        "https://shop.example:port/xmr",
    ):
        with pytest.raises(ValidationError, match="public_url"):
            Settings(public_url=bad)


# ------------------------------------------------------------ the Greenfield checkout link


def _app(tmp_path: Path, templates: MigratedTemplates, public_url: str | None) -> TestClient:
    """The real app over a migrated SQLite copy holding the shop's rows; no wallet."""
    path = tmp_path / "gateway.sqlite3"
    seed_shop(templates.sqlite_copy(path))
    settings = Settings(
        sqlite=str(path), api_keys=OPERATOR, rpc_address=NO_WALLET, public_url=public_url
    )
    services = Services.build(settings)
    asyncio.run(services.stores.load())
    return TestClient(build_app(settings, services), follow_redirects=False)


@pytest.mark.parametrize(
    ("public_url", "checkout", "link"),
    [
        (None, f"/pay/{ADDRESS}", f"http://testserver/i/{INVOICE}"),
        (PREFIXED, f"{PREFIXED}/pay/{ADDRESS}", f"{PREFIXED}/i/{INVOICE}"),
        (PREFIXED + "/", f"{PREFIXED}/pay/{ADDRESS}", f"{PREFIXED}/i/{INVOICE}"),
        ("https://shop.example", f"https://shop.example/pay/{ADDRESS}", None),
    ],
)
def test_the_invoice_link_and_its_redirect(
    tmp_path: Path,
    migrated_templates: MigratedTemplates,
    public_url: str | None,
    checkout: str,
    link: str | None,
) -> None:
    client = _app(tmp_path, migrated_templates, public_url)
    for path in (f"/i/{INVOICE}", f"/invoice?id={INVOICE}"):
        answer = client.get(path)
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == checkout
    # An unknown invoice is still the checkout's HTML 404; a too long id a JSON 4xx.
    missing = client.get("/i/no-such-invoice")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    too_long = client.get("/invoice?id=" + "x" * 65)
    assert 400 <= too_long.status_code < 500
    assert too_long.headers["content-type"].startswith("application/json")
    if link is not None:
        # checkoutLink, where the WooCommerce plugin sends the buyer: the same base.
        answer = client.get(
            f"/api/v1/stores/{SHOP}/invoices/{INVOICE}",
            headers={"Authorization": f"token {OPERATOR}"},
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["checkoutLink"] == link


# ------------------------------------------------------------------------- payment links


@pytest.mark.parametrize(
    ("public_url", "url"),
    [(None, "http://testserver/l/tips"), (PREFIXED + "/", f"{PREFIXED}/l/tips")],
)
def test_a_payment_links_url(tmp_path: Path, public_url: str | None, url: str) -> None:
    api = build_api(tmp_path, public_url=public_url)
    answer = api.create({"slug": "tips", "title": "Tips"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["url"] == url


@pytest.mark.parametrize(
    ("public_url", "checkout", "cookie_path", "secure"),
    [
        (None, "/pay/", "/l/coffee", False),
        (PREFIXED, f"{PREFIXED}/pay/", "/xmr/l/coffee", True),
        ("http://shop.example/xmr/", "http://shop.example/xmr/pay/", "/xmr/l/coffee", False),
    ],
)
def test_pay_on_a_link_page_and_coming_back(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    public_url: str | None,
    checkout: str,
    cookie_path: str,
    secure: bool,
) -> None:
    monkeypatch.chdir(tmp_path)  # Settings' default database path: never the repository's
    shop = build_link_shop(public_url=public_url)
    link = shop.link("coffee", amount=XMR)
    answer = shop.pay("coffee")
    assert answer.status_code == 303, answer.text
    location = answer.headers["location"]
    assert location.startswith(checkout), location
    address = location.removeprefix(checkout)
    cookie = [p.strip().lower() for p in answer.headers["set-cookie"].split(";")]
    assert f"path={cookie_path}" in cookie
    assert ("secure" in cookie) is secure
    # The same browser opens the link again: "continue" leads to the same checkout. (The
    # cookie is sent by hand: its path is the public one, which the test client is not.)
    page = shop.client.get("/l/coffee", headers={"Cookie": f"xg_link_{link.id}={address}"})
    assert page.status_code == 200, page.text
    resume = re.search(r'<a id="resume-link" href="([^"]+)"', page.text)
    assert resume is not None and resume.group(1) == location


# ------------------------------------------------------------------------------- refunds


@pytest.mark.parametrize(
    ("public_url", "base"),
    [(None, "http://testserver/refund/"), (PREFIXED, f"{PREFIXED}/refund/")],
)
def test_a_refunds_claim_url(tmp_path: Path, public_url: str | None, base: str) -> None:
    shop = build_refund_shop(tmp_path, public_url=public_url)
    answer = shop.client.post(f"/receive/{REQUEST_A}/refunds", json={"amount": XMR})
    assert answer.status_code == 200, answer.text
    claim_url = answer.json()["claim_url"]
    assert claim_url.startswith(base), claim_url
    token = claim_url.removeprefix(base)
    # The page the link names is the refund's (the proxy strips the prefix).
    assert shop.client.get(f"/refund/{token}").status_code == 200
