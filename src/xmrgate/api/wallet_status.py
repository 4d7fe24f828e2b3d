"""``/balance`` and ``/health``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from xmrgate.api.deps import ServicesDep
from xmrgate.api.security import require

log = logging.getLogger(__name__)
router = APIRouter()

# Each probe gets this long; both run at once, so /health answers within ~2.5 s.
PROBE_TIMEOUT = 2.0


@router.get("/balance", dependencies=[require("read")])
async def get_balance(services: ServicesDep) -> dict[str, int]:
    """Total and unlocked balance of the wallet's Primary Account."""
    total, unlocked = await services.wallet.get_balance()
    return {"total": total, "unlocked": unlocked}


async def _probe(check: Any) -> bool:
    try:
        return bool(await asyncio.wait_for(check, timeout=PROBE_TIMEOUT))
    except Exception:
        return False


@router.get("/health", response_model=None)
async def get_health(services: ServicesDep) -> JSONResponse:
    """200 when wallet-rpc and the database answer, else 503 naming the one that does not."""
    wallet_up, db_up = await asyncio.gather(
        _probe(services.wallet.probe(timeout=PROBE_TIMEOUT)),
        _probe(services.db.ping()),
    )
    status = 200 if wallet_up and db_up else 503
    body = {
        "status": status,
        "services": {"walletrpc": wallet_up, services.settings.database_kind: db_up},
    }
    return JSONResponse(body, status_code=status)
