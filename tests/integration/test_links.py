"""Payment links on regtest, both databases: a link made through the API, paid
from its public page ``/l/<slug>`` as a browser's plain form would (httpx, redirects not
followed), on the real server, the real wallet and the real chain.

- A fixed amount: "Pay" answers 303 to ``/pay/<address>`` with the cookie
  ``xg_link_<id>``; the same browser pressing "Pay" again goes back to that request
  (one request made); the request says ``link`` and expires as the link says; paid on
  regtest it is paid, its callback says ``link``, and the link counts 1 use, 1 paid
  and the amount received.
- An open amount with ``min_amount``: the typed "0.25" makes a request of 0.25 XMR,
  below the minimum is the form again (400), nothing made; the same on a PostgreSQL
  gateway without an address pool (``--address-pool-size 0``: the wallet path through
  the read cache, where a link's request once raised TypeError).
- A flood of 100 "Pay" from one client makes 10 requests (the rest 429 with
  ``Retry-After``), and the API's ``POST /receive`` is still served from the pool.
- Another store's key cannot see, change or delete the link (404).

One gateway per database (the ``gateway`` fixture of conftest.py, its default pool), and
one funding transaction for the module: it pays the fixed and the open link's requests,
and one block confirms it. The gateway without a pool starts in the background while
the other tests run. Each browser posts from its own loopback address (127.0.0.x): the
page's per-client limit (10 a minute) belongs to one test each.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import asyncpg
import httpx
import pytest

from tests.integration.callback_support import XMR
from tests.integration.receiver import Receiver, start_receiver
from testsupport.gateway import SYNC_WAIT, Gateway, GatewayProcess, close_gateway, start_gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

# The gateway fixture of conftest.py reads these (the receiver is on loopback).
GATEWAY_ARGS = ["--callback-allow", "127.0.0.1"]
FIXED = 3 * XMR // 10
MINIMUM = XMR // 5
TYPED = "0.25"
OPEN = 250_000_000_000
LIFE = 1800  # the links' expires_in: their requests' life, and the cookie's
FLOOD = 100
FLOOD_THREADS = 10
CLIENT_LIMIT = 10  # web/link_page/routes.py: "Pay" per client a minute
FORM = "application/x-www-form-urlencoded"
# Each browser its own client address (all of 127/8 is loopback on Linux).
FIXED_BROWSER = "127.0.0.11"
OPEN_BROWSER = "127.0.0.12"
FLOOD_CLIENT = "127.0.0.13"
OTHER_CLIENT = "127.0.0.14"
NO_POOL_BROWSER = "127.0.0.15"


# ------------------------------------------------------------------ fixtures and helpers


def browser(ip: str) -> httpx.Client:
    """A client keeping cookies, posting from ``ip``, never following redirects."""
    return httpx.Client(
        transport=httpx.HTTPTransport(local_address=ip),
        follow_redirects=False,
        timeout=30,
        trust_env=False,
    )


def pay(
    client: httpx.Client, gateway: GatewayProcess, slug: str, amount: str | None = None
) -> httpx.Response:
    """Press "Pay" on ``/l/<slug>``: the page's own form as a browser posts it (same
    origin, form-encoded; an open amount's field ``amount``)."""
    body = urlencode({"amount": amount} if amount is not None else {})
    return client.post(
        f"{gateway.url}/l/{slug}",
        content=body.encode(),
        headers={"Content-Type": FORM, "Origin": gateway.url, "Sec-Fetch-Site": "same-origin"},
    )


def checkout_of(answer: httpx.Response) -> str:
    """The address of the 303's checkout, ``/pay/<address>``."""
    assert answer.status_code == 303, (answer.status_code, answer.text[:500])
    location = answer.headers["location"]
    assert location.startswith("/pay/"), location
    return location.removeprefix("/pay/")


def make_link(gateway: GatewayProcess, **fields: Any) -> dict[str, Any]:
    """POST /links, asserting 200 and its public URL."""
    r = gateway.post("/links", json=fields)
    assert r.status_code == 200, r.text
    made: dict[str, Any] = r.json()
    assert made["id"].startswith("ln_") and made["url"] == f"{gateway.url}/l/{made['slug']}"
    return made


def link_of(gateway: GatewayProcess, link_id: str) -> dict[str, Any]:
    """GET /links/{id}, asserting 200."""
    r = gateway.get(f"/links/{link_id}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def made_by(gateway: GatewayProcess, link_id: str) -> list[dict[str, Any]]:
    """GET /receive?link=<id>: the requests the link made."""
    r = gateway.get("/receive", params={"link": link_id, "limit": 100})
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["requests"]
    return found


def request_of(gateway: GatewayProcess, address: str) -> dict[str, Any]:
    """GET /receive/{address}, asserting 200."""
    r = gateway.get(f"/receive/{address}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def life_of(request: dict[str, Any]) -> float:
    """Seconds from a request's ``created_at`` to its ``expires_at``."""
    created = datetime.fromisoformat(request["created_at"])
    expires = datetime.fromisoformat(request["expires_at"])
    return (expires - created).total_seconds()


def pool_addresses(gateway: GatewayProcess) -> set[str]:
    """The default store's pooled subaddresses, read from the gateway's database."""
    query = "SELECT address FROM address_pool WHERE store_id = 'default'"
    if gateway.backend == "postgresql":

        async def run() -> set[str]:
            conn = await asyncpg.connect(gateway.database)
            try:
                return {str(row[0]) for row in await conn.fetch(query)}
            finally:
                await conn.close()

        return asyncio.run(run())
    with contextlib.closing(sqlite3.connect(gateway.database)) as conn:
        return {str(row[0]) for row in conn.execute(query)}


def is_paid(status: dict[str, Any]) -> bool:
    """Paid (``complete`` once unlocked: other modules may mine meanwhile)."""
    return status["status"] in ("paid", "complete")


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    """The shop's callback receiver for the module."""
    r = start_receiver()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture(scope="module", autouse=True)
def no_pool(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[Gateway]]:
    """A PostgreSQL gateway without an address pool, started in the background when the
    module starts (its wallet-rpc, wallet and process take 5 s, spent meanwhile on the
    other tests), stopped when it ends."""
    workdir = tmp_path_factory.mktemp("no-pool")
    with ThreadPoolExecutor(max_workers=1) as starter:
        started = starter.submit(
            start_gateway, devnet, "postgresql", workdir, ["--address-pool-size", "0"]
        )
        try:
            yield started
        finally:
            if started.exception() is None:
                close_gateway(started.result())


@dataclass(frozen=True)
class Paying:
    """The fixed and the open link, each pressed "Pay" on once by its own browser."""

    fixed: dict[str, Any]
    fixed_browser: httpx.Client
    fixed_answer: httpx.Response
    open: dict[str, Any]
    open_browser: httpx.Client
    open_answer: httpx.Response

    @property
    def fixed_address(self) -> str:
        return checkout_of(self.fixed_answer)

    @property
    def open_address(self) -> str:
        return checkout_of(self.open_answer)


@pytest.fixture(scope="module")
def paying(gateway: Gateway, hooks: Receiver) -> Iterator[Paying]:
    """Both links made by API and paid from their pages (not yet with money)."""
    fixed = make_link(
        gateway,
        title="A bag of coffee beans",
        description="Roasted this week.\nWhole beans, 250 g.",
        amount=FIXED,
        expires_in=LIFE,
        callback_url=hooks.url,
    )
    opened = make_link(
        gateway,
        slug=f"donate-{gateway.backend}",
        title="Donate to the library",
        min_amount=MINIMUM,
        expires_in=LIFE,
        callback_url=hooks.url,
    )
    with browser(FIXED_BROWSER) as one, browser(OPEN_BROWSER) as other:
        yield Paying(
            fixed=fixed,
            fixed_browser=one,
            fixed_answer=pay(one, gateway, fixed["slug"]),
            open=opened,
            open_browser=other,
            open_answer=pay(other, gateway, opened["slug"], TYPED),
        )


@pytest.fixture(scope="module")
def paid(gateway: Gateway, devnet: Devnet, paying: Paying) -> Paying:
    """ONE transaction pays both links' requests, one block confirms it: both paid."""
    devnet.pay_many([(paying.fixed_address, FIXED), (paying.open_address, OPEN)], mine_blocks=1)
    for address in (paying.fixed_address, paying.open_address):
        gateway.wait_status(address, is_paid)
    return paying


# ------------------------------------------------------------------ a fixed amount


def test_a_fixed_amount_link_makes_one_request_per_browser(
    gateway: Gateway, paying: Paying
) -> None:
    """Pay: 303 to the checkout with the link's cookie; Pay again in the same browser:
    the same checkout, nothing made; the request says ``link`` and lives as the link
    says."""
    link = paying.fixed
    page = gateway.client.get(link["url"])
    assert page.status_code == 200 and "A bag of coffee beans" in page.text, page.text[:500]
    assert "Roasted this week." in page.text and 'id="pay-form"' in page.text

    address = paying.fixed_address
    cookie = paying.fixed_answer.headers["set-cookie"]
    assert cookie.startswith(f"xg_link_{link['id']}={address};"), cookie
    for part in (f"Max-Age={LIFE}", f"Path=/l/{link['slug']}", "HttpOnly", "SameSite=lax"):
        assert part.lower() in cookie.lower(), (part, cookie)
    assert paying.fixed_browser.cookies.get(f"xg_link_{link['id']}") == address

    again = pay(paying.fixed_browser, gateway, link["slug"])
    assert checkout_of(again) == address, "the same browser goes back to its request"
    assert gateway.client.get(gateway.url + again.headers["location"]).status_code == 200
    [listed] = made_by(gateway, link["id"])
    assert listed["address"] == address and listed["link"] == link["id"]

    made = request_of(gateway, address)
    assert made["link"] == link["id"]
    assert (made["amount"]["expected"], made["description"]) == (FIXED, link["title"])
    assert abs(life_of(made) - LIFE) <= 1, made
    before = link_of(gateway, link["id"])
    assert (before["uses"], before["paid"], before["received"]) == (1, 0, 0)
    assert [r["id"] for r in gateway.get("/links").json()["links"]].count(link["id"]) == 1


# ------------------------------------------------------------------ an open amount


def test_an_open_amount_link_makes_the_typed_amount_at_least_its_minimum(
    gateway: Gateway, paying: Paying
) -> None:
    """The typed "0.25" is a request of 250000000000 piconero; below the minimum, or
    malformed, is the form again (400) and makes nothing; the same amount typed again
    (or none) in the same browser goes back to the request."""
    link = paying.open
    address = paying.open_address
    made = request_of(gateway, address)
    assert (made["amount"]["expected"], made["link"]) == (OPEN, link["id"])
    assert abs(life_of(made) - LIFE) <= 1, made

    for typed in ("0.1", "0,25"):
        refused = pay(paying.open_browser, gateway, link["slug"], typed)
        assert refused.status_code == 400, (typed, refused.status_code, refused.text[:300])
        assert "location" not in refused.headers and 'id="pay-form"' in refused.text
    below = pay(paying.open_browser, gateway, link["slug"], "0.1")
    assert "at least 0.2" in below.text, below.text
    again = pay(paying.open_browser, gateway, link["slug"], TYPED)
    assert checkout_of(again) == address
    untyped = pay(paying.open_browser, gateway, link["slug"], "")
    assert checkout_of(untyped) == address, "nothing typed: continue the open request"
    assert [r["address"] for r in made_by(gateway, link["id"])] == [address]
    assert link_of(gateway, link["id"])["uses"] == 1


# ------------------------------------------------------------------ paid on regtest


def test_paid_link_requests_call_back_with_their_link_and_count_on_it(
    gateway: Gateway, paid: Paying, hooks: Receiver
) -> None:
    """Both requests paid in one transaction, one block: ``paid``, their callbacks say
    ``link``, and each link counts 1 use, 1 paid and what it received."""
    addresses = {paid.fixed_address, paid.open_address}
    hooks.wait_for(
        lambda got: addresses <= {r.json["address"] for r in got},
        timeout=SYNC_WAIT,
        what="a callback for each link's request",
    )
    for link, address, amount in (
        (paid.fixed, paid.fixed_address, FIXED),
        (paid.open, paid.open_address, OPEN),
    ):
        assert is_paid(gateway.status(address))
        calls = [r.json for r in hooks.delivered() if r.json["address"] == address]
        assert calls and all(c["link"] == link["id"] for c in calls), calls
        assert calls[-1]["amount"]["expected"] == amount, calls[-1]
        counts = link_of(gateway, link["id"])
        assert (counts["uses"], counts["paid"], counts["received"]) == (1, 1, amount)
    # Paid: the same browser pressing Pay again gets a new request, not the paid one.
    anew = checkout_of(pay(paid.fixed_browser, gateway, paid.fixed["slug"]))
    assert anew != paid.fixed_address
    assert paid.fixed_browser.cookies.get(f"xg_link_{paid.fixed['id']}") == anew
    assert link_of(gateway, paid.fixed["id"])["uses"] == 2


def test_a_link_request_without_an_address_pool_on_postgresql(
    no_pool: Future[Gateway],
) -> None:
    """On a gateway with ``--address-pool-size 0`` on PostgreSQL (a subaddress from the
    wallet per request, written and read through the read cache, which once raised
    TypeError on a link's request) the request keeps its link. SQLite has no read cache:
    its wallet path is the unit tests'."""
    bare = no_pool.result()
    link = make_link(bare, title="Tip jar", min_amount=MINIMUM)
    with browser(NO_POOL_BROWSER) as client:
        address = checkout_of(pay(client, bare, link["slug"], TYPED))
    made = request_of(bare, address)
    assert (made["amount"]["expected"], made["link"]) == (OPEN, link["id"])
    assert [(r["address"], r["link"]) for r in made_by(bare, link["id"])] == [(address, link["id"])]
    assert link_of(bare, link["id"])["uses"] == 1


# ------------------------------------------------------------------ a flood


def test_a_flood_from_one_client_makes_ten_and_the_pool_still_serves_the_api(
    gateway: Gateway,
) -> None:
    """100 "Pay" at once from one client without cookies: 10 made, 90 answered 429 with
    ``Retry-After``; another client still pays the link, and POST /receive is served
    from the pool."""
    link = make_link(gateway, title="Raffle ticket", amount=XMR // 100, expires_in=LIFE)

    def press(times: int) -> list[httpx.Response]:
        answers = []
        with browser(FLOOD_CLIENT) as client:
            for _ in range(times):
                client.cookies.clear()  # a flood keeps no cookies
                answers.append(pay(client, gateway, link["slug"]))
        return answers

    with ThreadPoolExecutor(max_workers=FLOOD_THREADS) as workers:
        batches = workers.map(press, [FLOOD // FLOOD_THREADS] * FLOOD_THREADS)
        answers = [a for batch in batches for a in batch]
    assert len(answers) == FLOOD
    made = [a for a in answers if a.status_code == 303]
    refused = [a for a in answers if a.status_code == 429]
    assert len(made) == CLIENT_LIMIT and len(refused) == FLOOD - CLIENT_LIMIT, sorted(
        {a.status_code for a in answers}
    )
    for answer in refused:
        assert 1 <= int(answer.headers["retry-after"]) <= 60, answer.headers
        assert "set-cookie" not in answer.headers
    addresses = {checkout_of(a) for a in made}
    assert len(addresses) == CLIENT_LIMIT
    assert {r["address"] for r in made_by(gateway, link["id"])} == addresses

    with browser(OTHER_CLIENT) as other:
        addresses.add(checkout_of(pay(other, gateway, link["slug"])))
    assert link_of(gateway, link["id"])["uses"] == CLIENT_LIMIT + 1

    pooled = pool_addresses(gateway)
    assert pooled, "the pool still holds subaddresses"
    api = gateway.receive(XMR // 100, description="an order through the API")
    assert api["address"] in pooled and api["address"] not in addresses
    assert "link" not in request_of(gateway, api["address"])


# ------------------------------------------------------------------ stores


def test_another_stores_key_cannot_see_or_change_the_link(gateway: Gateway, paying: Paying) -> None:
    """A key of another store: GET, PATCH and DELETE of the link are 404, its list and
    its requests by link are empty; the link is unchanged."""
    link = paying.fixed
    store = gateway.post(
        "/stores", json={"id": "other", "name": "Other", "wallet": {"account": "new"}}
    )
    assert store.status_code == 200, store.text
    key = gateway.post("/stores/other/keys")
    assert key.status_code == 200, key.text
    other = {"Authorization": f"Bearer {key.json()['key']}"}

    path = f"/links/{link['id']}"
    assert gateway.get(path, headers=other).status_code == 404
    changed = gateway.client.patch(gateway.url + path, json={"active": False}, headers=other)
    assert changed.status_code == 404, changed.text
    assert gateway.delete(path, headers=other).status_code == 404
    listed = gateway.get("/links", headers=other)
    assert listed.status_code == 200 and listed.json()["links"] == []
    by_link = gateway.get("/receive", params={"link": link["id"]}, headers=other)
    assert by_link.status_code == 200 and by_link.json()["requests"] == []
    assert link_of(gateway, link["id"])["active"] is True
