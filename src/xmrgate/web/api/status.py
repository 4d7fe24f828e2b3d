"""``GET /status`` (the overview as JSON, for ``xmrgate status``) and ``GET /metrics``.

Both need the ``read`` scope when API keys are configured; Prometheus sends the key
as a bearer token (``authorization: {credentials: ...}`` in its scrape config).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from xmrgate import __version__
from xmrgate.core.overview import OverviewReport
from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep

router = APIRouter()
metrics_router = APIRouter()


def overview_json(report: OverviewReport) -> dict[str, Any]:
    """The body of ``GET /status``: null where a part could not be read."""
    health = report.health
    facts = report.facts
    body: dict[str, Any] = {
        "version": __version__,
        "health": {
            "status": health.status,
            "services": health.services,
            "message": health.message,
        },
        "wallet": {"mode": health.wallet_mode, "height": report.wallet_height},
        "balance": (
            {"total": report.balance[0], "unlocked": report.balance[1]}
            if report.balance is not None
            else None
        ),
        "sync": {
            "height": facts.synced_height if facts else None,
            "wallet_height": report.wallet_height,
            "behind": report.blocks_behind,
        },
        # null without --daemon-address; else monerod's height and the wallet's lag on it.
        "daemon": (
            {"height": report.daemon.height, "wallet_behind": report.wallet_behind_daemon}
            if report.daemon is not None
            else None
        ),
        "callbacks": (
            {"pending": facts.callbacks_pending, "failed": facts.callbacks_failed}
            if facts
            else None
        ),
        "payment_requests": facts.requests() if facts else None,
        "address_pool": facts.address_pool if facts else None,
        "problems": report.problems,
    }
    return body


@router.get("/status", dependencies=[require("read")])
async def get_status(gateway: GatewayDep) -> dict[str, Any]:
    """The gateway at a glance: health, balance, heights, callbacks, requests by status.

    Always 200 when authorised: what could not be read is null and named in
    ``problems`` (``/health`` is the probe whose status code means something).
    """
    # Whose figures: the default store's are the gateway's, another store's its own.
    return {**overview_json(await gateway.overview.report()), "store": gateway.store_id}


@metrics_router.get("/metrics", dependencies=[require("read")], include_in_schema=False)
async def get_metrics(gateway: GatewayDep) -> Response:
    """Prometheus text format: counters and histograms of this gateway, gauges of its database."""
    body, content_type = await gateway.overview.exposition()
    return Response(body, media_type=content_type)
