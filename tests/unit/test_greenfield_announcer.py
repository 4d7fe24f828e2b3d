"""The Greenfield announcer (``core/greenfield_announcer.py``) over the in-memory site:
each change of an invoice makes its events once, in BTCPay's order, one delivery per
event and webhook that wants it, the body signed later over these exact bytes; a second
process that read the same change writes nothing; a final state stops the watching.

The regtest test of the same (``tests/integration/test_greenfield_webhooks.py``) holds
the whole path: sync tick, outbox, signature, the receiver down then up."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.greenfield_site import SHOP_B, GreenfieldSite, auth
from xmrgate.core.greenfield_announcer import (
    GreenfieldAnnouncer,
    InvoiceReader,
    StoresInvoiceReader,
    Watched,
    WebhookTarget,
    may_have_changed,
)
from xmrgate.core.greenfield_invoices import InvoiceView
from xmrgate.domain.greenfield.events import EventFilter, EventType
from xmrgate.domain.ledger import Transfer, TransferState

XMR = 10**12


class MemoryAnnouncements:
    """The announced states and the written deliveries, in memory; each watched
    invoice's facts read from the site as the SQL reads them from its tables."""

    def __init__(self, site: GreenfieldSite, webhooks: list[WebhookTarget]) -> None:
        self.site = site
        self.announced: dict[str, tuple[str, str | None, bool]] = {}
        self.rows: list[dict[str, Any]] = []
        self.hooks = webhooks
        self.lose_race = False

    def watch(self, invoice_id: str, store_id: str) -> None:
        self.announced[invoice_id] = (store_id, None, True)

    def _watched(self, invoice_id: str, store_id: str, announced: str | None) -> Watched:
        invoice = self.site.invoice_rows[invoice_id]
        payments = self.site.payments[store_id]
        request = next(r for r in payments.requests.values() if r.id == invoice.request_id)
        return Watched(
            invoice_id,
            store_id,
            announced,
            marked=invoice.marked is not None,
            has_payments=bool(payments.transfers.get(request.address)),
            expires_at=request.expires_at,
            monitoring_minutes=invoice.monitoring_minutes,
        )

    async def watched(self) -> list[Watched]:
        return [self._watched(i, s, a) for i, (s, a, w) in self.announced.items() if w]

    async def webhooks(self, store_id: str) -> list[WebhookTarget]:
        return list(self.hooks)

    async def announce(
        self,
        invoice_id: str,
        before: str | None,
        after: str,
        watching: bool,
        deliveries: Sequence[dict[str, Any]],
    ) -> bool:
        store, current, _ = self.announced[invoice_id]
        if self.lose_race or current != before:
            return False
        self.announced[invoice_id] = (store, after, watching)
        self.rows.extend(deliveries)
        return True


@pytest.fixture
def site() -> GreenfieldSite:
    made = GreenfieldSite()
    made.synced()
    return made


def _setup(site: GreenfieldSite, hooks: list[WebhookTarget]) -> tuple[Any, Any, str]:
    client = TestClient(site.app)
    made = client.post(
        "/api/v1/stores/shop-b/invoices",
        json={"amount": "1", "currency": "XMR", "metadata": {"orderId": "7"}},
        headers=auth(SHOP_B),
    ).json()
    repo = MemoryAnnouncements(site, hooks)
    repo.watch(made["id"], "shop-b")
    woken: list[int] = []
    announcer = GreenfieldAnnouncer(
        repo, StoresInvoiceReader(site.stores), delivered=lambda: woken.append(1)
    )
    return repo, announcer, made["id"]


def _pay(site: GreenfieldSite, amount: int, height: int, state: TransferState) -> None:
    payments = site.payments["shop-b"]
    request = next(iter(payments.requests.values()))
    payments.transfers[request.address] = [
        Transfer(
            "cd" * 32,
            request.subaddr_index,
            amount,
            10**8,
            height,
            int(time.time()),
            0,
            False,
            state,
        )
    ]


def _types(rows: list[dict[str, Any]]) -> list[str]:
    return [json.loads(r["payload"])["type"] for r in rows]


EVERYTHING = WebhookTarget("hook-all", "https://shop.example/hook", EventFilter())


def test_each_change_is_announced_once_in_order(site: GreenfieldSite) -> None:
    repo, announcer, invoice_id = _setup(site, [EVERYTHING])
    assert asyncio.run(announcer.announce_all()) == 1
    assert _types(repo.rows) == ["InvoiceCreated"]
    assert asyncio.run(announcer.announce_all()) == 0  # nothing new: nothing sent
    _pay(site, XMR, 0, TransferState.POOL)  # seen: paid, not settled (MediumSpeed: 1)
    asyncio.run(announcer.announce_all())
    assert _types(repo.rows)[1:] == ["InvoiceReceivedPayment", "InvoiceProcessing"]
    _pay(site, XMR, 99, TransferState.CONFIRMED)  # one confirmation at height 100
    asyncio.run(announcer.announce_all())
    assert _types(repo.rows)[3:] == ["InvoicePaymentSettled", "InvoiceSettled"]
    # Settled is final: no longer watched, nothing more to say.
    assert repo.announced[invoice_id][2] is False
    assert asyncio.run(repo.watched()) == []
    body = json.loads(repo.rows[-1]["payload"])
    assert body["invoiceId"] == invoice_id and body["storeId"] == "shop-b"
    assert body["metadata"] == {"orderId": "7"} and body["overPaid"] is False
    assert body["deliveryId"] == repo.rows[-1]["id"] == body["originalDeliveryId"]
    assert body["isRedelivery"] is False and isinstance(body["timestamp"], int)
    payment = json.loads(repo.rows[1]["payload"])["payment"]
    assert payment["id"].startswith("cd" * 32 + "#2#") and payment["value"] == "1"
    assert {r["kind"] for r in repo.rows} >= {"gf.InvoiceCreated", "gf.InvoiceSettled"}
    assert all(r["webhook_id"] == "hook-all" and r["callback_url"] for r in repo.rows)


def test_a_payment_already_settled_when_seen_comes_first(site: GreenfieldSite) -> None:
    repo, announcer, _ = _setup(site, [EVERYTHING])
    _pay(site, XMR, 90, TransferState.CONFIRMED)  # first seen 10 blocks deep
    asyncio.run(announcer.announce_all())
    assert _types(repo.rows) == [
        "InvoiceCreated",
        "InvoicePaymentSettled",
        "InvoiceReceivedPayment",
        "InvoiceProcessing",
        "InvoiceSettled",
    ]


def test_each_webhook_gets_only_the_events_it_wants(site: GreenfieldSite) -> None:
    woo = WebhookTarget(
        "hook-woo",
        "https://shop.example/wc",
        EventFilter(False, (EventType.SETTLED, EventType.RECEIVED_PAYMENT)),
    )
    repo, announcer, _ = _setup(site, [EVERYTHING, woo])
    _pay(site, XMR, 90, TransferState.CONFIRMED)
    asyncio.run(announcer.announce_all())
    mine = [r for r in repo.rows if r["webhook_id"] == "hook-woo"]
    assert _types(mine) == ["InvoiceReceivedPayment", "InvoiceSettled"]
    assert len({r["id"] for r in repo.rows}) == len(repo.rows)  # one id per delivery


def test_a_second_process_that_read_the_same_change_writes_nothing(
    site: GreenfieldSite,
) -> None:
    repo, announcer, invoice_id = _setup(site, [EVERYTHING])
    repo.lose_race = True
    assert asyncio.run(announcer.announce_all()) == 0
    assert repo.rows == [] and repo.announced[invoice_id][1] is None


def test_a_mark_is_announced_as_manually_marked(site: GreenfieldSite) -> None:
    repo, announcer, invoice_id = _setup(site, [EVERYTHING])
    asyncio.run(announcer.announce_all())
    client = TestClient(site.app)
    client.post(
        f"/api/v1/stores/shop-b/invoices/{invoice_id}/status",
        json={"status": "Invalid"},
        headers=auth(SHOP_B),
    )
    asyncio.run(announcer.announce_all())
    last = json.loads(repo.rows[-1]["payload"])
    assert last["type"] == "InvoiceInvalid" and last["manuallyMarked"] is True


class CountingReader:
    """An ``InvoiceReader`` that counts the invoices read whole."""

    def __init__(self, inner: InvoiceReader) -> None:
        self.inner = inner
        self.reads: list[str] = []

    async def view(self, store_id: str, invoice_id: str) -> tuple[InvoiceView, int] | None:
        self.reads.append(invoice_id)
        return await self.inner.view(store_id, invoice_id)


def test_an_open_invoice_nobody_paid_is_not_read_again_until_money_arrives(
    site: GreenfieldSite,
) -> None:
    repo, _, invoice_id = _setup(site, [EVERYTHING])
    reader = CountingReader(StoresInvoiceReader(site.stores))
    announcer = GreenfieldAnnouncer(repo, reader)
    asyncio.run(announcer.announce_all())  # InvoiceCreated
    for _ in range(3):
        asyncio.run(announcer.announce_all())
    assert reader.reads == [invoice_id]  # read once, to announce it; then left alone
    _pay(site, XMR, 0, TransferState.POOL)
    asyncio.run(announcer.announce_all())
    assert reader.reads == [invoice_id, invoice_id]
    assert _types(repo.rows)[1:] == ["InvoiceReceivedPayment", "InvoiceProcessing"]


NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
NEW = json.dumps({"additional": "None", "payments": {}, "status": "New"}, sort_keys=True)
EXPIRED = json.dumps({"additional": "None", "payments": {}, "status": "Expired"}, sort_keys=True)


def _watched(announced: str | None = NEW, **facts: Any) -> Watched:
    given: dict[str, Any] = {
        "marked": False,
        "has_payments": False,
        "expires_at": NOW + timedelta(minutes=15),
        "monitoring_minutes": 60,
    }
    return Watched("inv", "shop-b", announced, **(given | facts))


@pytest.mark.parametrize(
    ("watched", "now", "expected"),
    [
        (_watched(None), NOW, True),  # never announced: InvoiceCreated is due
        (_watched(), NOW, False),  # open, unpaid, before its expiry: nothing can change
        (_watched(marked=True), NOW, True),
        (_watched(has_payments=True), NOW, True),  # confirmations move with the chain
        (_watched(), NOW + timedelta(minutes=15), True),  # expired now: InvoiceExpired
        (_watched(expires_at=None), NOW + timedelta(days=9), False),  # no expiry, no money
        (_watched(EXPIRED), NOW + timedelta(minutes=74), False),  # monitored, quiet
        (_watched(EXPIRED), NOW + timedelta(minutes=75), True),  # monitoring over: unwatch
        (_watched(EXPIRED, has_payments=True), NOW + timedelta(minutes=20), True),  # late
    ],
)
def test_what_may_have_changed(watched: Watched, now: datetime, expected: bool) -> None:
    assert may_have_changed(watched, now) is expected
