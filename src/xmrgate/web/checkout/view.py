"""What the checkout shows of a payment request and of its store, for every page that
shows the same: the checkout's routes, the point of sale's API (``web/api/pos.py``), the
link and refund pages (their store's name and colour).
"""

from __future__ import annotations

import time

from fastapi import Request

from xmrgate.domain.checkout_state import CheckoutStatus, checkout_status
from xmrgate.domain.payloads import invoice_of
from xmrgate.domain.records import PaymentStatus
from xmrgate.domain.stores import DEFAULT_STORE, DEFAULT_STORE_NAME
from xmrgate.web.checkout.page import Brand


def payment_state(found: PaymentStatus) -> CheckoutStatus:
    """The checkout's state of a payment request now (waiting, seen, paid, expired, late),
    with its totals, confirmations and time left, from its stored transfers."""
    return checkout_status(
        found.request.amount,
        found.transfers,
        found.chain_height,
        invoice=invoice_of(found.request),
        now=time.time(),
    )


def store_brand(request: Request, store_id: str) -> Brand:
    """The name and accent of the store ``store_id`` as the app's registry last read it
    (the default store: the generic page until the operator names it, or before the
    first read)."""
    store = request.app.state.stores.store(store_id)
    if store is None:
        return Brand()
    unnamed = store.id == DEFAULT_STORE and store.name == DEFAULT_STORE_NAME
    return Brand(name=None if unnamed else store.name, accent=store.accent)
