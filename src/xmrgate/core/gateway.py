"""``Gateway``: the use cases of one process, as the web layer sees them."""

from __future__ import annotations

from dataclasses import dataclass, field

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
from xmrgate.core.stores import StoreAdmin
from xmrgate.core.unmatched import UnmatchedReceipts
from xmrgate.core.wallet_status import WalletIdentity, WalletStatus
from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.errors import InvalidInput, NotFound
from xmrgate.domain.stores import DEFAULT_STORE


@dataclass
class Gateway:
    """Everything a route may call, for ONE store; built by ``runtime/container.py``.

    Each store has its own Gateway: its use cases are built on repositories and a
    wallet account bound to that store, so a route that got a store's Gateway cannot
    reach another store's requests, events, payouts or balance.
    """

    payment_requests: PaymentRequests
    payouts: Payouts
    idempotency: Idempotency
    wallet_status: WalletStatus
    identity: WalletIdentity
    api_keys: list[ApiKey] = field(default_factory=list)
    # The overview (GET /status, /metrics) and what HTTP requests are reported to.
    overview: Overview | None = None
    observer: Observer = NO_OBSERVER
    # XMR received per day (GET /received/daily, the dashboard's chart).
    received: ReceivedPerDay | None = None
    # The list of requests and the event feed (GET /receive, GET /events).
    invoices: Invoices | None = None
    # Which store this is; the administration of stores (admin scope).
    store_id: str = DEFAULT_STORE
    stores: StoreAdmin | None = None
    # The exchange rates of fiat prices (GET /rates); None when they are turned off.
    rates: RateBook | None = None
    # Refunds claimed with a link (issue 20); None on a gateway built without them.
    refunds: Refunds | None = None
    # Payment links (issue 21); None on a gateway built without them.
    links: Links | None = None
    # Money no request owns (issue 26); None on a gateway built without it.
    unmatched: UnmatchedReceipts | None = None

    def unmatched_required(self) -> UnmatchedReceipts:
        """The unmatched receipts; NotFound when this gateway was built without them."""
        if self.unmatched is None:
            raise NotFound("this gateway has no unmatched receipts")
        return self.unmatched

    def links_required(self) -> Links:
        """The payment links; NotFound when this gateway was built without them."""
        if self.links is None:
            raise NotFound("this gateway has no payment links")
        return self.links

    def refunds_required(self) -> Refunds:
        """The refunds; NotFound when this gateway was built without them."""
        if self.refunds is None:
            raise NotFound("this gateway has no refunds")
        return self.refunds

    def rates_required(self) -> RateBook:
        """The rate book; InvalidInput when fiat prices are turned off."""
        if self.rates is None:
            raise InvalidInput(
                "prices in fiat are turned off on this gateway (--rate-currencies is empty)"
            )
        return self.rates

    def stores_required(self) -> StoreAdmin:
        """The store administration; NotFound when this gateway was built without it."""
        if self.stores is None:
            raise NotFound("this gateway has no store administration")
        return self.stores

    def overview_required(self) -> Overview:
        """The overview; NotFound when this gateway was built without one."""
        if self.overview is None:
            raise NotFound("this gateway has no overview")
        return self.overview

    def received_required(self) -> ReceivedPerDay:
        """The daily sums; NotFound when this gateway was built without them."""
        if self.received is None:
            raise NotFound("this gateway has no daily sums")
        return self.received

    def invoices_required(self) -> Invoices:
        """The list and feed; NotFound when this gateway was built without them."""
        if self.invoices is None:
            raise NotFound("this gateway has no request list")
        return self.invoices
