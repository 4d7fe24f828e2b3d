"""Our store as Greenfield's ``StoreData``, and its one payment method (§2.5, §2.6).

Types are the contract: BTCPay's PHP client reads the store through strict getters
(``getName(): string``, ``getInvoiceExpiration(): int``, ``getPaymentTolerance(): int``,
``isEnabled(): bool``, ...), so each field has the JSON type its getter returns, and a
setting we do not have is BTCPay's default for it, or null where BTCPay's is null too.
"""

from __future__ import annotations

from typing import Any

from xmrgate.core.gateway import Gateway
from xmrgate.core.greenfield_invoices import (
    DEFAULT_EXPIRATION_MINUTES,
    DEFAULT_MONITORING_MINUTES,
)
from xmrgate.domain.greenfield.payment_methods import CRYPTO_CODE, XMR_CHAIN
from xmrgate.domain.stores import Store

XMR = "XMR"


def default_currency(gateway: Gateway) -> str:
    """The first configured fiat currency (``--rate-currencies``), else ``XMR``: the
    currency an invoice can surely be priced in on this store."""
    if gateway.rates is not None and gateway.rates.currencies:
        return gateway.rates.currencies[0]
    return XMR


def invoice_expiration(gateway: Gateway, rate_lock: int) -> int:
    """Seconds an invoice of this store has to be paid when the shop names none: the
    invoice use case's default, cut to the rate lock when the default currency is fiat
    (a fiat price expires with its lock)."""
    seconds = 60 * DEFAULT_EXPIRATION_MINUTES
    if default_currency(gateway) != XMR:
        seconds = min(seconds, rate_lock)
    return seconds


def store_data(store: Store, gateway: Gateway, rate_lock: int) -> dict[str, Any]:
    """``GET /stores`` item and ``GET /stores/{id}`` answer."""
    return {
        "id": store.id,
        "name": store.name,
        # Settings we do not keep: BTCPay's null.
        "website": None,
        "supportUrl": None,
        "logoUrl": None,
        "cssUrl": None,
        "paymentSoundUrl": None,
        "brandColor": store.accent,
        "applyBrandColorToBackend": False,
        "defaultCurrency": default_currency(gateway),
        "additionalTrackedRates": [],
        # Durations in seconds, as integers (BTCPay's TimeSpan converter for stores).
        "invoiceExpiration": invoice_expiration(gateway, rate_lock),
        "refundBOLT11Expiration": 30 * 24 * 3600,
        "displayExpirationTimer": 5 * 60,
        "monitoringExpiration": 60 * DEFAULT_MONITORING_MINUTES,
        # The store's own (PATCH /stores/{id}): what its invoices without one need.
        "speedPolicy": store.speed_policy,
        "lightningDescriptionTemplate": None,
        # A percentage in BTCPay; ours is an amount per request, so none here. An integer
        # 0, not 0.0: the PHP client's getPaymentTolerance() is typed int.
        "paymentTolerance": 0,
        # A disabled store keeps its history and takes no new invoices: BTCPay's archive.
        "archived": not store.enabled,
        "anyoneCanCreateInvoice": False,
        "requiresRefundEmail": False,
        "lightningAmountInSatoshi": False,
        "lightningPrivateRouteHints": False,
        "onChainWithLnInvoiceFallback": False,
        "redirectAutomatically": False,
        "showRecommendedFee": False,
        "recommendedFeeBlockTarget": 1,
        "defaultLang": "en",
        "customLogo": None,
        "customCSS": None,
        "htmlTitle": None,
        "networkFeeMode": "Never",
        "payJoinEnabled": False,
        "lazyPaymentMethods": False,
        "autoDetectLanguage": False,
        "showPayInWalletButton": True,
        "showStoreHeader": True,
        "celebratePayment": True,
        "playSoundOnPayment": False,
        "defaultPaymentMethod": XMR_CHAIN,
        "paymentMethodCriteria": [],
    }


def payment_method(store: Store, include_config: bool) -> dict[str, Any]:
    """The store's one payment method (BTCPay ≥ 2.0 ``GenericPaymentMethodData``);
    ``config`` (the wallet account it receives on) only when asked for."""
    item: dict[str, Any] = {"enabled": store.enabled, "paymentMethodId": XMR_CHAIN}
    if include_config:
        item["config"] = {
            "accountIndex": store.account_index,
            "invoiceSettledConfirmationThreshold": None,
        }
    return item


def legacy_on_chain(store: Store) -> dict[str, Any]:
    """An item of BTCPay 1.x's ``payment-methods/OnChain`` (PrestaShop reads
    ``cryptoCode`` of each and hides the payment option if the list is refused)."""
    return {"enabled": store.enabled, "cryptoCode": CRYPTO_CODE, "paymentMethodId": XMR_CHAIN}
