"""The consent page ``/api-keys/authorize`` over the fake site.

The happy path (key, store, approve, the auto-posting form with ``apiKey``, ``userId``
and ``permissions[]``) and each refusal: a redirect neither https nor loopback, an
unknown permission, no operator keys, a wrong or absent or non-admin key, a replayed
token, a token of another consent, a declined consent: none of them makes a key.
"""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from tests.unit.greenfield_site import OP_READER, OPERATOR, SHOP_A, GreenfieldSite, auth
from xmrgate.web.checkout.page import csp_hash
from xmrgate.web.consent_page.page import POST_SCRIPT

WOO = [
    "btcpay.store.canviewinvoices",
    "btcpay.store.cancreateinvoice",
    "btcpay.store.canviewstoresettings",
    "btcpay.store.canmodifyinvoices",
    "btcpay.store.cancreatenonapprovedpullpayments",
    "btcpay.store.webhooks.canmodifywebhooks",
]
REDIRECT = "https://shop.example/?btcpay-settings-callback"


def authorize_url(redirect: str = REDIRECT, permissions: list[str] | None = None) -> str:
    query = [("permissions", p) for p in (WOO if permissions is None else permissions)]
    query += [("applicationName", "WooCommerce"), ("strict", "true")]
    query += [("selectiveStores", "true"), ("redirect", redirect)]
    return "/api-keys/authorize?" + urlencode(query)


def hidden(html: str, name: str) -> list[str]:
    found = re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', html)
    return [unescape(v) for n, v in found if unescape(n) == name]


@pytest.fixture
def site() -> GreenfieldSite:
    return GreenfieldSite()


def _key_count(site: GreenfieldSite) -> int:
    return len(site.stores.keys())


def _step2(client: TestClient, url: str, key: str = OPERATOR) -> str:
    answer = client.post(url, data={"step": "key", "operator_key": key})
    assert answer.status_code == 200, answer.text
    return str(answer.text)


def test_approval_posts_a_key_with_exactly_the_permissions(site: GreenfieldSite) -> None:
    url = authorize_url()
    with TestClient(site.app) as client:
        first = client.get(url)
        assert first.status_code == 200
        assert "WooCommerce" in first.text and "shop.example" in first.text
        assert "See invoices and their payments" in first.text
        assert "form-action 'self'" in first.headers["content-security-policy"]
        page = _step2(client, url)
        assert 'id="store"' in page and "shop-c" not in page  # the disabled store is not offered
        token = hidden(page, "token")[0]
        before = _key_count(site)
        done = client.post(
            url,
            data={"step": "approve", "operator_key": OPERATOR, "token": token, "store": "shop-b"},
        )
        assert done.status_code == 200, done.text
        csp = done.headers["content-security-policy"]
        assert "form-action https://shop.example" in csp and csp_hash(POST_SCRIPT) in csp
        assert done.headers["cache-control"] == "no-store"
        assert f'action="{REDIRECT}"' in done.text
        assert hidden(done.text, "userId") == [
            "key:" + site.stores.operator_keys[0].digest.hex()[:8]
        ]
        assert hidden(done.text, "permissions[]") == [f"{p}:shop-b" for p in WOO]
        [new_key] = hidden(done.text, "apiKey")
        assert _key_count(site) == before + 1
        current = client.get("/api/v1/api-keys/current", headers=auth(new_key)).json()
        assert current["permissions"] == [f"{p}:shop-b" for p in WOO]
        # The same token again: refused, and no second key.
        again = client.post(
            url,
            data={"step": "approve", "operator_key": OPERATOR, "token": token, "store": "shop-b"},
        )
        assert again.status_code == 400 and "already used" in again.text
        assert _key_count(site) == before + 1


@pytest.mark.parametrize(
    "redirect",
    [
        "http://shop.example/callback",
        "javascript:alert(1)",
        "ftp://127.0.0.1/x",
        "https://user:pw@shop.example/",
        "",
        "http://10.0.0.1/cb",
    ],
)
def test_a_bad_redirect_is_refused_before_any_key_question(
    site: GreenfieldSite, redirect: str
) -> None:
    with TestClient(site.app) as client:
        for answer in (
            client.get(authorize_url(redirect)),
            client.post(authorize_url(redirect), data={"step": "key", "operator_key": OPERATOR}),
        ):
            assert answer.status_code == 400
            assert "operator_key" not in answer.text


@pytest.mark.parametrize(
    "redirect", ["http://127.0.0.1:8080/cb", "http://localhost/cb", "http://[::1]:9/cb?x=1"]
)
def test_loopback_http_is_allowed(site: GreenfieldSite, redirect: str) -> None:
    with TestClient(site.app) as client:
        assert client.get(authorize_url(redirect)).status_code == 200


@pytest.mark.parametrize("permissions", [[*WOO, "btcpay.store.cansteal"], ["unrestricted"], []])
def test_an_unknown_or_unfit_permission_is_refused(
    site: GreenfieldSite, permissions: list[str]
) -> None:
    with TestClient(site.app) as client:
        answer = client.get(authorize_url(permissions=permissions))
        assert answer.status_code == 400 and "operator_key" not in answer.text
    if permissions and "cansteal" in permissions[-1]:
        assert "cansteal" in answer.text


def test_a_gateway_without_operator_keys_refuses(site: GreenfieldSite) -> None:
    open_site = GreenfieldSite(operator=False)
    with TestClient(open_site.app) as client:
        answer = client.get(authorize_url())
        assert answer.status_code == 403 and "operator key" in answer.text
        posted = client.post(authorize_url(), data={"step": "key", "operator_key": OPERATOR})
        assert posted.status_code == 403


@pytest.mark.parametrize("presented", ["", "wrong-key-0123456789", OP_READER, SHOP_A])
def test_a_wrong_absent_or_weak_key_is_asked_again(site: GreenfieldSite, presented: str) -> None:
    url = authorize_url()
    with TestClient(site.app) as client:
        token = hidden(_step2(client, url), "token")[0]
        before = _key_count(site)
        for step in ("key", "approve"):
            answer = client.post(
                url,
                data={"step": step, "operator_key": presented, "token": token, "store": "shop-a"},
            )
            assert answer.status_code == 401
            assert 'name="token"' not in answer.text
        assert _key_count(site) == before
        # The token was not spent by the refused posts: the operator may still approve.
        ok = client.post(
            url,
            data={"step": "approve", "operator_key": OPERATOR, "token": token, "store": "shop-a"},
        )
        assert ok.status_code == 200 and _key_count(site) == before + 1


def test_decline_makes_no_key_and_spends_the_token(site: GreenfieldSite) -> None:
    url = authorize_url()
    with TestClient(site.app) as client:
        token = hidden(_step2(client, url), "token")[0]
        before = _key_count(site)
        declined = client.post(
            url, data={"step": "decline", "operator_key": OPERATOR, "token": token}
        )
        assert declined.status_code == 200 and "No key was made" in declined.text
        late = client.post(
            url,
            data={"step": "approve", "operator_key": OPERATOR, "token": token, "store": "shop-a"},
        )
        assert late.status_code == 400
        assert _key_count(site) == before


def test_a_token_of_another_consent_or_store_is_refused(site: GreenfieldSite) -> None:
    url = authorize_url()
    other = authorize_url(permissions=WOO[:1])
    with TestClient(site.app) as client:
        token = hidden(_step2(client, url), "token")[0]
        before = _key_count(site)
        wrong = client.post(
            other,
            data={"step": "approve", "operator_key": OPERATOR, "token": token, "store": "shop-a"},
        )
        assert wrong.status_code == 400
        closed = client.post(
            url,
            data={"step": "approve", "operator_key": OPERATOR, "token": token, "store": "shop-c"},
        )
        assert closed.status_code == 400
        assert _key_count(site) == before


def test_posts_are_limited_per_client(site: GreenfieldSite) -> None:
    url = authorize_url()
    with TestClient(site.app) as client:
        codes = [
            client.post(url, data={"step": "key", "operator_key": "nope"}).status_code
            for _ in range(12)
        ]
    assert codes[:10] == [401] * 10 and codes[10] == 429
