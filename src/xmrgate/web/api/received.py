"""``GET /received/daily``: XMR received per day (the dashboard's chart), read scope."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from xmrgate.core.received import MAX_DAYS, MAX_OFFSET_MINUTES
from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep

router = APIRouter()


@router.get("/received/daily", dependencies=[require("read")])
async def received_daily(
    gateway: GatewayDep,
    days: Annotated[int, Query(ge=1, le=MAX_DAYS)] = 30,
    utc_offset: Annotated[int, Query(ge=-MAX_OFFSET_MINUTES, le=MAX_OFFSET_MINUTES)] = 0,
) -> dict[str, Any]:
    """Piconero received in mined transfers per day, oldest first, every day present.

    Days run midnight to midnight in the zone ``utc_offset`` minutes east of UTC (a
    browser sends ``-new Date().getTimezoneOffset()``); a transfer counts on the day
    of its block.
    """
    sums = await gateway.received.last_days(days, utc_offset)
    return {
        "days": [{"date": d.day.isoformat(), "amount": d.amount, "count": d.count} for d in sums],
        "utc_offset": utc_offset,
        "total": sum(d.amount for d in sums),
    }
