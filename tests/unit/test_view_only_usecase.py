"""View-only wallets with fakes: payouts refused before anything is journaled, the phantom
payout (an unsigned set with tx hashes) never reported as sent, the mode detected at
start and after a reopen, and /health naming it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.unit.fakes import (
    FakeIdempotencyStore,
    FakeIdentityStore,
    FakeJournal,
    FakeModeWallet,
    FakePoolStore,
    FakeWallet,
)
from xmrgate.core.idempotency import Idempotency
from xmrgate.core.payouts import Destination, Payouts
from xmrgate.core.wallet_checks import WalletChecks
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import WalletIdentity, WalletStatus
from xmrgate.domain.errors import (
    PayoutOutcomeUnknown,
    WalletCannotSpend,
    WalletTimeout,
    WalletUnavailable,
)
from xmrgate.web.api.errors import error_answer

DEST = [Destination(address="9" + "a" * 94, amount=1000)]


def _send(payouts: Payouts) -> Any:
    return asyncio.run(payouts.send(DEST, requested_by="test", idempotency_key=None))


def test_view_only_wallet_is_refused_with_409_before_anything_is_journaled() -> None:
    wallet, journal, identity = FakeWallet(view_only=True), FakeJournal(), WalletIdentity()
    payouts = Payouts(wallet, journal, priority=0, timeout=5, mode=WalletMode(wallet, identity))
    with pytest.raises(WalletCannotSpend) as refused:
        _send(payouts)
    status, body = error_answer(refused.value)
    assert status == 409 and body["status"] == 409 and "view-only" in body["message"]
    assert wallet.sent == [] and journal.rows == {}
    assert identity.view_only is True


def test_full_wallet_pays() -> None:
    wallet, journal = FakeWallet(), FakeJournal()
    result = _send(Payouts(wallet, journal, priority=0, timeout=5))
    assert result.tx_hash_list and journal.rows[1]["state"] == "sent"
    assert wallet.mode_checks == 1  # asked afresh for this payout


def test_unsigned_set_is_never_reported_as_sent() -> None:
    """Defence in depth: the mode check missed it, wallet-rpc answers with hashes AND an
    unsigned set (what a watch-only wallet does): no success, the row says failed."""

    class Forgetful(FakeWallet):
        async def is_view_only(self) -> bool:
            return False  # e.g. the wallet file was swapped after the check

    wallet, journal, identity = Forgetful(view_only=True), FakeJournal(), WalletIdentity()
    payouts = Payouts(wallet, journal, priority=0, timeout=5, mode=WalletMode(wallet, identity))
    with pytest.raises(WalletCannotSpend) as refused:
        _send(payouts)
    assert "nothing was sent" in refused.value.message
    assert len(wallet.sent) == 1 and journal.rows[1]["state"] == "failed"
    assert journal.rows[1]["tx_hash_list"] is None
    assert identity.view_only is True  # /health learns it too


def test_an_answer_without_tx_hashes_is_outcome_unknown() -> None:
    class NoHashes(FakeWallet):
        async def transfer_split(
            self, destinations: list[dict[str, Any]], *, priority: int, timeout: float
        ) -> dict[str, Any]:
            self.sent.append(destinations)
            return {"tx_hash_list": [], "amount_list": [], "fee_list": []}

    wallet, journal = NoHashes(), FakeJournal()
    with pytest.raises(PayoutOutcomeUnknown) as unknown:
        _send(Payouts(wallet, journal, priority=0, timeout=5))
    assert "without any transaction hash" in unknown.value.message
    assert journal.rows[1]["state"] == "unknown"


def test_a_wallet_that_cannot_say_its_mode_is_503_and_nothing_is_sent() -> None:
    wallet, journal = FakeWallet(mode_error=WalletTimeout("hung")), FakeJournal()
    with pytest.raises(WalletUnavailable) as failed:
        _send(Payouts(wallet, journal, priority=0, timeout=5))
    assert type(failed.value) is WalletUnavailable and not failed.value.request_sent
    assert error_answer(failed.value)[0] == 503
    assert wallet.sent == [] and journal.rows == {}


def test_refusal_releases_the_idempotency_key() -> None:
    """Nothing was signed: once the spend key is back, the same key sends."""
    wallet, journal, store = FakeWallet(view_only=True), FakeJournal(), FakeIdempotencyStore()
    payouts, idem = Payouts(wallet, journal, priority=0, timeout=5), Idempotency(store)

    async def pay() -> Any:
        async def send(_ref: str | None) -> dict[str, Any]:
            result = await payouts.send(DEST, requested_by=None, idempotency_key="k1")
            return {"tx_hash_list": result.tx_hash_list}

        return await idem.run(
            endpoint="transfer",
            caller=None,
            key="k1",
            body={"n": 1},
            handler=send,
            error_answer=error_answer,
            moves_money=True,
        )

    with pytest.raises(WalletCannotSpend):
        asyncio.run(pay())
    assert store.keys == {}
    wallet.view_only = False
    assert asyncio.run(pay())["tx_hash_list"] and len(wallet.sent) == 1


def test_mode_is_detected_at_start_and_after_a_reopen() -> None:
    wallet, identity = FakeModeWallet(), WalletIdentity()

    async def rewind() -> None:
        return None

    checks = WalletChecks(
        wallet,
        FakeIdentityStore(),
        identity,
        FakePoolStore(),
        rewind,
        mode=WalletMode(wallet, identity),
    )
    assert asyncio.run(checks.before_tick()) and identity.view_only is False
    # The operator swaps in a view-only file of the same address; wallet-rpc restarts.
    wallet.view_only = True
    assert asyncio.run(checks.before_tick()) and identity.view_only is False
    assert wallet.mode_checks == 1  # not asked on every tick
    wallet.reopens += 1
    assert asyncio.run(checks.before_tick()) and identity.view_only is True
    assert wallet.mode_checks == 2


@pytest.mark.parametrize(("view_only", "shown"), [(True, "view-only"), (False, "full")])
def test_health_names_the_mode(view_only: bool, shown: str) -> None:
    wallet, identity = FakeWallet(view_only=view_only), WalletIdentity(primary_address="4A")
    identity.ready.set()

    async def ping() -> bool:
        return True

    status = WalletStatus(wallet, wallet, ping, "sqlite", identity)
    assert asyncio.run(status.health()).wallet_mode is None  # not detected yet: not claimed
    asyncio.run(WalletMode(wallet, identity).detect())
    status = WalletStatus(wallet, wallet, ping, "sqlite", identity)
    report = asyncio.run(status.health())
    assert report.status == 200 and report.wallet_mode == shown
