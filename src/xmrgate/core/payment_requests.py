"""Payment requests: create one (a fresh subaddress), read, delete, and its callbacks.

Reads come from the database only, never the wallet. With the address pool (the
default), creating a request takes a subaddress created ahead (``address_pool.py``);
when the pool is empty it waits for the refill loop's next batches (up to
``WALLET_WAIT`` seconds, also at start-up before the wallet's first check and fill),
and answers 503 early only when the wallet is known to be down (refused, or silent for
a few seconds), saying which. Without a pool, it asks the
wallet; if wallet-rpc was killed before it saved, it forgets the subaddresses it
handed out since and offers an index we already use. The unique index refuses the
duplicate and ``create`` moves the wallet's counter past every index in use, then
asks once more.

Deleting is one decision in the store (``PaymentRepository.delete``): a request is
deleted only if no transfer to it is recorded at that moment. A check here followed by
a delete there would let a sync tick record a payment in between, and the delete would
then take the fresh transfer and its events with it (ON DELETE CASCADE).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from xmrgate.core.address_pool import AddressPoolRepository
from xmrgate.core.ports import OutboxRepository, PaymentRepository, UrlGuard, Wallet
from xmrgate.core.wallet_status import OPEN_WAIT, WALLET_WAIT
from xmrgate.domain.addresses import looks_like_address
from xmrgate.domain.errors import (
    AddressPoolEmpty,
    InvalidInput,
    NotFound,
    SubaddressTaken,
)
from xmrgate.domain.fiat import Price, Quote
from xmrgate.domain.greenfield.invoice_row import InvoiceRow
from xmrgate.domain.invoice import MAX_EXPIRES_IN, initial_status
from xmrgate.domain.records import OutboxEvent, PaymentRequest, PaymentStatus

log = logging.getLogger(__name__)

# wallet-rpc keeps labels short in its cache file; longer descriptions stay in our DB.
LABEL_LENGTH = 100


async def _no_refill(_deadline: float) -> None:
    raise AddressPoolEmpty("no subaddress is ready and no refill runs; retry in a few seconds")


async def _no_wait() -> None:
    return None


@dataclass(frozen=True, slots=True)
class NewPaymentRequest:
    """What the merchant asks for at ``POST /receive``."""

    amount: int
    description: str = ""
    callback_url: str | None = None
    return_url: str | None = None
    expires_in: int | None = None  # seconds; None: never expires (or the store's default)
    underpay_tolerance: int | None = None  # None: 0 (or the store's default)
    # Priced in fiat instead (``amount`` 0 until ``create`` converts it), and the quote
    # that conversion used.
    price: Price | None = None
    quote: Quote | None = None
    # The payment link that made it (``core/links.py``); None: made by the API.
    link_id: str | None = None
    # The tolerance as a percent of the amount (Greenfield's ``paymentTolerance``), taken
    # once the amount is known (after a fiat price's conversion); rounded down.
    tolerance_percent: Decimal | None = None
    # The Idempotency-Key claim it is made under (``core/idempotency.py``): recorded with
    # the request, so a process that takes over a dead one's claim finds what it made.
    idempotency_ref: str | None = None


class Pricing(Protocol):
    """Converts fiat prices at a fresh rate (``core/rates.py`` RateBook)."""

    def quote(self, price: Price) -> tuple[int, Quote]:
        """``price`` in piconero, rounded up, and the quote; RatesUnavailable when no rate."""
        ...


@dataclass(frozen=True, slots=True)
class StoreDefaults:
    """A store's invoice defaults, for requests that name none (``PATCH /stores``)."""

    expires_in: int | None = None
    underpay_tolerance: int | None = None


def with_defaults(new: NewPaymentRequest, defaults: StoreDefaults) -> NewPaymentRequest:
    """``new`` with the store's defaults where it names nothing.

    A default tolerance above the amount is capped at the amount (it was set for the
    store, not for this request); an explicit one is checked as given.
    """
    tolerance = new.underpay_tolerance
    if tolerance is None and defaults.underpay_tolerance is not None:
        tolerance = min(defaults.underpay_tolerance, new.amount)
    expires_in = new.expires_in if new.expires_in is not None else defaults.expires_in
    return replace(new, expires_in=expires_in, underpay_tolerance=tolerance or 0)


def invoice_columns(new: NewPaymentRequest) -> dict[str, Any]:
    """Expiry, tolerance and first status of a new request (``domain/invoice.py``)."""
    tolerance = new.underpay_tolerance or 0
    if not 0 <= tolerance <= new.amount:
        raise InvalidInput("underpay_tolerance must be between 0 and amount")
    if new.expires_in is not None and not 1 <= new.expires_in <= MAX_EXPIRES_IN:
        raise InvalidInput(f"expires_in must be between 1 and {MAX_EXPIRES_IN} seconds")
    expires_at = (
        None if new.expires_in is None else datetime.now(UTC) + timedelta(seconds=new.expires_in)
    )
    return {
        "expires_at": expires_at,
        "underpay_tolerance": tolerance,
        "status": initial_status(new.amount, tolerance).value,
    }


def request_columns(new: NewPaymentRequest) -> dict[str, object]:
    """The columns of a new request that the merchant chose (the pool adds the rest)."""
    return {
        "amount": new.amount,
        "description": new.description,
        "callback_url": new.callback_url,
        "return_url": new.return_url,
        "price": new.quote,
        **invoice_columns(new),
        **link_column(new),
    }


def link_column(new: NewPaymentRequest) -> dict[str, Any]:
    """``{"link_id": ...}`` for a request made by a payment link, and
    ``{"idempotency_ref": ...}`` for one made under an Idempotency-Key, else nothing:
    the other requests keep their columns (and the pool's cached statements)."""
    columns: dict[str, Any] = {} if new.link_id is None else {"link_id": new.link_id}
    if new.idempotency_ref is not None:
        columns["idempotency_ref"] = new.idempotency_ref
    return columns


class PaymentRequests:
    """The payment-request use cases over a wallet, the stores and a URL guard."""

    def __init__(
        self,
        wallet: Wallet,
        store: PaymentRepository,
        outbox: OutboxRepository,
        url_guard: UrlGuard,
        *,
        wake_callbacks: Callable[[], None] = lambda: None,
        require_wallet: Callable[[], Awaitable[None]] = _no_wait,
        refuse_wallet_problem: Callable[[], None] = lambda: None,
        pool: AddressPoolRepository | None = None,
        pool_used: Callable[[], None] = lambda: None,
        pool_refilled: Callable[[float], Awaitable[None]] = _no_refill,
        label_later: Callable[[int, str], None] = lambda _index, _label: None,
        defaults: Callable[[], StoreDefaults] = StoreDefaults,
        pricing: Pricing | None = None,
        rate_lock: int = 900,
        starting: Callable[[], bool] = lambda: False,
    ) -> None:
        # True until the wallet's first check and fill are done: a request made then
        # waits up to OPEN_WAIT, since opening or creating the wallet alone takes
        # wallet-rpc 1-5 s (``core/wallet_status.py``).
        self._starting = starting
        # Fiat prices: None when --rate-currencies is empty.
        self._pricing = pricing
        self._rate_lock = rate_lock
        # The store's invoice defaults as last read (they change with PATCH /stores).
        self._defaults = defaults
        self._pool = pool
        self._pool_used = pool_used
        self._pool_refilled = pool_refilled
        self._label_later = label_later
        self._wallet = wallet
        self._store = store
        self._outbox = outbox
        self._url_guard = url_guard
        self._wake_callbacks = wake_callbacks
        self._require_wallet = require_wallet
        self._refuse_wallet_problem = refuse_wallet_problem

    async def create(
        self,
        new: NewPaymentRequest,
        *,
        greenfield: InvoiceRow | None = None,
        return_url_checked: bool = False,
    ) -> PaymentRequest:
        """Check the URLs, take a subaddress (pool or wallet) and record the request.

        ``greenfield``: a Greenfield invoice's row, written by the store in the
        transaction that inserts the request, with its id (one commit: if either cannot
        be written, neither is). ``return_url_checked``: the caller had the URL guard
        check ``return_url`` already (Greenfield's redirect, refused at its own field),
        so it is not resolved twice.

        The pool is guarded only against a wallet known to be wrong: its subaddresses were
        checked when pooled, so the pool answers while wallet-rpc is down, also at start
        before this process could check the wallet. The wallet path needs a checked wallet
        (and waits for the first check at start-up, within ``WALLET_WAIT``).
        """
        if self._pool is not None:
            self._refuse_wallet_problem()
        else:
            await self._require_wallet()
        defaults = self._defaults()
        if new.price is not None:
            new = self._priced(new, defaults)
        if new.tolerance_percent is not None:
            tolerance = int(new.amount * new.tolerance_percent / 100)
            new = replace(new, underpay_tolerance=tolerance, tolerance_percent=None)
        new = with_defaults(new, defaults)
        invoice_columns(new)  # bad expiry or tolerance: refused before a subaddress is spent
        if new.callback_url is not None:
            await self._url_guard.check(new.callback_url, "callback_url")
        if new.return_url is not None and not return_url_checked:
            await self._url_guard.check(new.return_url, "return_url")
        if self._pool is not None:
            return await self._take_from_pool(self._pool, new, greenfield)
        return await self._create_on_wallet(new, greenfield)

    def _priced(self, new: NewPaymentRequest, defaults: StoreDefaults) -> NewPaymentRequest:
        """Convert the fiat price at the current rate; the request expires when its rate
        lock does (``--rate-lock``): ``expires_in`` defaults to it and may be shorter."""
        assert new.price is not None
        if self._pricing is None:
            raise InvalidInput(
                "prices in fiat are turned off on this gateway (--rate-currencies is empty)"
            )
        lock = self._rate_lock
        if new.expires_in is not None and new.expires_in > lock:
            raise InvalidInput(
                f"expires_in of a fiat-priced request is at most the rate lock ({lock} s)"
            )
        expires_in = new.expires_in
        if expires_in is None:
            expires_in = min(defaults.expires_in or lock, lock)
        amount, quote = self._pricing.quote(new.price)
        return replace(new, amount=amount, quote=quote, expires_in=expires_in)

    async def _take_from_pool(
        self, pool: AddressPoolRepository, new: NewPaymentRequest, greenfield: InvoiceRow | None
    ) -> PaymentRequest:
        """One statement when the pool holds a subaddress; else wait for its refills.

        ``pool_refilled`` raises at once when the wallet is known to be down; a wallet
        that answers, however slowly, is waited for until the budget is spent.
        """
        columns = request_columns(new)
        budget = OPEN_WAIT if self._starting() else WALLET_WAIT
        deadline = time.monotonic() + budget
        while True:
            # Without a row beside it, the call every pool knows (the links' fakes too).
            taken = await (
                pool.take(columns) if greenfield is None else pool.take(columns, greenfield)
            )
            self._pool_used()
            if taken is not None:
                self._label_later(taken.subaddr_index, new.description[:LABEL_LENGTH])
                return taken
            # A wrong or restricted wallet found while waiting (the first check at start)
            # never refills the pool: say so now rather than at the end of the budget.
            self._refuse_wallet_problem()
            if time.monotonic() >= deadline:
                raise AddressPoolEmpty(
                    f"no subaddress is ready: the wallet answers but made none within "
                    f"{budget:.0f} s (busy?); retry in a few seconds"
                )
            await self._pool_refilled(deadline)

    async def _create_on_wallet(
        self, new: NewPaymentRequest, greenfield: InvoiceRow | None
    ) -> PaymentRequest:
        """Ask the wallet for a subaddress (no pool)."""
        for attempt in range(2):
            address, index = await self._wallet.create_address(label=new.description[:LABEL_LENGTH])
            try:
                return await self._store.create(
                    address=address,
                    subaddr_index=index,
                    amount=new.amount,
                    description=new.description,
                    callback_url=new.callback_url,
                    return_url=new.return_url,
                    price=new.quote,
                    **invoice_columns(new),
                    **link_column(new),
                    greenfield=greenfield,
                )
            except SubaddressTaken:
                if attempt:
                    raise
                highest = await self._store.highest_subaddr_index()
                log.warning(
                    "wallet handed out used subaddress %d (it lost state); skipping to %d",
                    index,
                    highest + 1,
                )
                # Create index+1 .. highest: the wallet's next subaddress is then highest + 1.
                await self._wallet.skip_subaddresses(highest - index)
        raise AssertionError("unreachable: the loop returns or raises")

    async def status(self, address: str) -> PaymentStatus:
        """A request with its transfers and the synced height; NotFound if none."""
        found = await self._store.status(address) if looks_like_address(address) else None
        if found is None:
            raise NotFound("no payment request for this address")
        return found

    async def by_idempotency_ref(self, ref: str) -> PaymentRequest | None:
        """The request made under an Idempotency-Key claim's reference, if it was made."""
        return await self._store.by_idempotency_ref(ref)

    async def get(self, address: str) -> PaymentRequest:
        """One request; NotFound if none."""
        found = await self._store.get(address) if looks_like_address(address) else None
        if found is None:
            raise NotFound("no payment request for this address")
        return found

    async def delete(self, address: str) -> None:
        """Forget a request that has received nothing; RequestHasFunds once money arrived.

        No check of our own first: the store decides and deletes in one step, so a
        transfer recorded at any moment before that step keeps the request.
        """
        if not looks_like_address(address) or not await self._store.delete(address):
            raise NotFound("no payment request for this address")

    async def callbacks(self, address: str) -> list[OutboxEvent]:
        """Every callback event of a request with its delivery record."""
        request = await self.get(address)
        return await self._outbox.for_request(request.id)

    async def retry_callback(self, address: str, event_id: str) -> OutboxEvent:
        """Make one callback due now and wake the worker."""
        request = await self.get(address)
        event = (
            await self._outbox.retry_now(request.id, event_id[:64]) if _is_uuid(event_id) else None
        )
        if event is None:
            raise NotFound("no such callback event for this address")
        self._wake_callbacks()
        return event


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
