"""``/balance`` and ``/health``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep

router = APIRouter()


@router.get("/balance", dependencies=[require("read")])
async def get_balance(gateway: GatewayDep) -> dict[str, int]:
    """Total and unlocked balance of the wallet's Primary Account.

    A view-only wallet cannot see its own spends: its balance counts money that may
    already have left (see docs/view-only.md).
    """
    total, unlocked = await gateway.wallet_status.balance()
    return {"total": total, "unlocked": unlocked}


@router.get("/health", response_model=None)
async def get_health(gateway: GatewayDep) -> JSONResponse:
    """200 when wallet-rpc and the database answer and the wallet is ours, else 503."""
    report = await gateway.wallet_status.health()
    body: dict[str, Any] = {"status": report.status, "services": report.services}
    if report.wallet_mode is not None:
        body["wallet"] = report.wallet_mode
    if report.message is not None:
        body["message"] = report.message
    return JSONResponse(body, status_code=report.status)
