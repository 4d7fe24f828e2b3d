"""Refunds: made by the merchant, claimed by the customer with a link, sent or recorded.

One ``Refunds`` serves one store (its repository, its wallet account or own wallet, its
payout journal). The money rule lives in the repository (``core/refund_ports.py``): a
refund reserves part of what its request received, in one conditional statement, so two
racing refunds never give back more than came in.

This module makes, lists, claims and cancels refunds; what happens once one is claimed
(the one send through ``Payouts.send``, the record of one paid by hand, the watch that
confirms mined refunds) is ``core/refund_sending.py``'s ``RefundSender``, to which
``Refunds.send``, ``record_paid`` and ``watch`` delegate.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from xmrgate.core.payouts import Payouts
from xmrgate.core.refund_ports import RefundRepository
from xmrgate.core.refund_sending import ProofWallet, RefundSender
from xmrgate.domain.errors import InvalidInput, NotFound, WalletUnavailable, XmrgateError
from xmrgate.domain.fiat import Price
from xmrgate.domain.refund_address import check_refund_address, network_of
from xmrgate.domain.refunds import (
    DEFAULT_LIFE,
    MAX_LIFE,
    MAX_REASON,
    NewRefund,
    Refund,
    RefundGone,
    RefundStateConflict,
    RefundStatus,
    looks_like_token,
    new_claim_token,
    new_refund_id,
    token_digest,
    token_matches,
)

log = logging.getLogger(__name__)


class RefundWallet(ProofWallet, Protocol):
    """What refunds ask of the store's wallet beyond sending (``adapters/wallet_rpc.py``):
    the claimed address's network, and the proofs of ``ProofWallet``."""

    async def address_network(self, address: str) -> str | None:
        """The network of a valid address (checksum included); None when invalid."""
        ...


class RefundPricing(Protocol):
    """Converts a fiat amount at today's rate (``core/rates.py`` RateBook)."""

    def quote(self, price: Price) -> tuple[int, object]:
        """``price`` in piconero and the quote; RatesUnavailable when no fresh rate."""
        ...


@dataclass(frozen=True, slots=True)
class RefundAsk:
    """What the merchant asks at ``POST /receive/:address/refunds``."""

    address: str
    amount: int | None = None
    price: Price | None = None
    reason: str = ""
    expires_in: int | None = None
    # An unmatched receipt's id (``POST /unmatched/{id}/refunds``): ``address`` unused.
    receipt: int | None = None


@dataclass(frozen=True, slots=True)
class MadeRefund:
    """A new refund and its claim token (shown once, never stored)."""

    refund: Refund
    token: str


def _now() -> datetime:
    return datetime.now(UTC)


class Refunds:
    """The refund use cases of one store."""

    def __init__(
        self,
        repo: RefundRepository,
        payouts: Payouts,
        wallet: RefundWallet,
        *,
        pricing: RefundPricing | None = None,
        auto_send: bool = False,
        confirmations: int = 1,
        wake_callbacks: Callable[[], None] = lambda: None,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._repo = repo
        self._wallet = wallet
        self._pricing = pricing
        self._auto_send = auto_send
        self._wake = wake_callbacks
        self._clock = clock
        # Auto-sends under way (strong references: a bare task may be collected).
        self._sending: set[asyncio.Task[None]] = set()
        # What happens once a refund is claimed: its send, its record, the watch.
        self._sender = RefundSender(
            repo,
            payouts,
            wallet,
            get=self.get,
            fiat_amount=self._fiat_amount,
            confirmations=confirmations,
            wake=wake_callbacks,
            clock=clock,
        )

    async def create(self, ask: RefundAsk) -> MadeRefund:
        """Reserve the money and make the refund; its claim token is in the answer only."""
        if ask.amount is not None and ask.price is not None:
            raise InvalidInput("give amount or price, not both")
        if len(ask.reason) > MAX_REASON:
            raise InvalidInput(f"reason is at most {MAX_REASON} characters")
        life = DEFAULT_LIFE if ask.expires_in is None else ask.expires_in
        if not 60 <= life <= MAX_LIFE:
            raise InvalidInput(f"expires_in must be between 60 and {MAX_LIFE} seconds")
        # Links that lapsed give their money back first: "refund the rest" right after a
        # link expired must count it free (the watcher may not have run yet).
        await self._repo.expire_due(self._clock())
        if ask.receipt is None:
            found = await self._repo.refundable(ask.address)
        else:
            found = await self._repo.refundable_receipt(ask.receipt)
        what = "payment request with this address" if ask.receipt is None else "such receipt"
        if found is None:
            raise NotFound(f"no {what}")
        source_id, received, refunded = found
        price_json: dict[str, str] | None = None
        if ask.price is not None:
            amount = self._fiat_amount(ask.price)
            price_json = {"amount": str(ask.price.amount), "currency": ask.price.currency}
        elif ask.amount is not None:
            amount = ask.amount
        else:
            amount = received - refunded
        if amount <= 0:
            if ask.amount is None and ask.price is None:
                raise RefundStateConflict(
                    f"nothing to refund: it received {received} piconero in mined "
                    f"transactions and {refunded} is already refunded"
                )
            raise InvalidInput("amount must be a positive number of piconero")
        now = self._clock()
        token = new_claim_token()
        refund = await self._repo.create(
            NewRefund(
                id=new_refund_id(),
                request_id=source_id if ask.receipt is None else None,
                receipt_id=ask.receipt,
                amount=amount,
                reason=ask.reason,
                token_digest=token_digest(token),
                created_at=now,
                expires_at=now + timedelta(seconds=life),
                price=price_json,
            ),
            now,
        )
        return MadeRefund(refund=refund, token=token)

    def _fiat_amount(self, price: Price) -> int:
        if self._pricing is None:
            raise InvalidInput(
                "prices in fiat are turned off on this gateway (--rate-currencies is empty)"
            )
        amount, _quote = self._pricing.quote(price)
        return amount

    async def get(self, refund_id: str) -> Refund:
        """One refund of this store; NotFound for an unknown one or another store's."""
        refund = await self._repo.get(refund_id)
        if refund is None:
            raise NotFound("no refund with this id")
        return refund

    async def listing(self, status: RefundStatus | None, limit: int) -> list[Refund]:
        """This store's refunds, those waiting for approval first."""
        return await self._repo.listing(status, limit)

    async def of_receipt(self, receipt_id: int) -> list[Refund]:
        """The refunds of one of this store's unmatched receipts."""
        if await self._repo.refundable_receipt(receipt_id) is None:
            raise NotFound("no such receipt")
        return await self._repo.for_receipt(receipt_id)

    async def of_request(self, address: str) -> list[Refund]:
        """The refunds of one of this store's requests."""
        found = await self._repo.refundable(address)
        if found is None:
            raise NotFound("no payment request with this address")
        return await self._repo.for_request(found[0])

    async def find_claim(self, token: str) -> Refund:
        """The refund a claim link names (any store); NotFound when none does."""
        if not looks_like_token(token):
            raise NotFound("this refund link is not valid")
        refund = await self._repo.by_token(token_digest(token))
        # Found by its digest's index; compared again with the stored digest in constant
        # time, so no answer depends on how much of a guess matched.
        if refund is None or not token_matches(token, refund.token_digest):
            raise NotFound("this refund link is not valid")
        return refund

    async def claim(self, refund_id: str, address_text: str) -> Refund:
        """The customer names the address: checked locally, then by the wallet."""
        refund = await self.get(refund_id)
        self._claimable(refund)
        network = network_of(refund.request_address)
        checked = check_refund_address(address_text, network)
        try:
            wallet_network = await self._wallet.address_network(checked.address)
        except WalletUnavailable as exc:
            # Only validate_address was asked: nothing moves, whatever reached the wallet.
            raise WalletUnavailable(
                "the shop's wallet cannot check the address right now; try again in a minute",
                request_sent=exc.request_sent,
            ) from exc
        if wallet_network is None:
            raise InvalidInput(
                "this is not a valid Monero address (its checksum does not match: a typo?)"
            )
        if wallet_network != network:
            raise InvalidInput(
                f"this is a {wallet_network} address; this shop takes {network} addresses"
            )
        claimed = await self._repo.claim(refund.id, checked.address, self._clock())
        if claimed is None:
            self._claimable(await self.get(refund_id))
            raise RefundStateConflict("this refund was claimed already")
        self._wake()
        if self._auto_send:
            # Sent in the background: the customer's page answers at once, whatever the
            # wallet takes (a proxy timing out would show an error for a claim that held).
            task = asyncio.create_task(self._auto_send_now(claimed.id))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)
        return claimed

    async def _auto_send_now(self, refund_id: str) -> None:
        try:
            await self.send(refund_id, requested_by="auto-send")
        except XmrgateError as exc:
            # The claim stands; the merchant sees the error and may send it by hand.
            log.warning("auto-send of refund %s failed: %s", refund_id, exc.message)
        except Exception:
            log.exception("auto-send of refund %s failed", refund_id)

    async def settled(self) -> None:
        """Wait for the auto-sends under way (tests; a clean stop)."""
        while self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)

    def _claimable(self, refund: Refund) -> None:
        status = refund.shown_status(self._clock())
        if status is RefundStatus.OPEN:
            return
        if status is RefundStatus.EXPIRED:
            raise RefundGone("this refund link has expired; ask the shop for a new one")
        if status is RefundStatus.CANCELLED:
            raise RefundGone("this refund was withdrawn by the shop")
        raise RefundStateConflict("this refund was claimed already")

    async def send(self, refund_id: str, *, requested_by: str | None) -> Refund:
        """Send a claimed refund from the store's wallet, once (``core/refund_sending.py``)."""
        return await self._sender.send(refund_id, requested_by=requested_by)

    async def record_paid(self, refund_id: str, tx_hash: str, tx_key: str) -> Refund:
        """A refund paid by hand: ``check_tx_key`` must show it paying the claimed address
        at least the refund's amount, else 400 saying what it paid."""
        return await self._sender.record_paid(refund_id, tx_hash, tx_key)

    async def cancel(self, refund_id: str) -> Refund:
        """Withdraw an open or claimed refund; its money is free again."""
        refund = await self.get(refund_id)
        if refund.expired_at(self._clock()):
            raise RefundGone(f"refund {refund.id} expired; its money is free again")
        cancelled = await self._repo.cancel(refund.id, self._clock())
        if cancelled is None:
            current = await self.get(refund_id)
            raise RefundStateConflict(
                f"refund {current.id} is {current.status.value}: only an open or claimed "
                "refund can be cancelled"
            )
        return cancelled

    async def watch(self) -> int:
        """Expire overdue links; mark sent refunds whose transaction is mined as confirmed.

        Returns how many refunds changed. A wallet that does not answer is left for the
        next round (logged at debug: the wallet's own checks report it).
        """
        return await self._sender.watch()
