"""An invoice as Greenfield answers it: ``InvoiceData`` (§2.1) and its payment methods
(§2.3), from ``core.greenfield_invoices.InvoiceView``.

Types are what BTCPay's PHP client reads with strict getters: decimals as strings
(never an exponent), times as Unix seconds (int), ``rate`` never null, ``fee`` a string.
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import Any

from xmrgate.core.greenfield_invoices import XMR, InvoiceView
from xmrgate.domain import ledger
from xmrgate.domain.greenfield.amounts import decimal_string, rounded_string, xmr_string
from xmrgate.domain.greenfield.payment_methods import XMR_CHAIN
from xmrgate.domain.greenfield.payments import payment_json
from xmrgate.domain.greenfield.speed import policy_for_confirmations
from xmrgate.domain.greenfield.states import available_marks
from xmrgate.domain.money import PICONERO_PER_XMR

# Our receipt is the checkout page: always on, with its QR code and payments.
RECEIPT = {"enabled": True, "showQR": True, "showPayments": True}


def _unix(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp())


def rate_of(view: InvoiceView) -> Decimal:
    """The price of 1 XMR in the invoice's currency (1 for an invoice in XMR)."""
    price = view.payment.request.price
    return Decimal(1) if price is None else Decimal(price.rate)


def received(view: InvoiceView) -> int:
    """Piconero that count toward the invoice (not gone, not double-spent)."""
    request = view.payment.request
    return ledger.coverage(request.amount, view.payment.transfers).total


def checkout_link(base_url: str, invoice_id: str) -> str:
    """BTCPay's checkout link: ``{base}/i/{invoiceId}`` (the WooCommerce plugin builds
    the same URL itself)."""
    return f"{base_url.rstrip('/')}/i/{invoice_id}"


def invoice_data(view: InvoiceView, base_url: str) -> dict[str, Any]:
    """``InvoiceData`` of §2.1 (``paymentMethods`` empty: only on request)."""
    invoice, request = view.invoice, view.payment.request
    paid = Decimal(received(view)) / PICONERO_PER_XMR
    paid_amount = paid * rate_of(view)
    tolerance = (
        0.0
        if request.amount == 0
        else float(Decimal(request.underpay_tolerance) * 100 / request.amount)
    )
    expiration_minutes = (
        0
        if request.expires_at is None
        else round((request.expires_at - request.created_at).total_seconds() / 60)
    )
    return {
        "id": invoice.id,
        "storeId": invoice.store_id,
        "amount": invoice.amount,
        "paidAmount": rounded_string(paid_amount, invoice.currency),
        "currency": invoice.currency,
        "type": "TopUp" if request.amount == 0 else "Standard",
        "checkoutLink": checkout_link(base_url, invoice.id),
        "status": view.state.status.value,
        "additionalStatus": view.state.additional.value,
        "createdTime": _unix(invoice.created_at),
        "expirationTime": _unix(request.expires_at),
        "monitoringExpiration": _unix(view.monitoring_expires_at),
        "availableStatusesForManualMarking": [s.value for s in available_marks(view.state)],
        "archived": False,
        "metadata": json.loads(invoice.metadata),
        "checkout": {
            "speedPolicy": (
                invoice.speed_policy or policy_for_confirmations(invoice.confirmations)
            ).value,
            "paymentMethods": [XMR_CHAIN],
            "defaultPaymentMethod": XMR_CHAIN,
            "expirationMinutes": expiration_minutes,
            "monitoringMinutes": invoice.monitoring_minutes,
            "paymentTolerance": tolerance,
            "redirectURL": invoice.redirect_url,
            "redirectAutomatically": invoice.redirect_automatically,
            "defaultLanguage": None,
            "lazyPaymentMethods": False,
        },
        "receipt": dict(RECEIPT),
        "paymentMethods": [],
    }


def payment_methods(view: InvoiceView, account: int) -> list[dict[str, Any]]:
    """The invoice's one payment method, XMR on its subaddress (§2.3)."""
    invoice, request = view.invoice, view.payment.request
    total = received(view)
    due = request.amount - total
    link = f"monero:{request.address}"
    if due > 0:
        link += f"?tx_amount={xmr_string(due)}"
    return [
        {
            "paymentMethodId": XMR_CHAIN,
            "currency": XMR,
            "destination": request.address,
            "paymentLink": link,
            "rate": decimal_string(rate_of(view)),
            "paymentMethodPaid": xmr_string(total),
            "totalPaid": xmr_string(total),
            "due": xmr_string(due),
            "amount": xmr_string(request.amount),
            "paymentMethodFee": "0",
            "networkFee": "0",
            "activated": True,
            "additionalData": {
                "accountIndex": account,
                "addressIndex": request.subaddr_index,
                "invoiceSettledConfirmationThreshold": invoice.confirmations,
            },
            "payments": [
                payment_json(
                    t,
                    account=account,
                    destination=request.address,
                    chain_height=view.payment.chain_height,
                    required=invoice.confirmations,
                )
                for t in view.payment.transfers
            ],
        }
    ]
