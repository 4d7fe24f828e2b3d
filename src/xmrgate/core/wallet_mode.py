"""Can the open wallet spend? A view-only wallet (no spend key on the server) cannot.

The mode is detected at start and after every reopen (``WalletChecks``) so that
``/health`` can say ``"wallet": "view-only"`` or ``"full"``, and again right before
every payout: the refusal never relies on a remembered answer, because an operator
may have swapped the wallet file behind a wallet-rpc restart we did not see.
"""

from __future__ import annotations

import logging
from typing import Protocol

from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.errors import WalletCannotSpend, WalletRestricted, WalletUnavailable

log = logging.getLogger(__name__)

VIEW_ONLY_REFUSAL = (
    "the wallet is view-only (no spend key on this server): it cannot send payouts; "
    "send them from the wallet that holds the spend key"
)
RESTRICTED_REFUSAL = (
    "wallet-rpc runs with --restricted-rpc, which refuses refresh, get_transfers and store: "
    "payments could not be seen, so nothing is synced, created or sent; restart "
    "monero-wallet-rpc without --restricted-rpc, bound to 127.0.0.1 (the gateway is its only "
    "client)"
)


class ModeSource(Protocol):
    """The wallet call that tells whether the open wallet holds a spend key."""

    async def is_view_only(self) -> bool:
        """True for a watch-only wallet."""
        ...


class WalletMode:
    """Detects whether the open wallet is view-only and records it in ``identity``."""

    def __init__(self, wallet: ModeSource, identity: WalletIdentity | None = None) -> None:
        self._wallet = wallet
        self._identity = identity if identity is not None else WalletIdentity()

    async def detect(self) -> bool:
        """Ask the wallet now; remember the answer (``/health`` reports it). True: view-only.

        A wallet-rpc with ``--restricted-rpc`` (WalletRestricted) is recorded in the
        identity, which stops sync, new requests and payouts with a message naming the
        flag, and re-raised; the first answer without it clears that.
        """
        try:
            view_only = await self._wallet.is_view_only()
        except WalletRestricted:
            if self._identity.restricted is None:
                log.error("%s", RESTRICTED_REFUSAL)
            self._identity.restricted = RESTRICTED_REFUSAL
            raise
        if self._identity.restricted is not None:
            log.warning("wallet-rpc no longer runs with --restricted-rpc: resuming")
            self._identity.restricted = None
        self.note(view_only)
        return view_only

    def note(self, view_only: bool) -> None:
        """Record what the wallet showed, logging when it changes."""
        if self._identity.view_only != view_only:
            if view_only:
                log.warning("the wallet is view-only: payment requests work, payouts are refused")
            else:
                log.info("the wallet holds its spend key: payouts are possible")
        self._identity.view_only = view_only

    async def require_spendable(self) -> None:
        """Raise WalletCannotSpend for a view-only wallet (asked afresh, not remembered).

        A wallet that does not answer this question is a 503 with nothing sent: no
        transfer was attempted, so an Idempotency-Key is released for a retry.
        """
        try:
            view_only = await self.detect()
        except WalletRestricted as exc:
            raise WalletUnavailable(RESTRICTED_REFUSAL, request_sent=False) from exc
        except WalletUnavailable as exc:
            raise WalletUnavailable(
                f"cannot tell whether the wallet can sign a payout: {exc.message}",
                request_sent=False,
            ) from exc
        if view_only:
            raise WalletCannotSpend(VIEW_ONLY_REFUSAL)
