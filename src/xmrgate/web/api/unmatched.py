"""Unmatched receipts: money that reached a subaddress no request owns.

Thin routes over ``core/unmatched.py``: the list and one receipt take ``read``; dismissing
one takes ``receive`` (the scope that makes and deletes requests: bookkeeping of incoming
money); giving one back takes ``refund``, like any refund. Another store's receipt is
404, never 403.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from xmrgate.core.invoices import DEFAULT_LIMIT, MAX_LIMIT
from xmrgate.domain.refunds import refund_json
from xmrgate.domain.unmatched import MAX_NOTE, ReceiptStatus, receipt_json
from xmrgate.web.api.refunds import RefundCreate, made_json, refund_ask
from xmrgate.web.api.schemas import NoNul
from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep

router = APIRouter(tags=["unmatched"])

ReceiptId = Annotated[int, Path(ge=1, le=2**63 - 1)]


class Dismissal(BaseModel):
    """``POST /unmatched/{id}/dismiss``: why the merchant leaves this money be."""

    model_config = ConfigDict(extra="forbid")

    note: Annotated[StrictStr, Field(min_length=1, max_length=MAX_NOTE), NoNul]


@router.get("/unmatched", dependencies=[require("read")])
async def list_unmatched(
    gateway: GatewayDep,
    status: Annotated[
        ReceiptStatus | None, Query(description="Only receipts in this status")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> dict[str, Any]:
    """The store's unmatched receipts, newest first; ``next_cursor`` continues the list."""
    page = await gateway.unmatched.page(status, limit, cursor)
    return {
        "unmatched": [receipt_json(r, page.chain_height) for r in page.receipts],
        "next_cursor": page.next_cursor,
    }


@router.get("/unmatched/{receipt_id}", dependencies=[require("read")])
async def get_unmatched(receipt_id: ReceiptId, gateway: GatewayDep) -> dict[str, Any]:
    """One unmatched receipt of the store."""
    receipt, height = await gateway.unmatched.get(receipt_id)
    return receipt_json(receipt, height)


@router.post("/unmatched/{receipt_id}/dismiss", dependencies=[require("receive")])
async def dismiss_unmatched(
    receipt_id: ReceiptId, body: Dismissal, gateway: GatewayDep
) -> dict[str, Any]:
    """Dismiss an open receipt with a note; it is kept (409 when it is not open)."""
    receipt, height = await gateway.unmatched.dismiss(receipt_id, body.note)
    return receipt_json(receipt, height)


@router.post("/unmatched/{receipt_id}/refunds", dependencies=[require("refund")])
async def refund_unmatched(
    receipt_id: ReceiptId, body: RefundCreate, request: Request, gateway: GatewayDep
) -> dict[str, Any]:
    """Give a receipt's money back with a claim link, like any refund: never more than
    the receipt (mined, not gone) less what its refunds hold; ``claim_url`` shown once."""
    ask = refund_ask(body, gateway, receipt=receipt_id)
    return made_json(await gateway.refunds.create(ask), request)


@router.get("/unmatched/{receipt_id}/refunds", dependencies=[require("read")])
async def refunds_of_unmatched(receipt_id: ReceiptId, gateway: GatewayDep) -> dict[str, Any]:
    """The refunds of one receipt, oldest first."""
    found = await gateway.refunds.of_receipt(receipt_id)
    return {"refunds": [refund_json(r, datetime.now(UTC)) for r in found]}
