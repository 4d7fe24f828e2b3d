"""Stores on the real regtest wallet and both databases: accounts of the main
wallet, store keys, isolation of requests, events, callbacks, balances and payouts.

One gateway per database for the whole module (the ``gateway`` fixture of conftest.py),
with an operator key (no scopes listed: every scope, ``admin`` included) and a default
callback secret. Stores are made through the admin API; each test makes the stores it
needs fresh where it matters which subaddress or balance they have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.integration.callback_support import (
    UNLOCK_BLOCKS,
    XMR,
    mine_until_unlocked,
    signature_ok,
    wait_kinds,
)
from tests.integration.receiver import Receiver
from testsupport.gateway import SYNC_WAIT, Gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

OPERATOR_KEY = "operator-key-0123456789abcdef"
DEFAULT_SECRET = "default-callback-secret-0123"
# The gateway fixture adds --callback-allow 127.0.0.1 (the receivers are on loopback).
GATEWAY_ARGS = [
    "--api-key",
    OPERATOR_KEY,
    "--callback-secret",
    DEFAULT_SECRET,
    "--callback-retry-base",
    "0.5s",
    # Every store fills its own pool from the wallet when created: a small one keeps the
    # wallet-rpc (and so the sync tick) free for the tests (250 costs seconds per store).
    "--address-pool-size",
    "8",
    "--address-pool-low-water",
    "2",
]
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}
STORE_HEADER = "X-Xmrgate-Store"


def operator_on(store_id: str) -> dict[str, str]:
    """Headers of the operator acting on ``store_id``."""
    return {**OPERATOR, STORE_HEADER: store_id}


@dataclass(frozen=True)
class Shop:
    """A store made through the admin API, with one key of every store scope."""

    id: str
    account: int
    secret: str
    key: str
    key_id: str

    @property
    def auth(self) -> dict[str, str]:
        """Headers of this store's key."""
        return {"Authorization": f"Bearer {self.key}"}


def make_shop(gateway: Gateway, store_id: str) -> Shop:
    """POST /stores on a new account, then POST /stores/{id}/keys (all store scopes)."""
    secret = f"{store_id}-callback-secret-0123"
    r = gateway.post(
        "/stores",
        json={
            "id": store_id,
            "name": f"Shop {store_id}",
            "wallet": {"account": "new"},
            "callback_secret": secret,
        },
        headers=OPERATOR,
    )
    assert r.status_code == 200, r.text
    store = r.json()
    assert store["id"] == store_id and store["enabled"] is True, store
    assert store["callback_secret_set"] is True and "callback_secret" not in store, store
    k = gateway.post(f"/stores/{store_id}/keys", headers=OPERATOR)
    assert k.status_code == 200, k.text
    key = k.json()
    assert key["store"] == store_id and key["key"], key
    return Shop(
        id=store_id,
        account=int(store["wallet"]["account"]),
        secret=secret,
        key=key["key"],
        key_id=key["id"],
    )


@pytest.fixture(scope="module")
def shops(gateway: Gateway) -> tuple[Shop, Shop]:
    """Two stores of the module's gateway, made once per database."""
    return make_shop(gateway, "shop-a"), make_shop(gateway, "shop-b")


def receive(gateway: Gateway, headers: dict[str, str], amount: int, **fields: Any) -> str:
    """POST /receive with ``headers``; the new request's address."""
    r = gateway.post("/receive", json={"amount": amount, **fields}, headers=headers)
    assert r.status_code == 200, r.text
    address: str = r.json()["address"]
    return address


def get_json(gateway: Gateway, path: str, headers: dict[str, str]) -> dict[str, Any]:
    """GET ``path`` with ``headers``, asserting 200."""
    r = gateway.get(path, headers=headers)
    assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text}"
    body: dict[str, Any] = r.json()
    return body


def wait_json(
    gateway: Gateway,
    path: str,
    headers: dict[str, str],
    predicate: Callable[[dict[str, Any]], bool],
    what: str,
    timeout: float = SYNC_WAIT,
) -> dict[str, Any]:
    """Poll GET ``path`` until ``predicate`` holds for its body; say ``what`` on timeout."""
    return gateway.wait_for(
        f"{what} (GET {path})", lambda: get_json(gateway, path, headers), predicate, timeout
    )


def listed(gateway: Gateway, headers: dict[str, str]) -> set[str]:
    """Addresses of GET /receive (one page of up to 500: the module makes a few dozen)."""
    body = get_json(gateway, "/receive?limit=500", headers)
    assert body["next_cursor"] is None, "more requests than one page"
    return {r["address"] for r in body["requests"]}


def event_addresses(gateway: Gateway, headers: dict[str, str]) -> set[str]:
    """Addresses of every event GET /events answers (one page of up to 500)."""
    body = get_json(gateway, "/events?limit=500", headers)
    return {e["address"] for e in body["events"]}


def subaddress_index(gateway: Gateway, address: str) -> tuple[int, int]:
    """(account, minor index) of ``address`` in the gateway's wallet, asked of wallet-rpc."""
    index = gateway.wallet.call("get_address_index", {"address": address})["index"]
    return int(index["major"]), int(index["minor"])


def has_event(address: str, kind: str) -> Callable[[dict[str, Any]], bool]:
    """Predicate on GET /events: an event ``kind`` of ``address`` is listed."""
    return lambda body: any(e["address"] == address and e["event"] == kind for e in body["events"])


def covered(amount: int, tx_hash: str) -> Callable[[dict[str, Any]], bool]:
    """Predicate on GET /receive/{address}: ``tx_hash`` mined, covering exactly ``amount``."""

    def check(status: dict[str, Any]) -> bool:
        mined = [t for t in status["transactions"] if t["tx_hash"] == tx_hash and t["height"] > 0]
        return bool(mined) and status["amount"]["covered"]["total"] == amount

    check.__qualname__ = f"covered({amount}, {tx_hash[:8]}...)"
    return check


def test_stores_get_own_accounts_and_see_only_their_requests(
    gateway: Gateway, shops: tuple[Shop, Shop]
) -> None:
    """Distinct accounts; another store's address is 404 (the operator needs the header);
    GET /receive and GET /events of a store list its own requests and events only."""
    a, b = shops
    assert 0 not in {a.account, b.account}, "account 0 is the default store's"
    assert a.account != b.account
    accounts = {
        s["id"]: s["wallet"]["account"] for s in get_json(gateway, "/stores", OPERATOR)["stores"]
    }
    assert (accounts["default"], accounts[a.id], accounts[b.id]) == (0, a.account, b.account)

    # Expiring in 1 s: each store gets a request.expired event without any block mined.
    a_addr = receive(gateway, a.auth, 5, description="a's order", expires_in=1)
    b_addr = receive(gateway, b.auth, 7, description="b's order", expires_in=1)
    default_addr = receive(gateway, OPERATOR, 9, description="default's order", expires_in=1)
    assert subaddress_index(gateway, a_addr)[0] == a.account, "not on store a's account"
    assert subaddress_index(gateway, b_addr)[0] == b.account, "not on store b's account"
    assert subaddress_index(gateway, default_addr)[0] == 0

    path = f"/receive/{a_addr}"
    answer = gateway.get(path, headers=a.auth)
    assert answer.status_code == 200
    # X-MoneroPay-Address: a store key learns its account's address, never the main one.
    main_address = gateway.wallet.call("get_address", {"account_index": 0})["address"]
    a_base = gateway.wallet.call("get_address", {"account_index": a.account})["address"]
    assert answer.headers["x-moneropay-address"] == a_base != main_address
    assert gateway.get(path, headers=OPERATOR).headers["x-moneropay-address"] == main_address
    # /health without a key: the default store's, whatever X-Xmrgate-Store names (an
    # unknown store would otherwise answer 404 and tell which ids exist).
    for named in (a.id, "no-such-store"):
        health = gateway.get("/health", headers={"X-Xmrgate-Store": named})
        assert health.status_code == 200, (named, health.text)
    # GET /store: a store key learns which store it acts on (nothing of its wallet).
    own = get_json(gateway, "/store", a.auth)
    assert own == {"id": a.id, "name": f"Shop {a.id}", "enabled": True, "accent": None}
    assert get_json(gateway, "/store", OPERATOR)["id"] == "default"
    # The checkout page of a store's request wears the store's name.
    page = gateway.get(f"/pay/{a_addr}")
    assert page.status_code == 200 and f"Shop {a.id}</h1>" in page.text
    for who, headers in [
        ("store b's key", b.auth),
        ("the operator on the default store", OPERATOR),
        ("the operator on store b", operator_on(b.id)),
    ]:
        r = gateway.get(path, headers=headers)
        assert r.status_code == 404, f"{who}: GET {path} -> {r.status_code} {r.text}"
        assert gateway.get(f"{path}/callbacks", headers=headers).status_code == 404, who
    as_operator = get_json(gateway, path, operator_on(a.id))
    assert as_operator["description"] == "a's order"
    assert gateway.delete(path, headers=b.auth).status_code == 404
    assert gateway.get(path, headers=a.auth).status_code == 200, "b's DELETE removed it"
    # The customer's page finds any store's request.
    assert gateway.get(f"/pay/{a_addr}").status_code == 200

    mine = {a.id: a_addr, b.id: b_addr, "default": default_addr}
    callers = {a.id: a.auth, b.id: b.auth, "default": OPERATOR}
    for store_id, headers in callers.items():
        seen = listed(gateway, headers)
        assert mine[store_id] in seen, f"{store_id} does not list its own request"
        others = {addr for other, addr in mine.items() if other != store_id}
        assert not seen & others, f"GET /receive of {store_id} lists another store's request"
    assert listed(gateway, operator_on(a.id)) == listed(gateway, a.auth)

    for store_id, headers in callers.items():
        wait_json(
            gateway,
            "/events?limit=500",
            headers,
            has_event(mine[store_id], "request.expired"),
            f"the request.expired event of {store_id}'s request",
        )
    for store_id, headers in callers.items():
        others = {addr for other, addr in mine.items() if other != store_id}
        seen = event_addresses(gateway, headers)
        assert not seen & others, f"GET /events of {store_id} shows another store's events"


def test_payment_is_credited_to_its_store_only(
    gateway: Gateway, devnet: Devnet, shops: tuple[Shop, Shop], receiver: Receiver
) -> None:
    """A mined payment to store a's subaddress: covered in a, signed with a's secret, in
    a's events and a's balance only."""
    a, b = shops
    default_before = get_json(gateway, "/balance", OPERATOR)
    address = receive(gateway, a.auth, XMR, description="paid", callback_url=receiver.url)
    tx_hash = devnet.pay(address, XMR, mine_blocks=1)

    status = wait_json(
        gateway, f"/receive/{address}", a.auth, covered(XMR, tx_hash), "store a's payment mined"
    )
    assert status["amount"]["due"] == 0 and status["status"] in {"paid", "complete"}, status
    assert gateway.get(f"/receive/{address}", headers=b.auth).status_code == 404
    assert gateway.get(f"/receive/{address}", headers=OPERATOR).status_code == 404

    [confirmed] = wait_kinds(receiver, address, ["transfer.confirmed"])
    assert confirmed.json["transaction"]["tx_hash"] == tx_hash
    header = confirmed.headers["x-xmrgate-signature"]
    assert signature_ok(a.secret.encode(), header, confirmed.body), "not signed with a's secret"
    assert not signature_ok(DEFAULT_SECRET.encode(), header, confirmed.body), (
        "signed with the default store's secret"
    )
    assert not signature_ok(b.secret.encode(), header, confirmed.body)

    events = get_json(gateway, "/events?limit=500", a.auth)["events"]
    assert any(
        e["address"] == address
        and e["event"] == "transfer.confirmed"
        and e["payload"]["transaction"]["tx_hash"] == tx_hash
        for e in events
    ), events
    assert address not in event_addresses(gateway, b.auth)
    assert address not in event_addresses(gateway, OPERATOR)

    assert get_json(gateway, "/balance", a.auth)["total"] == XMR
    assert get_json(gateway, "/balance", operator_on(a.id))["total"] == XMR
    assert get_json(gateway, "/balance", b.auth) == {"total": 0, "unlocked": 0}
    assert get_json(gateway, "/balance", OPERATOR)["total"] == default_before["total"], (
        "store a's payment shows in the default store's balance"
    )


def test_one_transaction_paying_two_stores_same_minor_index(
    gateway: Gateway, devnet: Devnet
) -> None:
    """One tx paying the first subaddress of two stores (same minor index, two accounts)
    is recorded for each store with its own amount (transfers keyed by tx and request)."""
    c, d = make_shop(gateway, "shop-c"), make_shop(gateway, "shop-d")
    c_addr = receive(gateway, c.auth, 3 * XMR // 10)
    d_addr = receive(gateway, d.auth, 7 * XMR // 10)
    c_index, d_index = subaddress_index(gateway, c_addr), subaddress_index(gateway, d_addr)
    assert (c_index[0], d_index[0]) == (c.account, d.account)
    assert c_index[1] == d_index[1], f"not the same minor index: {c_index} {d_index}"

    tx_hash = devnet.pay_many([(c_addr, 3 * XMR // 10), (d_addr, 7 * XMR // 10)], mine_blocks=1)
    for shop, addr, amount in [(c, c_addr, 3 * XMR // 10), (d, d_addr, 7 * XMR // 10)]:
        status = wait_json(
            gateway,
            f"/receive/{addr}",
            shop.auth,
            covered(amount, tx_hash),
            f"store {shop.id}'s request to show the shared tx mined",
        )
        [tx] = status["transactions"]
        assert tx["amount"] == amount, f"store {shop.id}: {tx}"
        assert status["amount"]["due"] == 0, status
        assert get_json(gateway, "/balance", shop.auth)["total"] == amount


def test_revoked_disabled_and_foreign_store_keys(
    gateway: Gateway, shops: tuple[Shop, Shop]
) -> None:
    """Revoked key 401; disabled store's key 401 (the operator still reads it, writes 409);
    a store key naming another store 403; an unknown store 404."""
    a, b = shops
    k = gateway.post(f"/stores/{a.id}/keys", json={"scopes": ["read"]}, headers=OPERATOR)
    assert k.status_code == 200, k.text
    extra = {"Authorization": f"Bearer {k.json()['key']}"}
    assert k.json()["scopes"] == ["read"]
    assert gateway.get("/receive", headers=extra).status_code == 200
    revoked = gateway.delete(f"/stores/{a.id}/keys/{k.json()['id']}", headers=OPERATOR)
    assert revoked.status_code == 200, revoked.text
    r = gateway.get("/receive", headers=extra)
    assert r.status_code == 401, f"revoked key: {r.status_code} {r.text}"
    assert gateway.get("/receive", headers=a.auth).status_code == 200, "a's other key revoked"

    off = make_shop(gateway, "shop-off")
    address = receive(gateway, off.auth, 11, description="before disabling")
    patched = gateway.client.patch(
        f"{gateway.url}/stores/{off.id}", json={"enabled": False}, headers=OPERATOR
    )
    assert patched.status_code == 200 and patched.json()["enabled"] is False, patched.text
    r = gateway.get(f"/receive/{address}", headers=off.auth)
    assert r.status_code == 401, f"key of a disabled store: {r.status_code} {r.text}"
    assert gateway.post("/receive", json={"amount": 1}, headers=off.auth).status_code == 401
    kept = get_json(gateway, f"/receive/{address}", operator_on(off.id))
    assert kept["description"] == "before disabling"
    r = gateway.post("/receive", json={"amount": 1}, headers=operator_on(off.id))
    assert r.status_code == 409, f"new request in a disabled store: {r.status_code} {r.text}"

    r = gateway.get("/receive", headers={**a.auth, STORE_HEADER: b.id})
    assert r.status_code == 403, f"store key naming another store: {r.status_code} {r.text}"
    assert gateway.get("/receive", headers={**a.auth, STORE_HEADER: a.id}).status_code == 200
    r = gateway.get("/receive", headers=operator_on("no-such-store"))
    assert r.status_code == 404, f"unknown store: {r.status_code} {r.text}"
    r = gateway.post("/receive", json={"amount": 1}, headers=operator_on("no-such-store"))
    assert r.status_code == 404, f"unknown store: {r.status_code} {r.text}"


def test_payout_limited_to_the_stores_own_balance(gateway: Gateway, devnet: Devnet) -> None:
    """A store holding 1 XMR cannot pay out 2 XMR while account 0 holds 3 XMR unlocked
    (the wallet's "not enough money", 400); a payout within its balance leaves from the
    store's account, not account 0's."""
    payer = make_shop(gateway, "shop-pay")
    store_addr = receive(gateway, payer.auth, XMR)
    primary = gateway.wallet.call("get_address", {"account_index": 0})["address"]
    assert subaddress_index(gateway, primary) == (0, 0)
    tx_hash = devnet.pay_many([(primary, 3 * XMR), (store_addr, XMR)], mine_blocks=1)
    wait_json(
        gateway,
        f"/receive/{store_addr}",
        payer.auth,
        covered(XMR, tx_hash),
        "the store's payment mined",
    )
    height = devnet.height() - 1
    mine_until_unlocked(devnet, height)
    assert devnet.height() >= height + UNLOCK_BLOCKS
    wait_json(
        gateway,
        "/balance",
        payer.auth,
        lambda b: b["unlocked"] == XMR,
        "1 XMR unlocked in the store's account",
    )
    default_balance = wait_json(
        gateway,
        "/balance",
        OPERATOR,
        lambda b: b["unlocked"] >= 3 * XMR,
        "3 XMR unlocked in account 0",
    )

    recipient = devnet.funder.call("create_address", {"account_index": 0})["address"]
    too_much = {"destinations": [{"amount": 2 * XMR, "address": recipient}]}
    r = gateway.post("/transfer", json=too_much, headers=payer.auth)
    assert r.status_code == 400, f"payout beyond the store's balance: {r.status_code} {r.text}"
    assert r.json()["code"] == -17 and "money" in r.json()["message"], r.text
    [failed] = get_json(gateway, "/payouts", payer.auth)["payouts"]
    assert failed["state"] == "failed" and failed["amount"] == 2 * XMR, failed
    assert failed["id"] not in {p["id"] for p in get_json(gateway, "/payouts", OPERATOR)["payouts"]}
    assert get_json(gateway, "/balance", OPERATOR) == default_balance

    within = {"destinations": [{"amount": XMR // 10, "address": recipient}]}
    r = gateway.post("/transfer", json=within, headers=payer.auth)
    assert r.status_code == 200, r.text
    spent = get_json(gateway, "/balance", payer.auth)
    assert spent["total"] == XMR - XMR // 10 - r.json()["fee"], spent
    assert get_json(gateway, "/balance", OPERATOR) == default_balance, (
        "the store's payout left from account 0"
    )
