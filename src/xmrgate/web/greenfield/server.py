"""``GET server/info`` and ``GET api-keys/current``: any valid key may read them (§3).

WooCommerce reads both when its settings are saved (§1.B): ``version`` compared with
``1.7.6`` (below it, no refunds), ``fullySynched`` cast to int and expected to be 1, and
the key's ``permissions``, which must be exactly the ``name:storeId`` strings it needs.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from xmrgate.core.gateway import Gateway
from xmrgate.core.overview import OverviewReport
from xmrgate.domain.greenfield.payment_methods import CRYPTO_CODE, XMR_CHAIN
from xmrgate.web.greenfield import PREFIX
from xmrgate.web.greenfield.access import caller
from xmrgate.web.greenfield.auth import granted_permissions, presented_token

# The BTCPay version whose Greenfield API we speak: 2.x (payment method ids such as
# XMR-CHAIN, ``payment-methods`` as one list). Not xmrgate's version: clients compare
# this one with BTCPay's (WooCommerce: refunds need >= 1.7.6; PrestaShop: >= 1.7.0).
GREENFIELD_VERSION = "2.0.0"
# Blocks the gateway may lag its wallet (and the wallet monerod) and still count as
# synced: a block found between the sync tick's reads is not "behind" to a shop.
SYNC_SLACK = 1

router = APIRouter(prefix=PREFIX, include_in_schema=False)


def fully_synched(gateway: Gateway, report: OverviewReport) -> bool:
    """True only when the main wallet is the right one, usable, and the gateway has
    synced what the wallet (and monerod, when we know its height) have."""
    identity = gateway.identity
    usable = identity.checked and identity.problem is None and report.health.status == 200
    behind = report.blocks_behind
    daemon_behind = report.wallet_behind_daemon
    return (
        usable
        and behind is not None
        and behind <= SYNC_SLACK
        and (daemon_behind is None or daemon_behind <= SYNC_SLACK)
    )


def sync_status(gateway: Gateway, report: OverviewReport, synched: bool) -> dict[str, Any]:
    """The one ``syncStatus`` item: the Monero wallet, as BTCPay's Monero plugin reports it."""
    daemon_height = None if report.daemon is None else report.daemon.height
    synced_height = None if report.facts is None else report.facts.synced_height
    return {
        "paymentMethodId": XMR_CHAIN,
        "cryptoCode": CRYPTO_CODE,
        "available": gateway.identity.problem is None and report.health.status == 200,
        "chainHeight": daemon_height if daemon_height is not None else report.wallet_height,
        "syncHeight": synced_height,
        "summary": {
            "synced": synched,
            "walletHeight": report.wallet_height,
            "daemonHeight": daemon_height,
            "syncedHeight": synced_height,
        },
    }


@router.get("/server/info")
async def server_info(request: Request) -> dict[str, Any]:
    """The gateway as a BTCPay server: version, payment methods, whether it is synced.

    Read from the default store's Gateway: the main wallet, which every store's account
    lives in (a store on its own wallet-rpc is one shop's affair, not the server's).
    """
    caller(request)
    gateway: Gateway = request.app.state.stores.default
    report = await gateway.overview.report()
    synched = fully_synched(gateway, report)
    return {
        "version": GREENFIELD_VERSION,
        # No onion address is configured on xmrgate: BTCPay's null without Tor.
        "onion": None,
        "supportedPaymentMethods": [XMR_CHAIN],
        "fullySynched": synched,
        "syncStatus": [sync_status(gateway, report, synched)],
    }


@router.get("/api-keys/current")
async def current_key(request: Request) -> dict[str, Any]:
    """The presented key, its label and its permissions (``name`` or ``name:storeId``)."""
    key = caller(request)
    return {
        # The key itself, as presented (we keep only its digest): BTCPay echoes it too.
        "apiKey": presented_token(request.headers.get("authorization", "")) or "",
        "label": key.label,
        "permissions": [str(p) for p in granted_permissions(key)],
    }
