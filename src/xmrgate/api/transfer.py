"""``/transfer``: payouts from the Primary Account, and transaction lookups."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from xmrgate.api.deps import ServicesDep
from xmrgate.api.idempotency import run_idempotent
from xmrgate.api.schemas import MAX_AMOUNT, TX_HASH, TransferRequest
from xmrgate.api.security import require
from xmrgate.errors import (
    InvalidInput,
    NotFound,
    WalletError,
    WalletTimeout,
    WalletUnavailable,
)
from xmrgate.services import Services
from xmrgate.store import payouts
from xmrgate.views import rfc3339_seconds

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
async def send_payout(body: TransferRequest, request: Request, services: ServicesDep) -> Any:
    """Send to up to 16 destinations; every payout is journaled before and after."""
    return await run_idempotent(
        request,
        services.idempotency,
        "transfer",
        body.model_dump(),
        lambda: _send(body, request, services),
        moves_money=True,
    )


async def _send(body: TransferRequest, request: Request, services: Services) -> dict[str, Any]:
    destinations = [{"amount": d.amount, "address": d.address} for d in body.destinations]
    if sum(d["amount"] for d in destinations) > MAX_AMOUNT:  # type: ignore[misc]
        raise InvalidInput("the destinations' amounts add up to more than a wallet can hold")
    for i, dest in enumerate(destinations):
        # Ask the wallet before anything is journaled or sent: a typo never reaches transfer.
        if not await services.wallet.is_valid_address(str(dest["address"])):
            raise InvalidInput(
                f"destinations[{i}].address is not a valid address on the wallet's network"
            )
    payout_id = await services.payouts.record_requested(
        destinations,
        requested_by=getattr(request.state, "api_key", None)
        or (request.client.host if request.client else None),
        idempotency_key=request.headers.get("idempotency-key"),
    )
    try:
        result = await services.wallet.transfer_split(
            destinations,
            priority=services.settings.transfer_priority,
            timeout=services.settings.transfer_timeout,
        )
    except WalletTimeout as exc:
        await services.payouts.record_outcome(payout_id, payouts.UNKNOWN, error=exc.message)
        raise WalletTimeout(
            f"the wallet did not answer in time; payout {payout_id} may or may not have been "
            "sent: check the wallet's outgoing transfers before trying again"
        ) from exc
    except WalletUnavailable as exc:
        state = payouts.UNKNOWN if exc.request_sent else payouts.FAILED
        await services.payouts.record_outcome(payout_id, state, error=exc.message)
        raise
    except WalletError as exc:
        await services.payouts.record_outcome(payout_id, payouts.FAILED, error=exc.message)
        raise
    hashes = [str(h) for h in result.get("tx_hash_list", [])]
    amount = sum(int(a) for a in result.get("amount_list", []))
    fee = sum(int(f) for f in result.get("fee_list", []))
    try:
        await services.payouts.record_outcome(payout_id, payouts.SENT, fee=fee, tx_hash_list=hashes)
    except Exception:
        # The money has left: answer the client anyway, and leave the hashes in the log.
        log.exception("payout %d SENT (txs %s) but recording it failed", payout_id, hashes)
    return {
        "amount": amount,
        "fee": fee,
        "tx_hash": hashes[0] if hashes else "",
        "tx_hash_list": hashes,
        "destinations": destinations,
    }


@router.get("/transfer/{tx_hash}", dependencies=[require("read")])
async def get_transaction(tx_hash: str, services: ServicesDep) -> dict[str, Any]:
    """The wallet's view of one transaction."""
    if not TX_HASH.match(tx_hash):
        raise InvalidInput("tx_hash must be 64 hexadecimal characters")
    transfer = await services.wallet.get_transfer_by_txid(tx_hash.lower())
    if transfer is None:
        raise NotFound("the wallet knows no transaction with this hash")
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
    services: ServicesDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> dict[str, Any]:
    """The payout journal, newest first: did this payout go out, and with which txs?"""
    return {"payouts": await services.payouts.recent(limit)}
