"""Refunds on regtest, both databases: claimed with the link (in Chromium on
one backend, a plain form POST on the other), sent from the gateway's full wallet and
received by the customer's wallet; paid by hand and verified with ``check_tx_key``;
double claim, over-refund, double send, late cancel and racing refunds refused.

One gateway per database (the ``gateway`` fixture of conftest.py), one customer wallet
for the module, and one funding transaction per gateway: it pays every request the
tests refund, and ten blocks unlock it so that the gateway's wallet can send refunds.
The view-only wallet's refusal to send is in ``test_view_only.py`` (its gateway).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By

from tests.integration.callback_support import UNLOCK_BLOCKS, XMR, signature_ok
from tests.integration.receiver import Received, Receiver, start_receiver
from testsupport.browser import start_chromium
from testsupport.gateway import FAST_POLL, SYNC_WAIT, Gateway, count_rows
from testsupport.monero_addresses import fake_address
from testsupport.processes import wait_until
from xmrgate.devnet import Devnet, DevnetError, WalletRpc
from xmrgate.domain.money import piconero_to_xmr

pytestmark = pytest.mark.integration

SECRET = "refund-callback-secret-0123"
SHOP = "Corner Coffee"
REASON = "One croissant was missing <sorry>"
# The gateway fixture of conftest.py reads these (the receiver is on loopback).
GATEWAY_ARGS = [
    # The refund watcher runs every poll (at most every 10 s): the tests wait for it
    # (the tests' gateways poll every 2 s otherwise).
    *FAST_POLL,
    "--callback-allow",
    "127.0.0.1",
    "--callback-secret",
    SECRET,
    "--callback-retry-base",
    "0.5s",
]
# What each test's request receives (the race's is four quarters of 0.1 XMR).
RECEIVED = {
    "full": XMR,
    "refusals": XMR,
    "page": XMR // 2,
    "race": 4 * XMR // 10,
    "manual": XMR,
}
REFUND_EVENTS = ["refund.claimed", "refund.sent", "refund.confirmed"]


# ------------------------------------------------------------------ fixtures and helpers


@dataclass(frozen=True)
class Customer:
    """The customer's own wallet on the devnet (its wallet-rpc, a wallet open)."""

    rpc: WalletRpc

    def new_address(self) -> str:
        """A fresh subaddress: each claim its own, so a payout names one test's refund."""
        made = self.rpc.call("create_address", {"account_index": 0, "label": "refund"})
        return str(made["address"])

    def incoming(self, tx_hash: str, timeout: float = SYNC_WAIT) -> dict[str, Any]:
        """The wallet's incoming transfer of ``tx_hash`` once it is mined (refreshing)."""

        def probe() -> tuple[bool, Any]:
            self.rpc.call("refresh", timeout=60)
            found = self.rpc.call("get_transfers", {"in": True, "account_index": 0})
            mine = [t for t in found.get("in", []) if t["txid"] == tx_hash]
            return bool(mine), mine or found.get("in", [])[-3:]

        transfers: list[dict[str, Any]] = wait_until(
            f"the customer's wallet to show {tx_hash} mined", probe, timeout=timeout
        )
        assert len(transfers) == 1, transfers
        return transfers[0]


@pytest.fixture(scope="module")
def customer(devnet: Devnet) -> Iterator[Customer]:
    """A new wallet, the refunds' destination; its wallet-rpc is stopped at the end."""
    rpc = devnet.start_wallet_rpc(f"customer-{uuid.uuid4().hex[:6]}")
    try:
        rpc.call("create_wallet", {"filename": "customer", "language": "English"})
        yield Customer(rpc)
    finally:
        rpc.stop()


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    """The shop's callback receiver for the whole module (requests keep their URL)."""
    r = start_receiver()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """Headless Chromium (Debian's), started only by the test that claims in it."""
    profile = tmp_path_factory.mktemp("refund-chromium")
    driver = start_chromium(profile, width=390, height=844)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def paid(gateway: Gateway, devnet: Devnet, hooks: Receiver) -> dict[str, str]:
    """The shop named; a request per test, all paid in ONE transaction, unlocked.

    Ten blocks: the gateway's wallet can spend what the requests received (refunds are
    sent from it). Returns the requests' addresses by test.
    """
    named = gateway.client.patch(gateway.url + "/stores/default", json={"name": SHOP})
    assert named.status_code == 200, named.text
    addresses = {}
    for name, amount in RECEIVED.items():
        created = gateway.receive(amount, description=f"order {name}", callback_url=hooks.url)
        addresses[name] = str(created["address"])
    devnet.pay_many(
        [(addresses[name], amount) for name, amount in RECEIVED.items()],
        mine_blocks=UNLOCK_BLOCKS,
    )
    for name, address in addresses.items():
        gateway.wait_status(address, received_mined(RECEIVED[name]))
    gateway.wait_for(
        "the gateway's wallet to have the payments unlocked",
        lambda: gateway.get("/balance").json(),
        lambda b: b["unlocked"] >= sum(RECEIVED.values()),
        SYNC_WAIT,
    )
    return addresses


def received_mined(amount: int) -> Callable[[dict[str, Any]], bool]:
    """Predicate for ``wait_status``: ``amount`` received in mined transfers (refunds
    count only those)."""

    def check(status: dict[str, Any]) -> bool:
        return sum(t["amount"] for t in status["transactions"] if t["height"] > 0) == amount

    check.__qualname__ = f"mined total == {amount}"
    return check


def make_refund(gateway: Gateway, address: str, **fields: Any) -> dict[str, Any]:
    """POST /receive/{address}/refunds, asserting 200."""
    r = gateway.post(f"/receive/{address}/refunds", json=fields)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def refund_of(gateway: Gateway, refund_id: str) -> dict[str, Any]:
    """GET /refunds/{id}, asserting 200."""
    r = gateway.get(f"/refunds/{refund_id}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def wait_refund(gateway: Gateway, refund_id: str, status: str) -> dict[str, Any]:
    """Poll GET /refunds/{id} until its status is ``status``."""
    return gateway.wait_for(
        f"refund {refund_id} to be {status}",
        lambda: refund_of(gateway, refund_id),
        lambda r: r["status"] == status,
        SYNC_WAIT,
    )


def claim_by_form(gateway: Gateway, claim_url: str, address: str) -> httpx.Response:
    """The claim as a browser without the page's help posts it (same origin).

    The page takes 10 claims a minute per client address: this module makes 7 per
    gateway (a 429 here means a test claims more than it should).
    """
    return gateway.client.post(
        claim_url, data={"address": address}, headers={"Origin": gateway.url}
    )


def send(gateway: Gateway, refund_id: str) -> httpx.Response:
    """POST /refunds/{id}/send."""
    return gateway.post(f"/refunds/{refund_id}/send")


def refund_callbacks(receiver: Receiver, address: str) -> list[Received]:
    """The delivered refund callbacks of one request, in arrival order."""
    return [
        r
        for r in receiver.delivered()
        if r.json["address"] == address and str(r.json["event"]).startswith("refund.")
    ]


def feed(gateway: Gateway) -> list[dict[str, Any]]:
    """Every event of GET /events, page by page."""
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        body = gateway.get("/events", params={"after": after, "limit": 100}).json()
        found += body["events"]
        if body["next_after"] is None:
            return found
        after = body["next_after"]


def pay_with_key(devnet: Devnet, address: str, amount: int) -> tuple[str, str]:
    """Pay ``address`` from the funder by hand, as a merchant would; (tx hash, tx key)."""
    devnet.ensure_decoy_safe()
    params = {
        "destinations": [{"address": address, "amount": amount}],
        "account_index": 0,
        "priority": 0,
        "get_tx_key": True,
    }
    for attempt in range(3):
        devnet.funder.call("refresh", timeout=120)
        try:
            sent = devnet.funder.call("transfer", params, timeout=120)
            break
        except DevnetError as exc:
            if attempt == 2 or "not enough" not in exc.message.lower():
                raise
            devnet.mine(UNLOCK_BLOCKS)  # the funder's change unlocks, and new coinbases
    devnet.wait_pool_relayed()
    return str(sent["tx_hash"]), str(sent["tx_key"])


def claim_in_chromium(driver: WebDriver, refund: dict[str, Any], address: str) -> None:
    """Open the link, read the shop, amount and reason, type the address, submit."""
    driver.get(refund["claim_url"])
    assert driver.find_element(By.TAG_NAME, "h1").text.endswith(SHOP)
    assert driver.find_element(By.ID, "amount").text == piconero_to_xmr(refund["amount"])
    assert driver.find_element(By.ID, "reason").text == REASON
    field = driver.find_element(By.ID, "address")
    field.send_keys(address)
    driver.find_element(By.ID, "claim").click()
    wait_until(
        "the claimed page in Chromium",
        lambda: (
            driver.find_elements(By.CSS_SELECTOR, "main[data-outcome=claimed]") != [],
            driver.page_source[-800:],
        ),
        timeout=20,
    )
    assert driver.find_element(By.TAG_NAME, "h2").text == "Refund claimed"
    assert driver.find_element(By.ID, "claim-address").text == address
    assert driver.find_elements(By.TAG_NAME, "form") == []


# ------------------------------------------------------------------ full wallet


@pytest.mark.browser
def test_a_refund_is_claimed_sent_received_and_confirmed(
    gateway: Gateway,
    devnet: Devnet,
    paid: dict[str, str],
    customer: Customer,
    hooks: Receiver,
    request: pytest.FixtureRequest,
) -> None:
    """Part of a paid request given back: the customer claims it (Chromium on SQLite, a
    plain form POST on PostgreSQL), the merchant sends it, the customer's wallet receives
    exactly that amount in that transaction, it becomes confirmed after a block; three
    signed callbacks, the same three in the feed, and the request shows ``refunded``."""
    address = paid["full"]
    amount = 3 * XMR // 10
    made = make_refund(gateway, address, amount=amount, reason=REASON)
    assert (made["status"], made["amount"], made["reason"]) == ("open", amount, REASON)
    assert made["address"] == address and made["claim_address"] is None
    assert made["claim_url"].startswith(gateway.url + "/refund/")
    assert gateway.status(address)["refunded"] == amount, "reserved at once"
    to = customer.new_address()

    if gateway.backend == "sqlite":
        claim_in_chromium(request.getfixturevalue("browser"), made, to)
    else:
        page = gateway.client.get(made["claim_url"])
        assert page.status_code == 200 and SHOP in page.text and "<form" in page.text
        assert piconero_to_xmr(amount) in page.text and "croissant was missing" in page.text
        claimed_page = claim_by_form(gateway, made["claim_url"], to)
        assert claimed_page.status_code == 200, claimed_page.text
        assert "Refund claimed" in claimed_page.text and to in claimed_page.text
    claimed = refund_of(gateway, made["id"])
    assert (claimed["status"], claimed["claim_address"]) == ("claimed", to)
    assert "claim_url" not in claimed, "the link is shown once"

    answer = send(gateway, made["id"])
    assert answer.status_code == 200, answer.text
    sent = answer.json()
    assert sent["status"] == "sent" and sent["manual"] is False and sent["fee"] > 0
    [tx_hash] = sent["tx_hash_list"]
    devnet.mine(1)
    incoming = customer.incoming(tx_hash)
    assert (incoming["amount"], incoming["address"]) == (amount, to)
    confirmed = wait_refund(gateway, made["id"], "confirmed")
    assert confirmed["tx_hash_list"] == [tx_hash] and confirmed["confirmed_at"]

    hooks.wait_for(
        lambda _: len(refund_callbacks(hooks, address)) >= len(REFUND_EVENTS),
        what=f"the refund callbacks {REFUND_EVENTS}",
    )
    got = refund_callbacks(hooks, address)
    assert [r.json["event"] for r in got] == REFUND_EVENTS, "each once, in order"
    for r, state in zip(got, ["claimed", "sent", "confirmed"], strict=True):
        assert r.headers["x-xmrgate-event"] == r.json["event"]
        assert signature_ok(SECRET.encode(), r.headers["x-xmrgate-signature"], r.body)
        assert r.json["refund"]["id"] == made["id"]
        assert r.json["refund"]["status"] == state
        assert r.json["refund"]["claim_address"] == to
    assert got[1].json["refund"]["tx_hash_list"] == [tx_hash]

    events = [e for e in feed(gateway) if e["address"] == address]
    mine = [e for e in events if e["event"].startswith("refund.")]
    assert [e["event"] for e in mine] == REFUND_EVENTS
    for event, r in zip(mine, got, strict=True):
        assert event["payload"] == r.json
        assert r.headers["x-xmrgate-event-seq"] == str(event["seq"])

    status = gateway.status(address)
    assert status["refunded"] == amount
    listed = gateway.get(f"/receive/{address}/refunds").json()["refunds"]
    assert [(r["id"], r["status"]) for r in listed] == [(made["id"], "confirmed")]
    by_status = gateway.get("/refunds", params={"status": "confirmed"}).json()["refunds"]
    assert made["id"] in [r["id"] for r in by_status]


# ------------------------------------------------------------------ refusals


def test_double_claim_over_refund_double_send_and_late_cancel_are_refused(
    gateway: Gateway, paid: dict[str, str], customer: Customer
) -> None:
    """A link claims once (409 page, no form); more than received is 409 and makes
    nothing; a second send is 409 and the wallet sent once; a sent refund is not
    cancelled."""
    address = paid["refusals"]
    before = count_rows(gateway, "refunds")
    too_much = gateway.post(f"/receive/{address}/refunds", json={"amount": XMR + 1})
    assert too_much.status_code == 409, too_much.text
    assert too_much.json()["status"] == 409
    assert count_rows(gateway, "refunds") == before
    assert "refunded" not in gateway.status(address), "nothing reserved"

    made = make_refund(gateway, address, amount=2 * XMR // 10)
    to = customer.new_address()
    first = claim_by_form(gateway, made["claim_url"], to)
    assert first.status_code == 200, first.text
    again = claim_by_form(gateway, made["claim_url"], customer.new_address())
    assert again.status_code == 409, again.text
    assert "<form" not in again.text and "claimed already" in again.text
    assert to not in again.text, "the claimed address is never shown again"
    reopened = gateway.client.get(made["claim_url"])
    assert reopened.status_code == 409 and "<form" not in reopened.text
    assert refund_of(gateway, made["id"])["claim_address"] == to

    # What is left is 0.8 XMR: 0.8 XMR + 1 piconero is too much, and makes nothing.
    before = count_rows(gateway, "refunds")
    rest = gateway.post(f"/receive/{address}/refunds", json={"amount": 8 * XMR // 10 + 1})
    assert rest.status_code == 409, rest.text
    assert count_rows(gateway, "refunds") == before

    sent = send(gateway, made["id"])
    assert sent.status_code == 200, sent.text
    tx_hashes = sent.json()["tx_hash_list"]
    second = send(gateway, made["id"])
    assert second.status_code == 409, second.text
    assert refund_of(gateway, made["id"])["tx_hash_list"] == tx_hashes
    payouts = gateway.get("/payouts").json()["payouts"]
    to_customer = [p for p in payouts if to in [d["address"] for d in p["destinations"]]]
    assert len(to_customer) == 1, payouts
    assert to_customer[0]["state"] == "sent" and to_customer[0]["tx_hash_list"] == tx_hashes

    late = gateway.delete(f"/refunds/{made['id']}")
    assert late.status_code == 409, late.text
    assert refund_of(gateway, made["id"])["status"] in ("sent", "confirmed")
    assert gateway.status(address)["refunded"] == 2 * XMR // 10


def test_claim_page_refuses_unknown_links_other_networks_and_withdrawn_refunds(
    gateway: Gateway, paid: dict[str, str]
) -> None:
    """An unknown token is a 404 page; a testnet or stagenet address is the form again
    (400) saying so, the refund still open; a cancelled refund's link is a 410 page and
    its money is free again."""
    base = gateway.url + "/refund/"
    for token in ("A" * 32, "not-a-token"):
        page = gateway.client.get(base + token)
        assert page.status_code == 404, page.text
        assert "<form" not in page.text and "not valid" in page.text
    posted = claim_by_form(gateway, base + "B" * 32, fake_address("mainnet"))
    assert posted.status_code == 404 and "<form" not in posted.text

    address = paid["page"]
    made = make_refund(gateway, address)  # everything: 0.5 XMR
    assert made["amount"] == RECEIVED["page"]
    for network in ("testnet", "stagenet"):
        refused = claim_by_form(gateway, made["claim_url"], fake_address(network))
        assert refused.status_code == 400, refused.text
        assert "<form" in refused.text and 'aria-invalid="true"' in refused.text
        assert f"this is a {network} address" in refused.text.lower()
    assert refund_of(gateway, made["id"])["status"] == "open"

    cancelled = gateway.delete(f"/refunds/{made['id']}")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert "refunded" not in gateway.status(address), "the money is free again"
    gone = gateway.client.get(made["claim_url"])
    assert gone.status_code == 410 and "<form" not in gone.text and "withdrawn" in gone.text
    again = gateway.delete(f"/refunds/{made['id']}")
    assert again.status_code == 409, again.text


def test_racing_refunds_never_give_back_more_than_received(
    gateway: Gateway, paid: dict[str, str]
) -> None:
    """Ten concurrent refunds of a quarter each: exactly four fit (200), six are 409, and
    the request's refunded is what it received."""
    address = paid["race"]
    quarter = RECEIVED["race"] // 4

    async def race() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=gateway.url, timeout=30, trust_env=False) as client:
            path = f"/receive/{address}/refunds"
            return await asyncio.gather(
                *(client.post(path, json={"amount": quarter}) for _ in range(10))
            )

    answers = asyncio.run(race())
    codes = sorted(a.status_code for a in answers)
    assert codes == [200] * 4 + [409] * 6, [a.text for a in answers]
    assert gateway.status(address)["refunded"] == RECEIVED["race"]
    listed = gateway.get(f"/receive/{address}/refunds").json()["refunds"]
    assert sorted(r["id"] for r in listed) == sorted(
        a.json()["id"] for a in answers if a.status_code == 200
    )
    assert all(r["amount"] == quarter and r["status"] == "open" for r in listed)


# ------------------------------------------------------------------ paid by hand


def test_a_refund_paid_by_hand_is_checked_with_check_tx_key(
    gateway: Gateway, devnet: Devnet, paid: dict[str, str], customer: Customer
) -> None:
    """The merchant pays the claimed address from another wallet and records it: a key
    that is not the transaction's is 400, a transaction paying less is 400 saying what it
    paid, the right one makes the refund sent (manual), confirmed after a block."""
    amount = 25 * XMR // 100
    made = make_refund(gateway, paid["manual"], amount=amount, reason="paid by hand")
    to = customer.new_address()
    assert claim_by_form(gateway, made["claim_url"], to).status_code == 200
    short = amount - 10**9
    short_tx, short_key = pay_with_key(devnet, to, short)
    tx_hash, tx_key = pay_with_key(devnet, to, amount)
    path = f"/refunds/{made['id']}/paid"

    for wrong_key in (short_key, "01" + "00" * 31):
        wrong = gateway.post(path, json={"tx_hash": tx_hash, "tx_key": wrong_key})
        assert wrong.status_code == 400, wrong.text
    less = gateway.post(path, json={"tx_hash": short_tx, "tx_key": short_key})
    assert less.status_code == 400, less.text
    assert str(short) in less.json()["message"], less.text
    assert refund_of(gateway, made["id"])["status"] == "claimed"

    right = gateway.post(path, json={"tx_hash": tx_hash, "tx_key": tx_key})
    assert right.status_code == 200, right.text
    sent = right.json()
    assert (sent["status"], sent["manual"], sent["tx_hash_list"]) == ("sent", True, [tx_hash])
    again = gateway.post(path, json={"tx_hash": tx_hash, "tx_key": tx_key})
    assert again.status_code == 409, again.text
    devnet.mine(1)
    confirmed = wait_refund(gateway, made["id"], "confirmed")
    assert confirmed["manual"] is True and confirmed["tx_hash_list"] == [tx_hash]
