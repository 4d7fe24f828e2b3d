"""Two ways the open wallet cannot be trusted with new subaddresses, with fakes:

- wallet-rpc behind ``--restricted-rpc``: it hands out subaddresses but refuses
  ``refresh``/``get_transfers``/``store``, so a request made on it would never see its
  payment. Detected at start, after a reopen, and after a tick refused as restricted;
  nothing is synced, created or sent, and ``/health`` says why.
- another wallet opened behind our back: the address pool never offers its subaddresses.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.unit.fakes import (
    FakeIdentityStore,
    FakeJournal,
    FakeModeWallet,
    FakePoolStore,
    FakePoolWallet,
    FakeWallet,
)
from xmrgate.core.address_pool import AddressPool
from xmrgate.core.payouts import Destination, Payouts
from xmrgate.core.wallet_checks import WalletChecks
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import WalletIdentity, WalletStatus
from xmrgate.domain.errors import WalletError, WalletRestricted, WalletUnavailable


async def _rewind() -> None:
    return None


def _checks(wallet: FakeModeWallet, identity: WalletIdentity) -> WalletChecks:
    return WalletChecks(
        wallet,
        FakeIdentityStore(),
        identity,
        FakePoolStore(),
        _rewind,
        mode=WalletMode(wallet, identity),
    )


def _health(identity: WalletIdentity) -> tuple[int, str | None, str | None]:
    async def ping() -> bool:
        return True

    wallet = FakeWallet()
    report = asyncio.run(WalletStatus(wallet, wallet, ping, "sqlite", identity).health())
    return report.status, report.message, report.wallet_mode


def test_restricted_wallet_rpc_stops_ticks_and_says_so_until_the_flag_is_gone() -> None:
    wallet, identity = FakeModeWallet(restricted=True), WalletIdentity()
    identity.ready.set()
    checks = _checks(wallet, identity)
    assert asyncio.run(checks.before_tick()) is False
    assert wallet.calls == [], "the lookahead ran against a wallet that cannot store"
    with pytest.raises(WalletUnavailable, match="--restricted-rpc") as refused:
        asyncio.run(identity.require_usable())
    assert refused.value.request_sent is False
    status, message, mode = _health(identity)
    assert (status, mode) == (503, "restricted") and "--restricted-rpc" in (message or "")
    # Asked again on every tick (no reopen needed): the operator restarts it without the flag.
    assert asyncio.run(checks.before_tick()) is False
    wallet.restricted = False
    assert asyncio.run(checks.before_tick()) is True
    assert identity.restricted is None and identity.mode == "full"
    assert wallet.mode_checks == 3
    asyncio.run(identity.require_usable())
    assert _health(identity)[0] == 200


def test_a_tick_refused_as_restricted_makes_the_next_tick_ask_again() -> None:
    """wallet-rpc restarted with --restricted-rpc and --wallet-file: no reopen is seen."""
    wallet, identity = FakeModeWallet(), WalletIdentity()
    checks = _checks(wallet, identity)
    assert asyncio.run(checks.before_tick()) is True
    assert asyncio.run(checks.before_tick()) is True
    assert wallet.mode_checks == 1, "the mode is not asked on every tick"
    checks.tick_failed(WalletError("some other failure", code=-1))
    assert asyncio.run(checks.before_tick()) is True and wallet.mode_checks == 1
    wallet.restricted = True
    checks.tick_failed(WalletRestricted("wallet-rpc refused refresh", code=-7))
    assert asyncio.run(checks.before_tick()) is False
    assert identity.mode == "restricted" and wallet.mode_checks == 2


def test_payout_on_restricted_wallet_rpc_is_503_with_nothing_sent() -> None:
    wallet = FakeWallet(mode_error=WalletRestricted("wallet-rpc refused sign_transfer", code=-7))
    journal, identity = FakeJournal(), WalletIdentity()
    payouts = Payouts(wallet, journal, priority=0, timeout=5, mode=WalletMode(wallet, identity))
    dest = [Destination(address="9" + "a" * 94, amount=1000)]
    with pytest.raises(WalletUnavailable, match="--restricted-rpc") as refused:
        asyncio.run(payouts.send(dest, requested_by=None, idempotency_key=None))
    assert type(refused.value) is WalletUnavailable and refused.value.request_sent is False
    assert wallet.sent == [] and journal.rows == {} and identity.mode == "restricted"


def test_pool_creates_nothing_while_the_wallet_is_not_ours() -> None:
    wallet, store = FakePoolWallet(), FakePoolStore()
    ours = [False]

    async def wallet_ok() -> bool:
        return ours[0]

    pool = AddressPool(wallet, store, size=10, low_water=2, wallet_ok=wallet_ok)
    assert asyncio.run(pool.refill()) == 0
    assert wallet.calls == [] and store.pool == {}
    ours[0] = True
    assert asyncio.run(pool.refill()) == 10 and len(store.pool) == 10


def test_pool_drops_a_batch_when_the_wallet_was_swapped_during_it() -> None:
    wallet, store = FakePoolWallet(), FakePoolStore()
    answers = iter([True, False])  # ours before the batch, another wallet after it

    async def wallet_ok() -> bool:
        return next(answers)

    pool = AddressPool(wallet, store, size=10, low_water=2, wallet_ok=wallet_ok)
    assert asyncio.run(pool.refill()) == 0
    assert wallet.calls == [10] and store.pool == {}, "another wallet's subaddresses pooled"


def test_pool_refuses_another_wallets_subaddresses_through_the_real_identity_check() -> None:
    """Wired as in the container: ``WalletChecks.wallet_is_ours`` compares the primary
    address with the one the database belongs to."""
    wallet, identity = FakeModeWallet(primary="4Other"), WalletIdentity()
    checks = WalletChecks(
        wallet,
        FakeIdentityStore("4Ours"),
        identity,
        FakePoolStore(),
        _rewind,
        WalletMode(wallet, identity),
    )
    store = FakePoolStore()
    pool = AddressPool(wallet, store, size=5, low_water=1, wallet_ok=checks.wallet_is_ours)
    assert asyncio.run(pool.refill()) == 0 and store.pool == {} and wallet.calls == []
    assert identity.mismatch is not None and "4Other" in identity.mismatch
    wallet.primary = "4Ours"
    assert asyncio.run(pool.refill()) == 5 and identity.mismatch is None


def test_the_recorded_wallet_is_read_once_and_a_swap_is_still_caught_every_tick() -> None:
    """The database's wallet is asked for once (the row is never rewritten), not on every
    tick and pool batch; the open wallet is asked every time, so a swap is still seen."""
    wallet, identity, store = FakeModeWallet(primary="4Ours"), WalletIdentity(), FakeIdentityStore()
    checks = WalletChecks(
        wallet, store, identity, FakePoolStore(), _rewind, mode=WalletMode(wallet, identity)
    )
    for _ in range(3):
        assert asyncio.run(checks.before_tick()) is True
        assert asyncio.run(checks.wallet_is_ours()) is True
    assert (store.address, store.reads) == ("4Ours", 1)
    wallet.primary = "4Other"
    assert asyncio.run(checks.before_tick()) is False
    assert asyncio.run(checks.wallet_is_ours()) is False
    assert identity.mismatch is not None and "4Other" in identity.mismatch
    assert store.reads == 1


def test_a_table_lost_without_a_reopen_seen_here_is_extended_at_the_next_tick() -> None:
    """Another worker process reopened a restarted wallet-rpc (or it opened a restored
    wallet by itself with --wallet-file): this process saw no reopen, yet the table no
    longer reaches our highest index; the next tick extends it and rewinds the sync."""
    wallet, identity, pool = FakeModeWallet(), WalletIdentity(), FakePoolStore()
    pool.pool[260] = "handed out before the restore"
    rewound: list[bool] = []

    async def rewind() -> None:
        rewound.append(True)

    checks = WalletChecks(
        wallet, FakeIdentityStore(), identity, pool, rewind, mode=WalletMode(wallet, identity)
    )
    assert asyncio.run(checks.before_tick()) is True
    assert rewound == [True] and wallet.rescans == 1
    wallet.table_size = 1  # restored from keys behind our back; wallet.reopens unchanged
    assert asyncio.run(checks.before_tick()) is True
    assert rewound == [True, True] and wallet.rescans == 2
    assert asyncio.run(wallet.has_subaddress(260))
