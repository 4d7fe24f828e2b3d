"""A claimed refund leaving the shop: sent from the wallet, recorded as paid by hand, watched.

``core/refunds.py`` (``Refunds``) makes and claims refunds and hands the rest to one
``RefundSender`` of the same store.

Sending (full wallet) goes through ``Payouts.send`` with ``refund:<id>`` as the journal's
idempotency key, AFTER the refund moved ``claimed -> sending`` in one conditional
statement: a second send, a retry, or a send after a crash finds it ``sending`` (or
``sent``) and is refused (409) without asking the wallet. What the wallet did decides
where it goes next:

================================  ================================================
wallet                            refund
================================  ================================================
sent                              ``sent`` with the tx hashes (``refund.sent``)
refused / never reached           back to ``claimed`` with the error (may be retried)
timed out / lost / unexpected     stays ``sending`` with the error: 504, never re-sent
================================  ================================================

A view-only wallet cannot send (409, as for payouts): the merchant pays by hand and
records it (``record_paid``); wallet-rpc's ``check_tx_key`` must show that transaction
paying the claimed address at least the refund's amount. The watch marks sent refunds
whose transactions are mined as confirmed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Protocol

from xmrgate.core.payouts import Destination, Payouts
from xmrgate.core.refund_ports import RefundRepository
from xmrgate.domain.errors import InvalidInput, PayoutOutcomeUnknown, XmrgateError
from xmrgate.domain.fiat import Price, parse_price
from xmrgate.domain.refunds import Refund, RefundStateConflict, RefundStatus
from xmrgate.domain.wallet_answers import TxKeyCheck

log = logging.getLogger(__name__)

HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
# A tx key is 64 hex characters, or more: a transaction paying a subaddress among other
# outputs has one extra key per output, and get_tx_key answers them all concatenated
# (docs/monero-notes.md, "check_tx_key"). Cut short, the proof silently shows 0.
TX_KEYS = re.compile(r"^(?:[0-9a-fA-F]{64}){1,17}$")


class ProofWallet(Protocol):
    """What the sending side asks of the store's wallet beyond ``Payouts``
    (``adapters/wallet_rpc.py``): proofs of payment and the wallet's own transactions."""

    async def check_tx_key(self, txid: str, tx_key: str, address: str) -> TxKeyCheck:
        """What transaction ``txid`` pays ``address``, proved by its secret tx key."""
        ...

    async def get_transfer_by_txid(self, txid: str) -> dict[str, object] | None:
        """The wallet's record of one of its transactions."""
        ...


class RefundSender:
    """Send, record and watch the refunds of one store (module docstring)."""

    def __init__(
        self,
        repo: RefundRepository,
        payouts: Payouts,
        wallet: ProofWallet,
        *,
        get: Callable[[str], Awaitable[Refund]],
        fiat_amount: Callable[[Price], int],
        confirmations: int,
        wake: Callable[[], None],
        clock: Callable[[], datetime],
    ) -> None:
        """``get`` finds a refund of the store (NotFound otherwise); ``fiat_amount`` prices
        a refund asked in fiat at today's rate; ``wake`` tells the callback worker."""
        self._repo = repo
        self._payouts = payouts
        self._wallet = wallet
        self._get = get
        self._fiat_amount = fiat_amount
        self._confirmations = max(1, confirmations)
        self._wake = wake
        self._clock = clock

    async def send(self, refund_id: str, *, requested_by: str | None) -> Refund:
        """Send a claimed refund from the store's wallet, once (module docstring)."""
        refund = await self._get(refund_id)
        if refund.status is not RefundStatus.CLAIMED:
            raise RefundStateConflict(_not_sendable(refund))
        # View-only or not yet usable: refused before the refund changes state.
        await self._payouts.check_can_send()
        amount = refund.amount if refund.price is None else self._fiat_amount(_price(refund))
        sending = await self._repo.start_sending(
            refund.id, None if amount == refund.amount else amount
        )
        if sending is None:
            raise RefundStateConflict(_not_sendable(await self._get(refund_id)))
        assert sending.claim_address is not None
        try:
            result = await self._payouts.send(
                [Destination(address=sending.claim_address, amount=sending.amount)],
                requested_by=requested_by,
                idempotency_key=f"refund:{sending.id}",
            )
        except PayoutOutcomeUnknown as exc:
            await self._repo.send_unknown(sending.id, exc.message, None)
            raise
        except XmrgateError as exc:
            # Refused by the wallet, never reached it, or refused before it was asked.
            await self._repo.send_failed(sending.id, exc.message)
            raise
        except Exception as exc:
            await self._repo.send_unknown(sending.id, f"{type(exc).__name__}: {exc}", None)
            raise PayoutOutcomeUnknown(
                f"outcome unknown: refund {sending.id} may have been sent; check the "
                "wallet's outgoing transfers (GET /payouts) before doing anything"
            ) from exc
        sent = await self._repo.mark_sent(
            sending.id,
            tx_hash_list=result.tx_hash_list,
            fee=result.fee,
            tx_key=None,
            payout_id=None,
            manual=False,
            now=self._clock(),
        )
        self._wake()
        return sent if sent is not None else await self._get(refund_id)

    async def record_paid(self, refund_id: str, tx_hash: str, tx_key: str) -> Refund:
        """A refund paid by hand: ``check_tx_key`` must show it paying the claimed address
        at least the refund's amount, else 400 saying what it paid."""
        if not HEX64.match(tx_hash):
            raise InvalidInput("tx_hash must be 64 hexadecimal characters")
        if not TX_KEYS.match(tx_key):
            raise InvalidInput(
                "tx_key must be the transaction's secret key as the wallet gives it: 64 "
                "hexadecimal characters per key (get_tx_key)"
            )
        refund = await self._get(refund_id)
        # A refund stuck in ``sending`` (outcome unknown) is settled this way too, once
        # the operator found its transaction in the wallet.
        if refund.status not in (RefundStatus.CLAIMED, RefundStatus.SENDING):
            raise RefundStateConflict(
                f"refund {refund.id} is {refund.status.value}: only a claimed refund (or "
                "one whose send had an unknown outcome) can be recorded as paid"
            )
        assert refund.claim_address is not None
        check = await self._wallet.check_tx_key(
            tx_hash.lower(), tx_key.lower(), refund.claim_address
        )
        if check.received < refund.amount:
            raise InvalidInput(
                f"this transaction pays the claimed address {check.received} piconero, "
                f"less than the refund's {refund.amount}"
            )
        sent = await self._repo.mark_sent(
            refund.id,
            tx_hash_list=[tx_hash.lower()],
            fee=None,
            tx_key=tx_key.lower(),
            payout_id=None,
            manual=True,
            now=self._clock(),
        )
        if sent is None:
            raise RefundStateConflict(_not_sendable(await self._get(refund_id)))
        self._wake()
        return sent

    async def watch(self) -> int:
        """Expire overdue links; mark sent refunds whose transaction is mined as confirmed.

        Returns how many refunds changed. A wallet that does not answer is left for the
        next round (logged at debug: the wallet's own checks report it).
        """
        changed = await self._repo.expire_due(self._clock())
        for refund in await self._repo.awaiting_confirmation():
            try:
                mined = await self._confirmations_of(refund)
            except XmrgateError as exc:
                log.debug("refund %s: cannot read its confirmations: %s", refund.id, exc)
                continue
            if mined < self._confirmations:
                continue
            if await self._repo.mark_confirmed(refund.id, self._clock()) is not None:
                changed += 1
                self._wake()
        return changed

    async def _confirmations_of(self, refund: Refund) -> int:
        if not refund.tx_hash_list:
            return 0
        if refund.manual:
            assert refund.tx_key is not None and refund.claim_address is not None
            check = await self._wallet.check_tx_key(
                refund.tx_hash_list[0], refund.tx_key, refund.claim_address
            )
            return 0 if check.in_pool else check.confirmations
        least: int | None = None
        for tx_hash in refund.tx_hash_list:
            transfer = await self._wallet.get_transfer_by_txid(tx_hash)
            if transfer is None or str(transfer.get("type")) in ("pool", "pending", "failed"):
                return 0
            confirmations = int(str(transfer.get("confirmations", 0)))
            least = confirmations if least is None else min(least, confirmations)
        return least or 0


def _price(refund: Refund) -> Price:
    assert refund.price is not None
    return parse_price(refund.price["amount"], refund.price["currency"])


def _not_sendable(refund: Refund) -> str:
    """Why ``refund`` cannot be sent (or recorded) now: the 409's message."""
    if refund.status is RefundStatus.SENDING:
        return (
            f"refund {refund.id} is being sent or its outcome is unknown"
            + (f" ({refund.error})" if refund.error else "")
            + ": check the wallet's outgoing transfers (GET /payouts); it is never sent twice"
        )
    return f"refund {refund.id} is {refund.status.value}: only a claimed refund can be sent"
