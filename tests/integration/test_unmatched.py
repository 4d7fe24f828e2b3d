"""Unmatched receipts on regtest, both databases: money to a subaddress no
payment request owns is recorded, listed, announced in the feed and kept in step with
the chain, on the real server, the real wallet and the real chain.

Four ways money reaches such a subaddress, all paid by ONE transaction mined in one block:
- a payment link's request pruned by the product's own pruning (its expiry moved into
  the past in the database, then ``prune_unpaid`` as the housekeeping runs it);
- a request the shop deleted (``DELETE /receive/{address}``) while nothing had arrived;
- a subaddress made with another tool on the gateway's account (wallet-rpc's
  ``create_address``), which no request and no pool ever held;
- a pooled subaddress not yet handed out: recorded, and taken out of the pool in the
  same transaction so that no customer is ever given an address that received money.

Then: the receipts unlock after 10 blocks; one is dismissed with a note (again: 409); one
is given back with a claim link (never more than it received), claimed, sent once from
the gateway's wallet and confirmed; a receipt in a block that a reorg removes is gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from selenium.webdriver import Chrome as WebDriver

from tests.integration.callback_support import XMR
from tests.unit.test_admin_unmatched import ROWS_JS
from tests.unit.test_metrics import samples, value
from testsupport.browser import chromium, wait_for
from testsupport.gateway import SYNC_WAIT, Gateway, query_rows
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.links import SqlLinkStore
from xmrgate.config import postgres_async_url
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

PRUNED = 3 * XMR // 10
DELETED = 4 * XMR // 10
FOREIGN = 5 * XMR // 10
POOLED = 6 * XMR // 10
REORGED = 7 * XMR // 10


def prune_link_requests(gateway: Gateway) -> int:
    """The housekeeping's pruning of unpaid link requests, run on the gateway's database."""
    url = (
        postgres_async_url(gateway.database)
        if gateway.backend == "postgresql"
        else f"sqlite+aiosqlite:///{gateway.database}"
    )

    async def run() -> int:
        db = Database(url)
        try:
            return await SqlLinkStore(db, "default").prune_unpaid(datetime.now(UTC), 100)
        finally:
            await db.dispose()

    return asyncio.run(run())


def unmatched(gateway: Gateway, **params: Any) -> list[dict[str, Any]]:
    """GET /unmatched (every page), asserting 200."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, "limit": 2, **({"cursor": cursor} if cursor else {})}
        r = gateway.get("/unmatched", params=query)
        assert r.status_code == 200, r.text
        found.extend(r.json()["unmatched"])
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return found


def all_events(gateway: Gateway) -> list[dict[str, Any]]:
    """Every event of GET /events (every page)."""
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        r = gateway.get("/events", params={"after": after, "limit": 100})
        assert r.status_code == 200, r.text
        found.extend(r.json()["events"])
        if r.json()["next_after"] is None:
            return found
        after = r.json()["next_after"]


def unmatched_events(gateway: Gateway) -> list[dict[str, Any]]:
    """The ``transfer.unmatched`` events of GET /events."""
    return [e for e in all_events(gateway) if e["event"] == "transfer.unmatched"]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """One Chromium for the module (the dashboard is looked at on SQLite only)."""
    with chromium(tmp_path_factory, (1280, 800)) as driver:
        yield driver


def dashboard_rows(driver: WebDriver, gateway: Gateway) -> dict[int, dict[str, Any]]:
    """The dashboard's Unmatched page as Chromium shows it, by receipt id."""
    driver.get("about:blank")
    driver.get(f"{gateway.url}/admin#/unmatched")
    wait_for(
        driver,
        "the unmatched receipts",
        lambda: driver.execute_script(ROWS_JS),
        timeout=SYNC_WAIT,
    )
    return {r["id"]: r for r in driver.execute_script(ROWS_JS)}


def wait_receipts(
    gateway: Gateway, what: str, predicate: Callable[[dict[str, dict[str, Any]]], bool]
) -> dict[str, dict[str, Any]]:
    """Receipts by address, once ``predicate`` holds for them."""
    return gateway.wait_for(
        what,
        lambda: {r["address"]: r for r in unmatched(gateway)},
        predicate,
        timeout=SYNC_WAIT,
    )


def test_money_no_request_owns_is_recorded_listed_announced_and_follows_the_chain(
    gateway: Gateway, devnet: Devnet, request: pytest.FixtureRequest
) -> None:
    """Pruned, deleted, foreign and pooled subaddresses paid in one transaction: four
    receipts, each with its amount, index, tx and confirmations; the pooled index left
    the pool; one ``transfer.unmatched`` event each in the feed; unlocked after 10
    blocks; dismissed with a note once."""
    # A link request, pruned after its expiry.
    link = gateway.post("/links", json={"title": "Tea", "amount": PRUNED, "expires_in": 60})
    assert link.status_code == 200, link.text
    paid = gateway.client.post(
        f"{gateway.url}/l/{link.json()['slug']}",
        headers={"Origin": gateway.url, "Sec-Fetch-Site": "same-origin"},
    )
    assert paid.status_code == 303, paid.text
    pruned = paid.headers["location"].removeprefix("/pay/")
    # The pruning keeps the request of the highest index: make one above it.
    gateway.receive(XMR)
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat(sep=" ")
    query_rows(
        gateway, f"UPDATE payment_requests SET expires_at = '{past}' WHERE address = '{pruned}'"
    )
    assert prune_link_requests(gateway) == 1
    assert gateway.get(f"/receive/{pruned}").status_code == 404

    # A request deleted while nothing had arrived.
    deleted = gateway.receive(DELETED)["address"]
    assert gateway.delete(f"/receive/{deleted}").status_code == 200
    # A subaddress made with another tool; a pooled one nobody was given yet.
    made = gateway.wallet.call("create_address", {"account_index": 0, "label": "by hand"})
    foreign, foreign_index = made["address"], made["address_index"]
    [(pooled, pooled_index)] = query_rows(
        gateway,
        "SELECT address, subaddr_index FROM address_pool WHERE store_id = 'default'"
        " ORDER BY subaddr_index DESC LIMIT 1",
    )

    expected = {pruned: PRUNED, deleted: DELETED, foreign: FOREIGN, pooled: POOLED}
    tx_hash = devnet.pay_many(list(expected.items()), mine_blocks=1)
    receipts = wait_receipts(
        gateway,
        "four confirmed receipts",
        lambda got: (
            set(expected) <= set(got) and all(got[a]["state"] == "confirmed" for a in expected)
        ),
    )
    assert len(unmatched(gateway)) == len(receipts) == 4, receipts
    for address, amount in expected.items():
        receipt = receipts[address]
        assert (receipt["amount"], receipt["tx_hash"]) == (amount, tx_hash), receipt
        assert receipt["confirmations"] >= 1 and receipt["locked"] is True, receipt
        assert (receipt["status"], receipt["note"]) == ("open", None), receipt
        assert receipt["height"] > 0
        assert gateway.get(f"/unmatched/{receipt['id']}").json() == receipt
    assert receipts[foreign]["subaddr_index"] == foreign_index
    assert receipts[pooled]["subaddr_index"] == pooled_index
    # The pooled address left the pool with the receipt: no customer is ever given it.
    assert query_rows(gateway, f"SELECT 1 FROM address_pool WHERE address = '{pooled}'") == []
    assert all(gateway.receive(XMR)["address"] != pooled for _ in range(5))
    # Nothing was credited to a request.
    assert gateway.get(f"/receive/{deleted}").status_code == 404
    if gateway.backend == "sqlite":
        # Each reaches the merchant's dashboard, with its amount and full address.
        shown = dashboard_rows(request.getfixturevalue("browser"), gateway)
        for address in expected:
            row = shown[receipts[address]["id"]]
            assert (row["full"], row["state"], row["status"]) == (address, "confirmed", "open")

    announced = unmatched_events(gateway)
    assert sorted(e["address"] for e in announced) == sorted(expected), announced
    for event in announced:
        body = event["payload"]
        assert body["event"] == "transfer.unmatched"
        assert body["unmatched"]["id"] == receipts[event["address"]]["id"]
        assert body["unmatched"]["state"] == "confirmed"

    # The metric: four open receipts and their piconero.
    exposed = samples(gateway.get("/metrics").text)
    assert value(exposed, "xmrgate_unmatched_receipts", store="default") == 4
    assert value(exposed, "xmrgate_unmatched_piconero", store="default") == sum(expected.values())

    # Unlocked once spendable, like any transfer (and announced only once).
    devnet.mine(10)
    wait_receipts(
        gateway,
        "the receipts unlocked",
        lambda got: all(got[a]["state"] == "unlocked" and not got[a]["locked"] for a in expected),
    )
    assert len(unmatched_events(gateway)) == 4

    # Dismissed with a note: kept, listed by status; a second dismissal is refused.
    receipt_id = receipts[foreign]["id"]
    r = gateway.post(f"/unmatched/{receipt_id}/dismiss", json={"note": "sent back by hand"})
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["note"]) == ("dismissed", "sent back by hand")
    assert r.json()["dismissed_at"] is not None
    again = gateway.post(f"/unmatched/{receipt_id}/dismiss", json={"note": "again"})
    assert again.status_code == 409 and again.json()["message"], again.text
    blank = gateway.post(f"/unmatched/{receipts[pooled]['id']}/dismiss", json={"note": "  "})
    assert blank.status_code == 400, blank.text
    assert [x["id"] for x in unmatched(gateway, status="dismissed")] == [receipt_id]
    assert len(unmatched(gateway, status="open")) == 3
    assert gateway.get("/unmatched/999999").status_code == 404

    # Given back with a claim link, like any refund: never more than the receipt.
    give_back = receipts[pooled]["id"]
    path = f"/unmatched/{give_back}/refunds"
    too_much = gateway.post(path, json={"amount": POOLED + 1})
    assert too_much.status_code == 409 and "more than is left" in too_much.json()["message"]
    made = gateway.post(path, json={"reason": "paid the wrong address"})
    assert made.status_code == 200, made.text
    refund = made.json()
    assert (refund["amount"], refund["address"], refund["unmatched_id"]) == (
        POOLED,
        pooled,
        give_back,
    )
    assert gateway.post(path, json={}).status_code == 409, "nothing left to give back"
    assert gateway.get(f"/unmatched/{give_back}").json()["refunded"] == POOLED
    assert [r["id"] for r in gateway.get(path).json()["refunds"]] == [refund["id"]]
    to = devnet.funder.call("create_address", {"account_index": 0})["address"]
    claimed = gateway.client.post(
        refund["claim_url"], data={"address": to}, headers={"Origin": gateway.url}
    )
    assert claimed.status_code == 200, claimed.text[:500]
    sent = gateway.post(f"/refunds/{refund['id']}/send")
    assert sent.status_code == 200, sent.text
    assert sent.json()["status"] == "sent" and len(sent.json()["tx_hash_list"]) == 1
    assert gateway.post(f"/refunds/{refund['id']}/send").status_code == 409, "sent once"
    payouts = gateway.get("/payouts").json()["payouts"]
    assert [p["tx_hash_list"] for p in payouts if to in str(p["destinations"])] == [
        sent.json()["tx_hash_list"]
    ]
    devnet.mine(1)
    gateway.wait_for(
        "the refund confirmed",
        lambda: gateway.get(f"/refunds/{refund['id']}").json()["status"],
        lambda status: status == "confirmed",
        timeout=SYNC_WAIT,
    )
    kinds = [
        (e["event"], e["address"]) for e in all_events(gateway) if e["event"].startswith("refund.")
    ]
    assert kinds == [
        ("refund.claimed", pooled),
        ("refund.sent", pooled),
        ("refund.confirmed", pooled),
    ], kinds


def test_a_receipt_whose_block_a_reorg_removes_is_gone(gateway: Gateway, devnet: Devnet) -> None:
    """Confirmed alone in a block, then pop_blocks + flush_txpool + mining: the receipt
    is gone (it stays listed, no longer counted), and the loss is announced."""
    made = gateway.wallet.call("create_address", {"account_index": 0})
    address = made["address"]
    devnet.mine(1)  # whatever else waits in the pool goes into a block we keep
    tx_hash = devnet.pay(address, REORGED)
    devnet.mine(1)
    wait_receipts(
        gateway,
        "the receipt confirmed",
        lambda got: got.get(address, {}).get("state") == "confirmed",
    )
    devnet.pop_blocks(1)
    devnet.flush_txpool()
    devnet.mine(2)
    gone = wait_receipts(
        gateway, "the receipt gone", lambda got: got.get(address, {}).get("state") == "gone"
    )[address]
    assert (gone["tx_hash"], gone["confirmations"]) == (tx_hash, 0)
    states = [
        e["payload"]["unmatched"]["state"]
        for e in unmatched_events(gateway)
        if e["address"] == address
    ]
    assert states == ["confirmed", "gone"], states
