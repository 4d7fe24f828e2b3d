"""Greenfield invoices: BTCPay's invoice on one of our payment requests.

One ledger, two APIs: an invoice made through ``/api/v1`` IS a payment request, made by
``PaymentRequests.create`` like any other (the pool, the fiat rate book and its lock,
the store's defaults), so the dashboard, ``GET /receive/:address``, ``/events``,
refunds and the POS's store see it. What Greenfield adds (its id, order id, metadata,
the amount as the shop sent it, the confirmations its speed policy asks for, the
redirect, the merchant's mark) is one row beside the request. Its state
(``status``/``additionalStatus``) is derived at every read from the request's transfers
(``domain/greenfield/states.py``).

The row is written in the transaction that inserts the request (``PaymentRequests.create``
with ``greenfield=``: the pool's take or the wallet path's insert), so the two are one
commit: if either cannot be written neither is, and no request exists that no shop
knows of. The redirect is checked by the URL guard once, filled in, as
``checkout.redirectURL``; the request is told not to check it again as ``return_url``.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Protocol
from urllib.parse import quote

from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests
from xmrgate.core.ports import UrlGuard
from xmrgate.domain import ledger
from xmrgate.domain.errors import InvalidInput, NotFound
from xmrgate.domain.fiat import Price
from xmrgate.domain.greenfield.amounts import xmr_to_piconero
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.greenfield.invoice_row import GreenfieldInvoice, InvoiceRow
from xmrgate.domain.greenfield.payments import settled_total
from xmrgate.domain.greenfield.speed import SpeedPolicy, confirmations_for
from xmrgate.domain.greenfield.states import GreenfieldState, InvoiceFacts, Status, derive, mark
from xmrgate.domain.invoice import InvoiceStatus, status_of
from xmrgate.domain.payloads import invoice_of
from xmrgate.domain.records import PaymentStatus

XMR = "XMR"
# BTCPay's defaults when the shop names none: 15 minutes to pay, 60 to be seen.
DEFAULT_EXPIRATION_MINUTES = 15
DEFAULT_MONITORING_MINUTES = 60
# At most a week of either (our longest expiry is longer; a shop asking more is wrong).
MAX_MINUTES = 7 * 24 * 60
MAX_METADATA_BYTES = 64 * 1024
MAX_ORDER_ID = 256
_ORDER_ID = re.compile(re.escape("{OrderId}"), re.IGNORECASE)
_INVOICE_ID = re.compile(re.escape("{InvoiceId}"), re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class NewInvoice:
    """``POST /api/v1/stores/{s}/invoices`` once parsed (``web/greenfield``)."""

    amount: Decimal
    currency: str
    order_id: str | None = None
    # The shop's metadata object, already encoded as JSON text.
    metadata: str = "{}"
    speed_policy: SpeedPolicy | None = None
    expiration_minutes: int | None = None
    monitoring_minutes: int | None = None
    # Percent of the amount that may be missing and still pay the invoice.
    payment_tolerance: Decimal | None = None
    redirect_url: str | None = None
    redirect_automatically: bool = False
    # The description shown in the wallet's label and the dashboard.
    description: str = ""


@dataclass(frozen=True, slots=True)
class InvoiceView:
    """An invoice as the routes answer it: its row, its request with its transfers and
    the synced height, and the state derived from them."""

    invoice: GreenfieldInvoice
    payment: PaymentStatus
    state: GreenfieldState
    # The request's status by our own rules (waiting ... paid_late) at ``now``.
    ours: InvoiceStatus
    monitoring_expires_at: datetime | None


class GreenfieldInvoiceRepository(Protocol):
    """One store's invoice rows (``adapters/store/greenfield_invoices.py``); a new row is
    written with its request (``PaymentRequests.create``), not here."""

    async def get(self, invoice_id: str) -> tuple[GreenfieldInvoice, str] | None:
        """The row and its request's address; None when not this store's."""
        ...

    async def page(
        self, order_ids: tuple[str, ...], skip: int, take: int
    ) -> list[tuple[GreenfieldInvoice, str]]:
        """Rows and addresses newest first, of these order ids (all when empty)."""
        ...

    async def set_mark(self, invoice_id: str, marked: Status) -> bool:
        """Record the merchant's mark; False when the row is gone."""
        ...


def fill_redirect(template: str | None, order_id: str | None, invoice_id: str) -> str | None:
    """The redirect with ``{OrderId}`` and ``{InvoiceId}`` filled in (URL-encoded, any
    case), as BTCPay sends the buyer back: the request's ``return_url``."""
    if template is None:
        return None
    filled = _ORDER_ID.sub(lambda _m: quote(order_id or "", safe=""), template)
    return _INVOICE_ID.sub(lambda _m: quote(invoice_id, safe=""), filled)


def new_invoice_id() -> str:
    """An id of 22 characters from 16 random bytes, as long as BTCPay's."""
    return secrets.token_urlsafe(16)


class GreenfieldInvoices:
    """One store's Greenfield invoices over its ``PaymentRequests``."""

    def __init__(
        self,
        repo: GreenfieldInvoiceRepository,
        requests: PaymentRequests,
        url_guard: UrlGuard,
        *,
        store_id: str,
        currencies: tuple[str, ...] = (),
        rate_lock: int = 900,
        confirmations: Callable[[], int] = lambda: confirmations_for(None),
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """``currencies``: the fiat ones the rate book prices; ``confirmations``: the
        store's default for an invoice without a speed policy."""
        self._repo = repo
        self._requests = requests
        self._url_guard = url_guard
        self._store_id = store_id
        self._currencies = currencies
        self._rate_lock = rate_lock
        self._default_confirmations = confirmations
        self._clock = clock

    async def create(self, new: NewInvoice) -> InvoiceView:
        """Make the request and its row, in one transaction."""
        invoice_id = new_invoice_id()
        return_url = fill_redirect(new.redirect_url, new.order_id, invoice_id)
        if return_url is not None:
            # Where the buyer's browser is sent back: checked once, as it will be used
            # (filled in), and refused at the field the shop sent.
            try:
                await self._url_guard.check(return_url, "redirectURL")
            except InvalidInput as exc:
                raise FieldError("checkout.redirectURL", exc.message) from None
        ask = replace(self._request_of(new), return_url=return_url)
        confirmations = (
            self._default_confirmations()
            if new.speed_policy is None
            else confirmations_for(new.speed_policy)
        )
        row = InvoiceRow(
            id=invoice_id,
            store_id=self._store_id,
            order_id=new.order_id,
            currency=new.currency,
            amount=format(new.amount, "f"),
            metadata=new.metadata,
            speed_policy=new.speed_policy,
            confirmations=confirmations,
            monitoring_minutes=new.monitoring_minutes or DEFAULT_MONITORING_MINUTES,
            redirect_url=new.redirect_url,
            redirect_automatically=new.redirect_automatically,
            marked=None,
            created_at=self._clock(),
        )
        request = await self._requests.create(ask, greenfield=row, return_url_checked=True)
        # Nothing was received yet: the answer is built from what was just written, not
        # read back (a round trip less; the chain height matters for payments only).
        return self._viewed(row.of_request(request.id), PaymentStatus(request, [], 0))

    async def get(self, invoice_id: str) -> InvoiceView:
        """One invoice of this store; NotFound otherwise."""
        found = await self._repo.get(invoice_id)
        if found is None:
            raise NotFound("The invoice was not found")
        return await self._view(*found)

    async def listing(
        self,
        order_ids: tuple[str, ...] = (),
        statuses: tuple[Status, ...] = (),
        skip: int = 0,
        take: int = 50,
    ) -> list[InvoiceView]:
        """Invoices newest first, of these order ids; ``statuses`` filters what is
        derived (the page is read first, then filtered, as its state is not stored)."""
        views = [await self._view(*row) for row in await self._repo.page(order_ids, skip, take)]
        return [v for v in views if not statuses or v.state.status in statuses]

    async def mark(self, invoice_id: str, target: Status) -> InvoiceView:
        """The merchant marks an invoice Settled or Invalid (422 when not allowed now)."""
        view = await self.get(invoice_id)
        mark(view.state, target)  # FieldError when BTCPay would refuse the mark
        if not await self._repo.set_mark(invoice_id, target):
            raise NotFound("The invoice was not found")
        return await self.get(invoice_id)

    def _request_of(self, new: NewInvoice) -> NewPaymentRequest:
        """The payment request of a new invoice (422 at the field that is wrong)."""
        for name, minutes in (
            ("checkout.expirationMinutes", new.expiration_minutes),
            ("checkout.monitoringMinutes", new.monitoring_minutes),
        ):
            if minutes is not None and not 1 <= minutes <= MAX_MINUTES:
                raise FieldError(name, f"must be between 1 and {MAX_MINUTES} minutes", minutes)
        tolerance = new.payment_tolerance
        if tolerance is not None and not 0 <= tolerance <= 100:
            raise FieldError("checkout.paymentTolerance", "must be between 0 and 100", tolerance)
        if len(new.metadata.encode()) > MAX_METADATA_BYTES:
            raise FieldError("metadata", "must be at most 64 KiB of JSON", None)
        if new.order_id is not None and len(new.order_id) > MAX_ORDER_ID:
            raise FieldError("metadata.orderId", f"at most {MAX_ORDER_ID} characters", None)
        expires_in = 60 * (new.expiration_minutes or DEFAULT_EXPIRATION_MINUTES)
        ask = NewPaymentRequest(
            amount=0,
            description=new.description or (new.order_id or ""),
            return_url=None,
            expires_in=expires_in,
            tolerance_percent=tolerance,
        )
        if new.currency == XMR:
            return replace(ask, amount=xmr_to_piconero(new.amount))
        if new.currency not in self._currencies:
            raise FieldError(
                "currency",
                f"{new.currency} is not priced on this gateway (XMR or one of "
                f"{', '.join(self._currencies) or 'none: --rate-currencies is empty'})",
                new.currency,
            )
        if new.amount <= 0:
            raise FieldError("amount", "a price in fiat must be above zero", str(new.amount))
        # The rate lock bounds the expiry of a fiat price: a longer one is cut to it.
        return replace(
            ask,
            expires_in=min(expires_in, self._rate_lock),
            # Any decimals the shop sends: the conversion rounds the piconero up.
            price=Price(new.amount, new.currency),
        )

    async def _view(self, invoice: GreenfieldInvoice, address: str) -> InvoiceView:
        """The invoice's request and transfers now, and the state they make."""
        return self._viewed(invoice, await self._requests.status(address))

    def _viewed(self, invoice: GreenfieldInvoice, payment: PaymentStatus) -> InvoiceView:
        """The state ``payment`` (the request with its transfers) makes now."""
        request = payment.request
        now = self._clock()
        ours = status_of(invoice_of(request), payment.transfers, now.timestamp())
        coverage = ledger.coverage(request.amount, payment.transfers)
        settled = settled_total(payment.transfers, payment.chain_height, invoice.confirmations)
        monitoring_end = (
            None
            if request.expires_at is None
            else request.expires_at + timedelta(minutes=invoice.monitoring_minutes)
        )
        facts = InvoiceFacts(
            status=ours,
            expected=request.amount,
            received=coverage.total,
            settled=min(settled, coverage.total),
            tolerance=request.underpay_tolerance,
            monitoring_over=monitoring_end is not None and now >= monitoring_end,
            marked=invoice.marked,
        )
        return InvoiceView(invoice, payment, derive(facts), ours, monitoring_end)
