"""Payouts: send from the Primary Account, journaled before and after the wallet call.

Every combination of what the wallet did and whether the journal could record it
ends in one of three answers, so that a payout is never sent twice by a retry:

================  ====================  =========================================
wallet            journal               answer (Idempotency-Key)
================  ====================  =========================================
sent              written or failed     the transfer (kept: replayed)
refused           written or failed     the wallet's error (kept: replayed)
never reached     written or failed     WalletUnavailable 503 (released)
not asked yet     not written           WalletUnavailable 503 (released)
timed out / lost  written or failed     PayoutOutcomeUnknown 504 (kept: replayed)
================  ====================  =========================================

"Never reached" is only a refused connection: the request provably did not leave.
"Not asked yet": the wallet failed (even timed out) on a question that moves nothing,
asked before the journal row: whether it can sign, whether an address is valid.
Anything else after the wallet was asked to send (including an unexpected exception) may
have sent money, so it is "outcome unknown" and the journal row says ``unknown``.
Nor does the key store change an answer: if storing it under the Idempotency-Key (or
releasing the key) fails, the client still gets the row's answer and the key stays
claimed, so retries get 409 until it expires (``core/idempotency.py``).

A view-only wallet (no spend key) is refused with WalletCannotSpend (409) before
anything is journaled. Should wallet-rpc still answer a transfer with an unsigned
transaction set (that is what a watch-only wallet does: 200, tx hashes, nothing
signed or sent), the row says ``failed`` and the answer is the same 409; an answer
without any transaction hash is never reported as sent (``unknown``, 504).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xmrgate.core.ports import PayoutJournal, Wallet
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.domain.errors import (
    InvalidInput,
    NotFound,
    PayoutOutcomeUnknown,
    WalletCannotSpend,
    WalletError,
    WalletUnavailable,
)
from xmrgate.domain.money import MAX_AMOUNT

log = logging.getLogger(__name__)

REQUESTED = "requested"
SENT = "sent"
FAILED = "failed"
UNKNOWN = "unknown"


async def _no_wait() -> None:
    return None


@dataclass(frozen=True, slots=True)
class Destination:
    """One recipient of a payout."""

    address: str
    amount: int


@dataclass(frozen=True, slots=True)
class PayoutResult:
    """What the wallet sent."""

    amount: int
    fee: int
    tx_hash_list: list[str]
    destinations: list[Destination]


class Payouts:
    """Sends payouts and reads the payout journal and the wallet's transactions."""

    def __init__(
        self,
        wallet: Wallet,
        journal: PayoutJournal,
        *,
        priority: int,
        timeout: float,
        require_wallet: Callable[[], Awaitable[None]] = _no_wait,
        mode: WalletMode | None = None,
    ) -> None:
        self._require_wallet = require_wallet
        self._mode = mode if mode is not None else WalletMode(wallet)
        self._wallet = wallet
        self._journal = journal
        self._priority = priority
        self._timeout = timeout

    async def check_can_send(self) -> None:
        """Refuse now what ``send`` would refuse before journaling: a wallet not usable
        yet (503) or one that cannot sign (409); used by refunds before they change state."""
        await self._require_wallet()
        await self._mode.require_spendable()

    async def send(
        self,
        destinations: Sequence[Destination],
        *,
        requested_by: str | None,
        idempotency_key: str | None,
    ) -> PayoutResult:
        """Validate, journal, send, journal again; see the module docstring for failures."""
        await self._require_wallet()
        await self._mode.require_spendable()
        if sum(d.amount for d in destinations) > MAX_AMOUNT:
            raise InvalidInput("the destinations' amounts add up to more than a wallet can hold")
        await self._check_addresses(destinations)
        wire = [{"amount": d.amount, "address": d.address} for d in destinations]
        payout_id = await self._journal.record_requested(
            wire, requested_by=requested_by, idempotency_key=idempotency_key
        )
        try:
            result = await self._wallet.transfer_split(
                wire, priority=self._priority, timeout=self._timeout
            )
        except WalletUnavailable as exc:
            if exc.request_sent:
                await self._record(payout_id, UNKNOWN, error=exc.message)
                raise _unknown(payout_id) from exc
            await self._record(payout_id, FAILED, error=exc.message)
            raise
        except WalletError as exc:
            await self._record(payout_id, FAILED, error=exc.message)
            raise
        except Exception as exc:
            await self._record(payout_id, UNKNOWN, error=f"{type(exc).__name__}: {exc}")
            raise _unknown(payout_id) from exc
        hashes = [str(h) for h in result.get("tx_hash_list", [])]
        if result.get("unsigned_txset") or result.get("multisig_txset"):
            # Hashes of transactions nobody signed: reporting them would be a phantom payout.
            if result.get("unsigned_txset"):
                self._mode.note(True)
            await self._record(
                payout_id, FAILED, error="the wallet returned an unsigned transaction set"
            )
            raise WalletCannotSpend(
                "the wallet cannot sign (view-only or multisig): it returned an unsigned "
                "transaction set, so nothing was sent"
            )
        if not hashes:
            await self._record(payout_id, UNKNOWN, error="the wallet answered no tx hash")
            raise _unknown(payout_id, "answered without any transaction hash")
        fee = sum(int(f) for f in result.get("fee_list", []))
        await self._record(payout_id, SENT, fee=fee, tx_hash_list=hashes)
        return PayoutResult(
            amount=sum(int(a) for a in result.get("amount_list", [])),
            fee=fee,
            tx_hash_list=hashes,
            destinations=list(destinations),
        )

    async def _check_addresses(self, destinations: Sequence[Destination]) -> None:
        """Ask the wallet before anything is journaled or sent: a typo never reaches transfer.

        A wallet that does not answer (even a timeout) is a 503 with nothing sent: only
        ``validate_address`` was asked, which moves nothing, so an Idempotency-Key is
        released and the merchant's retry with the same key runs again.
        """
        for i, dest in enumerate(destinations):
            try:
                valid = await self._wallet.is_valid_address(dest.address)
            except WalletUnavailable as exc:
                raise WalletUnavailable(
                    f"cannot check destinations[{i}].address, nothing was sent: {exc.message}",
                    request_sent=False,
                ) from exc
            if not valid:
                raise InvalidInput(
                    f"destinations[{i}].address is not a valid address on the wallet's network"
                )

    async def _record(
        self,
        payout_id: int,
        state: str,
        *,
        fee: int | None = None,
        tx_hash_list: list[str] | None = None,
        error: str | None = None,
    ) -> None:
        """Journal an outcome; a failure here never changes the answer (it is logged)."""
        try:
            await self._journal.record_outcome(
                payout_id, state, fee=fee, tx_hash_list=tx_hash_list, error=error
            )
        except Exception:
            log.exception(
                "payout %d is %s (txs %s) but recording it failed", payout_id, state, tx_hash_list
            )

    async def transaction(self, tx_hash: str) -> dict[str, Any]:
        """The wallet's record of one transaction; NotFound when it knows none."""
        transfer = await self._wallet.get_transfer_by_txid(tx_hash)
        if transfer is None:
            raise NotFound("the wallet knows no transaction with this hash")
        return transfer

    async def journal(self, limit: int) -> list[dict[str, Any]]:
        """The newest payouts first."""
        return await self._journal.recent(limit)


def _unknown(payout_id: int, what: str = "did not answer") -> PayoutOutcomeUnknown:
    return PayoutOutcomeUnknown(
        f"outcome unknown: the wallet was asked to send payout {payout_id} and {what}; "
        "check the wallet's outgoing transfers (GET /payouts) before trying again"
    )
