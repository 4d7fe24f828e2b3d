"""Payment links over HTTP (``web/api/links.py``), in process: the app over
Gateways whose ``Links`` use the in-memory repository (``testsupport/fake_links.py``),
two stores. Covers the routes and their JSON, the scopes (a read key cannot write), a
store key confined to its store, another store's link as 404, and the error answers
(400 for bad bodies, 404, 409 for a taken slug)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from tests.unit.fakes import FakeOutbox, FakePaymentStore, FakeWallet
from tests.unit.gateway_builder import fake_app, fake_gateway, fake_stores
from testsupport.fake_links import FakeLinkPool, FakeLinkStore, LinkBook
from xmrgate.config import Settings
from xmrgate.core.gateway import Gateway
from xmrgate.core.invoices import Invoices, ListQuery
from xmrgate.core.links import Links
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.stores import DEFAULT_STORE_NAME, Store, StoreKey, key_digest

OPERATOR = "operator-key-for-the-links-api"
READER = "reader-key-for-the-links-api"
BIKES_KEY = "xgs_bikes-key-0123456789abcdef"
PRIMARY = "4" + "P" * 94
XMR = 10**12


class AllowAll:
    async def check(self, url: str, field: str) -> None:
        return None


class Rows:
    """The stores table (the default store and Bob's) and Bob's key (read + receive)."""

    async def all(self) -> list[Store]:
        return [
            Store(id="default", name=DEFAULT_STORE_NAME, account_index=0),
            Store(id="bikes", name="Bob's Bikes", account_index=1),
        ]

    async def active_keys(self) -> list[StoreKey]:
        return [
            StoreKey(
                id="00000000000000b1",
                store_id="bikes",
                digest=key_digest(BIKES_KEY),
                scopes=frozenset({"read", "receive"}),
            )
        ]


@dataclass
class Api:
    client: TestClient
    book: LinkBook
    links: dict[str, Links]

    def as_(self, key: str = OPERATOR, store: str | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {key}"}
        if store is not None:
            headers["X-Xmrgate-Store"] = store
        return headers

    def create(self, body: dict[str, Any], **who: Any) -> Response:
        answer: Response = self.client.post("/links", json=body, headers=self.as_(**who))
        return answer


def _gateway(book: LinkBook, store_id: str, keys: list[ApiKey]) -> Gateway:
    wallet = FakeWallet()
    requests = PaymentRequests(
        wallet,
        FakePaymentStore(requests=book.requests),  # type: ignore[arg-type]
        FakeOutbox(),
        AllowAll(),
        pool=FakeLinkPool(book, store_id),
    )
    return fake_gateway(
        store_id,
        wallet=wallet,
        payment_requests=requests,
        identity=WalletIdentity(primary_address=PRIMARY),
        api_keys=keys,
        links=Links(
            FakeLinkStore(book, store_id),
            requests,
            AllowAll(),
            store_id=store_id,
            currencies=("EUR",),
            rate_lock=900,
        ),
    )


def build_api(tmp_path: Path, public_url: str | None = None) -> Api:
    book = LinkBook()
    keys = [
        ApiKey(digest=key_digest(OPERATOR), label="key:op", scopes=frozenset({"read", "receive"})),
        ApiKey(digest=key_digest(READER), label="key:read", scopes=frozenset({"read"})),
    ]
    built: dict[str, Gateway] = {}

    def build(store: Store) -> Gateway:
        built[store.id] = _gateway(book, store.id, keys)
        return built[store.id]

    registry = fake_stores(build, Rows(), operator_keys=keys)
    settings = Settings(
        sqlite=str(tmp_path / "unused.sqlite3"), public_url=public_url, metrics=False
    )
    app = fake_app(settings, registry)
    links = {k: g.links for k, g in built.items()}
    return Api(TestClient(app), book, links)


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return build_api(tmp_path)


def _refused(answer: Response, status: int, words: str = "") -> str:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == status and words in body["message"], body
    return str(body["message"])


def test_create_get_list(api: Api) -> None:
    answer = api.create(
        {
            "slug": "coffee",
            "title": "Coffee",
            "description": "Fresh",
            "amount": 3 * XMR,
            "callback_url": "https://shop.example/cb",
            "max_uses": 5,
        }
    )
    assert answer.status_code == 200, answer.text
    link = answer.json()
    assert link["id"].startswith("ln_") and link["slug"] == "coffee"
    assert link["url"] == "http://testserver/l/coffee"
    assert (link["amount"], link["expires_in"], link["max_uses"], link["active"]) == (
        3 * XMR,
        3600,
        5,
        True,
    )
    assert (link["uses"], link["paid"], link["received"]) == (0, 0, 0)
    assert "price" not in link
    got = api.client.get(f"/links/{link['id']}", headers=api.as_(READER))
    assert got.status_code == 200 and got.json() == link
    listed = api.client.get("/links", headers=api.as_(READER))
    assert listed.status_code == 200 and listed.json() == {"links": [link]}


def test_fiat_and_open_links(api: Api) -> None:
    priced = api.create({"title": "Bike", "price": {"amount": "199.00", "currency": "eur"}})
    assert priced.status_code == 200, priced.text
    body = priced.json()
    assert body["price"] == {"amount": "199.00", "currency": "EUR"}
    assert body["expires_in"] == 900  # the rate lock, not an hour
    opened = api.create({"title": "Tip jar", "min_amount": XMR // 100})
    assert opened.status_code == 200, opened.text
    assert opened.json()["amount"] is None and opened.json()["min_amount"] == XMR // 100
    assert len(opened.json()["slug"]) == 10  # drawn at random


def test_the_public_url_makes_the_link_url(tmp_path: Path) -> None:
    api = build_api(tmp_path, public_url="https://pay.example.org/")
    answer = api.create({"slug": "tips", "title": "Tips"})
    assert answer.json()["url"] == "https://pay.example.org/l/tips"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, "title"),
        ({"title": "x", "amount": "5"}, "amount"),
        ({"title": "x", "amount": 0}, "amount"),
        ({"title": "x", "amount": 1.5}, "amount"),
        ({"title": "x", "unknown": 1}, "unknown"),
        ({"title": "x", "slug": "Bad Slug"}, "slug"),
        ({"title": "x", "amount": 5, "price": {"amount": "5", "currency": "EUR"}}, "one of"),
        ({"title": "x", "amount": 5, "min_amount": 1}, "open amount"),
        ({"title": "x", "price": {"amount": "5", "currency": "USD"}}, "not configured"),
        ({"title": "x", "price": {"amount": "5.001", "currency": "EUR"}}, "decimals"),
        ({"title": "x", "currency": "EUR", "expires_in": 3600}, "rate lock"),
        ({"title": "x", "callback_url": "ftp://shop.example/"}, "callback_url"),
        ({"title": "x", "expires_in": 10}, "expires_in"),
        ({"title": "x", "max_uses": 0}, "max_uses"),
        ({"title": "x", "active": "yes"}, "active"),
        ({"title": "x" * 201}, "title"),
        ({"title": "a\u0000b"}, "NUL"),
    ],
)
def test_bad_bodies_are_400_and_store_nothing(api: Api, body: dict[str, Any], words: str) -> None:
    _refused(api.create(body), 400, words)
    assert api.book.links == {}


def test_not_json_is_400(api: Api) -> None:
    answer = api.client.post(
        "/links", content=b"{not json", headers={**api.as_(), "Content-Type": "application/json"}
    )
    _refused(answer, 400, "JSON")


def test_a_taken_slug_is_409_in_any_store(api: Api) -> None:
    assert api.create({"slug": "coffee", "title": "Coffee"}).status_code == 200
    _refused(api.create({"slug": "coffee", "title": "Other"}, store="bikes"), 409)
    _refused(api.create({"slug": "coffee", "title": "Other"}, key=BIKES_KEY), 409)
    assert len(api.book.links) == 1


def test_scopes(api: Api) -> None:
    _refused(api.create({"title": "x"}, key=READER), 403, "receive")
    assert api.client.post("/links", json={"title": "x"}).status_code == 401
    made = api.create({"title": "x"}).json()
    _refused(
        api.client.patch(f"/links/{made['id']}", json={"title": "y"}, headers=api.as_(READER)),
        403,
    )
    _refused(api.client.delete(f"/links/{made['id']}", headers=api.as_(READER)), 403)
    assert api.client.get("/links").status_code == 401
    assert len(api.book.links) == 1 and api.book.links[made["id"]].fields.title == "x"


def test_another_stores_link_is_404(api: Api) -> None:
    theirs = api.create({"title": "Bike"}, key=BIKES_KEY).json()
    assert api.book.links[theirs["id"]].store_id == "bikes"
    mine = api.create({"title": "Coffee"}).json()
    for who in ({"key": OPERATOR}, {"key": READER}):
        _refused(api.client.get(f"/links/{theirs['id']}", headers=api.as_(**who)), 404)
    _refused(
        api.client.patch(f"/links/{theirs['id']}", json={"title": "y"}, headers=api.as_()), 404
    )
    _refused(api.client.delete(f"/links/{theirs['id']}", headers=api.as_()), 404)
    # Bob's key sees Bob's links only, and cannot name another store.
    bikes = api.client.get("/links", headers=api.as_(BIKES_KEY)).json()
    assert [x["id"] for x in bikes["links"]] == [theirs["id"]]
    _refused(api.client.get(f"/links/{mine['id']}", headers=api.as_(BIKES_KEY)), 404)
    _refused(api.client.get("/links", headers=api.as_(BIKES_KEY, store="default")), 403)
    # The operator picks a store with the header.
    picked = api.client.get(f"/links/{theirs['id']}", headers=api.as_(store="bikes"))
    assert picked.status_code == 200
    assert api.book.links[theirs["id"]].fields.title == "Bike"


def test_unknown_ids_are_404(api: Api) -> None:
    for link_id in ("ln_0000000000000000", "nothing", "ln_" + "x" * 200):
        _refused(api.client.get(f"/links/{link_id}", headers=api.as_()), 404, "no such link")


def test_patch(api: Api) -> None:
    made = api.create({"slug": "coffee", "title": "Coffee", "amount": 5, "max_uses": 2}).json()
    answer = api.client.patch(
        f"/links/{made['id']}",
        json={"title": "Tea", "max_uses": None, "return_url": "https://shop.example/r"},
        headers=api.as_(),
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["title"], body["amount"], body["max_uses"], body["slug"]) == (
        "Tea",
        5,
        None,
        "coffee",
    )
    assert body["return_url"] == "https://shop.example/r"
    switched = api.client.patch(
        f"/links/{made['id']}",
        json={"price": {"amount": "4.50", "currency": "EUR"}},
        headers=api.as_(),
    ).json()
    assert switched["amount"] is None and switched["price"]["amount"] == "4.50"
    assert switched["expires_in"] == 900
    for bad, words in (
        ({"slug": "tea"}, "slug"),
        ({"title": None}, "title"),
        ({"amount": 5, "price": {"amount": "1", "currency": "EUR"}}, "one of"),
        ({"expires_in": 5}, "expires_in"),
    ):
        _refused(api.client.patch(f"/links/{made['id']}", json=bad, headers=api.as_()), 400, words)
    assert api.book.links[made["id"]].fields.price == {"amount": "4.50", "currency": "EUR"}


def test_delete(api: Api) -> None:
    unused = api.create({"title": "Unused", "amount": 5}).json()
    used = api.create({"title": "Used", "amount": 5}).json()
    links = api.links["default"]
    link = asyncio.run(links.find(used["slug"]))
    asyncio.run(links.pay(link, None, None))
    assert api.client.get(f"/links/{used['id']}", headers=api.as_()).json()["uses"] == 1
    gone = api.client.delete(f"/links/{unused['id']}", headers=api.as_())
    assert gone.status_code == 200 and gone.json() == {"deleted": True}
    kept = api.client.delete(f"/links/{used['id']}", headers=api.as_())
    assert kept.status_code == 200 and kept.json() == {"deleted": False, "active": False}
    assert api.client.get(f"/links/{used['id']}", headers=api.as_()).json()["active"] is False
    _refused(api.client.delete(f"/links/{unused['id']}", headers=api.as_()), 404)


def test_the_request_list_filters_by_link(api: Api) -> None:
    asked: list[ListQuery] = []

    class Listing:
        async def page(self, query: ListQuery, now: Any) -> list[Any]:
            asked.append(query)
            return [r for r in api.book.requests.values() if r.link == query.link]

    made = api.create({"title": "Coffee", "amount": 5}).json()
    links = api.links["default"]
    request, _ = asyncio.run(links.pay(asyncio.run(links.find(made["slug"])), None, None))
    gateway = api.client.app.state.gateway  # type: ignore[attr-defined]
    gateway.invoices = Invoices(cast(Any, Listing()), cast(Any, None))  # the list only
    answer = api.client.get("/receive", params={"link": made["id"]}, headers=api.as_(READER))
    assert answer.status_code == 200, answer.text
    listed = answer.json()["requests"]
    assert [r["address"] for r in listed] == [request.address]
    assert listed[0]["link"] == made["id"]
    assert asked[-1].link == made["id"]
    api.client.get("/receive", headers=api.as_(READER))
    assert asked[-1].link is None
    _refused(api.client.get("/receive", params={"link": "x" * 65}, headers=api.as_()), 400)
