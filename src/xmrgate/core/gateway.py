"""``Gateway``: the use cases of one store, as the web layer sees them."""

from __future__ import annotations

from dataclasses import dataclass, field

from xmrgate.core.greenfield_invoices import GreenfieldInvoices
from xmrgate.core.greenfield_webhooks import GreenfieldWebhooks
from xmrgate.core.idempotency import Idempotency
from xmrgate.core.invoices import Invoices
from xmrgate.core.links import Links
from xmrgate.core.observer import NO_OBSERVER, Observer
from xmrgate.core.overview import Overview
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.core.payouts import Payouts
from xmrgate.core.rates import RateBook
from xmrgate.core.received import ReceivedPerDay
from xmrgate.core.refunds import Refunds
from xmrgate.core.unmatched import UnmatchedReceipts
from xmrgate.core.wallet_status import WalletIdentity, WalletStatus
from xmrgate.domain.api_keys import ApiKey


@dataclass
class Gateway:
    """Everything a route may call, for ONE store; built by ``runtime/store_units.py``.

    Each store has its own Gateway, every part of it: its use cases are built on
    repositories and a wallet account bound to that store, so a route that got a
    store's Gateway cannot reach another store's requests, events, payouts or balance.
    The administration of stores is not a store's part (``web/deps.StoreAdminDep``).
    """

    store_id: str
    payment_requests: PaymentRequests
    payouts: Payouts
    idempotency: Idempotency
    wallet_status: WalletStatus
    identity: WalletIdentity
    # GET /status (this store's figures; /metrics only on the default store's).
    overview: Overview
    # XMR received per day (GET /received/daily, the dashboard's chart).
    received: ReceivedPerDay
    # The list of requests and the event feed (GET /receive, GET /events).
    invoices: Invoices
    # Refunds claimed with a link.
    refunds: Refunds
    # Payment links.
    links: Links
    # Money no request owns.
    unmatched: UnmatchedReceipts
    # BTCPay's invoices on this store's requests (``/api/v1``).
    greenfield: GreenfieldInvoices
    # The store's Greenfield webhooks and their deliveries.
    webhooks: GreenfieldWebhooks
    # The exchange rates of fiat prices (GET /rates). None is a setting, not a missing
    # part: fiat prices are turned off (--rate-currencies is empty).
    rates: RateBook | None
    api_keys: list[ApiKey] = field(default_factory=list)
    # What HTTP requests are reported to.
    observer: Observer = NO_OBSERVER
