"""``/transfer``: payouts from the Primary Account, and transaction lookups."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from xmrgate.core.payouts import Destination
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.payloads import rfc3339_seconds
from xmrgate.web.api.idempotency import HEADER, idempotent
from xmrgate.web.api.schemas import TX_HASH, TransferRequest
from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep

log = logging.getLogger(__name__)
router = APIRouter()

# get_transfer_by_txid "type" -> the spec's state.
STATE_OF_TYPE = {
    "in": "completed",
    "out": "completed",
    "block": "completed",
    "pending": "pending",
    "pool": "pending",
    "failed": "failed",
}


@router.post("/transfer", dependencies=[require("transfer")])
async def send_payout(body: TransferRequest, request: Request, gateway: GatewayDep) -> Any:
    """Send to up to 16 destinations; every payout is journaled before and after.

    409 when the wallet is view-only (no spend key on the server, docs/view-only.md).
    """

    async def send(_ref: str | None) -> dict[str, Any]:
        result = await gateway.payouts.send(
            [Destination(address=d.address, amount=d.amount) for d in body.destinations],
            requested_by=getattr(request.state, "api_key", None)
            or (request.client.host if request.client else None),
            idempotency_key=request.headers.get(HEADER),
        )
        hashes = result.tx_hash_list
        return {
            "amount": result.amount,
            "fee": result.fee,
            "tx_hash": hashes[0] if hashes else "",
            "tx_hash_list": hashes,
            "destinations": [{"amount": d.amount, "address": d.address} for d in body.destinations],
        }

    return await idempotent(request, gateway, "transfer", body.model_dump(), send, money=True)


@router.get("/transfer/{tx_hash}", dependencies=[require("read")])
async def get_transaction(tx_hash: str, gateway: GatewayDep) -> dict[str, Any]:
    """The wallet's view of one transaction."""
    if not TX_HASH.match(tx_hash):
        raise InvalidInput("tx_hash must be 64 hexadecimal characters")
    transfer = await gateway.payouts.transaction(tx_hash.lower())
    kind = str(transfer.get("type", ""))
    return {
        "amount": int(transfer.get("amount", 0)),
        "fee": int(transfer.get("fee", 0)),
        "state": STATE_OF_TYPE.get(kind, "pending"),
        "transfer": [
            {"amount": int(d.get("amount", 0)), "address": str(d.get("address", ""))}
            for d in transfer.get("destinations", []) or []
        ],
        "confirmations": int(transfer.get("confirmations", 0)),
        "double_spend_seen": bool(transfer.get("double_spend_seen", False)),
        "height": int(transfer.get("height", 0)),
        "timestamp": rfc3339_seconds(int(transfer.get("timestamp", 0))),
        "unlock_time": int(transfer.get("unlock_time", 0)),
        "tx_hash": str(transfer.get("txid", tx_hash.lower())),
    }


@router.get("/payouts", dependencies=[require("read")])
async def list_payouts(
    gateway: GatewayDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> dict[str, Any]:
    """The payout journal, newest first: did this payout go out, and with which txs?"""
    return {"payouts": await gateway.payouts.journal(limit)}
