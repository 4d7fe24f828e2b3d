"""Payouts with fakes: every wallet outcome x journal outcome, and the key's fate.

The rule under test: once the wallet may have been asked to send, no retry with
the same Idempotency-Key can send again (the answer is replayed), and the journal
says what happened when it can be written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.fakes import FakeIdempotencyStore, FakeJournal, FakeWallet
from xmrgate.core.idempotency import Idempotency, Replay
from xmrgate.core.payouts import Destination, Payouts
from xmrgate.domain.errors import (
    Conflict,
    DatabaseUnavailable,
    InvalidInput,
    PayoutOutcomeUnknown,
    WalletError,
    WalletRejected,
    WalletTimeout,
    WalletUnavailable,
    XmrgateError,
)
from xmrgate.web.api.errors import error_answer

DEST = [Destination(address="9" + "a" * 94, amount=1000)]

# name -> (error the wallet raises or None for "sent", expected answer, key kept?, journal state)
WALLET_OUTCOMES: dict[str, tuple[Callable[[], BaseException] | None, type | None, bool, str]] = {
    "sent": (None, None, True, "sent"),
    "refused": (
        lambda: WalletRejected("not enough money", code=-4),
        WalletRejected,
        True,
        "failed",
    ),
    "wallet error": (lambda: WalletError("internal", code=-1), WalletError, True, "failed"),
    "timed out": (lambda: WalletTimeout("no answer"), PayoutOutcomeUnknown, True, "unknown"),
    "connection lost": (
        lambda: WalletUnavailable("connection reset", request_sent=True),
        PayoutOutcomeUnknown,
        True,
        "unknown",
    ),
    "connection refused": (
        lambda: WalletUnavailable("refused", request_sent=False),
        WalletUnavailable,
        False,
        "failed",
    ),
    "unexpected crash": (lambda: RuntimeError("boom"), PayoutOutcomeUnknown, True, "unknown"),
}

# The HTTP status each wallet outcome answers, whatever happens to the key store afterwards.
ANSWER_STATUS = {
    "sent": 200,
    "refused": 400,
    "wallet error": 502,
    "timed out": 504,
    "connection lost": 504,
    "connection refused": 503,
    "unexpected crash": 504,
}


def _setup(error: BaseException | None, journal_fails: bool) -> tuple[Any, ...]:
    wallet = FakeWallet(transfer_error=error)
    journal = FakeJournal(fail_outcome=journal_fails)
    store = FakeIdempotencyStore()
    payouts = Payouts(wallet, journal, priority=0, timeout=5)
    return wallet, journal, store, payouts, Idempotency(store)


async def _pay(payouts: Payouts, idem: Idempotency, key: str, caller: str | None = None) -> Any:
    async def send(_ref: str | None) -> dict[str, Any]:
        result = await payouts.send(DEST, requested_by=caller, idempotency_key=key)
        return {"tx_hash_list": result.tx_hash_list, "amount": result.amount}

    return await idem.run(
        endpoint="transfer",
        caller=caller,
        key=key,
        body={"destinations": [{"address": DEST[0].address, "amount": DEST[0].amount}]},
        handler=send,
        error_answer=error_answer,
        moves_money=True,
    )


@pytest.mark.parametrize("journal_fails", [False, True], ids=["journal written", "journal failed"])
@pytest.mark.parametrize("outcome", list(WALLET_OUTCOMES))
def test_every_wallet_and_journal_outcome(outcome: str, journal_fails: bool) -> None:
    make_error, expected, key_kept, journal_state = WALLET_OUTCOMES[outcome]
    wallet, journal, _store, payouts, idem = _setup(
        make_error() if make_error else None, journal_fails
    )

    async def scenario() -> None:
        if expected is None:
            first = await _pay(payouts, idem, "k1")
            assert first["tx_hash_list"] == [f"{1:064x}"]
        else:
            with pytest.raises(expected) as raised:
                await _pay(payouts, idem, "k1")
            assert type(raised.value) is expected
        assert len(wallet.sent) == 1
        # The journal says what happened, when it could be written.
        assert journal.rows[1]["state"] == ("requested" if journal_fails else journal_state), (
            journal.rows
        )
        # The retry with the same key: replayed (never sent again) or run again.
        wallet.transfer_error = None
        retry = await _pay(payouts, idem, "k1")
        if key_kept:
            assert isinstance(retry, Replay), retry
            assert len(wallet.sent) == 1, "a retry sent the payout a second time"
            if expected is not None:
                status, body = error_answer(raised.value)
                assert (retry.status, retry.body) == (status, body)
        else:
            assert not isinstance(retry, Replay)
            assert len(wallet.sent) == 2

    asyncio.run(scenario())


def test_outcome_unknown_is_504_and_names_the_payout() -> None:
    _, _, _, payouts, idem = _setup(WalletTimeout("no answer"), journal_fails=True)
    with pytest.raises(PayoutOutcomeUnknown) as raised:
        asyncio.run(_pay(payouts, idem, "k"))
    status, body = error_answer(raised.value)
    assert status == 504
    assert "payout 1" in body["message"] and "outcome unknown" in body["message"]


def test_journal_down_before_the_wallet_releases_the_key() -> None:
    wallet, journal, store, payouts, idem = _setup(None, journal_fails=False)
    journal.fail_requested = True
    with pytest.raises(DatabaseUnavailable):
        asyncio.run(_pay(payouts, idem, "k"))
    assert wallet.sent == [] and store.keys == {}
    journal.fail_requested = False
    assert asyncio.run(_pay(payouts, idem, "k"))["tx_hash_list"]
    assert len(wallet.sent) == 1


def test_invalid_address_never_reaches_journal_or_wallet() -> None:
    wallet, journal, _, payouts, idem = _setup(None, journal_fails=False)
    wallet.invalid_addresses.add(DEST[0].address)
    with pytest.raises(InvalidInput, match=r"destinations\[0\]\.address"):
        asyncio.run(_pay(payouts, idem, "k"))
    assert wallet.sent == [] and journal.rows == {}


@pytest.mark.parametrize(
    "failure",
    [WalletTimeout("no answer"), WalletUnavailable("reset", request_sent=True)],
    ids=["timed out", "connection lost"],
)
def test_wallet_failing_on_address_check_releases_the_key(failure: WalletUnavailable) -> None:
    """validate_address moves nothing: its timeout is a 503 with nothing journaled or sent,
    and the merchant's retry with the same key runs (it is not stuck on a 504)."""
    wallet, journal, store, payouts, idem = _setup(None, journal_fails=False)
    wallet.validate_error = failure
    with pytest.raises(WalletUnavailable) as raised:
        asyncio.run(_pay(payouts, idem, "k"))
    assert not isinstance(raised.value, WalletTimeout)
    assert error_answer(raised.value)[0] == 503
    assert "nothing was sent" in raised.value.message
    assert wallet.sent == [] and journal.rows == {} and store.keys == {}
    wallet.validate_error = None
    assert asyncio.run(_pay(payouts, idem, "k"))["tx_hash_list"]
    assert len(wallet.sent) == 1


def test_same_key_from_two_api_keys_is_two_requests() -> None:
    wallet, _, store, payouts, idem = _setup(None, journal_fails=False)
    first = asyncio.run(_pay(payouts, idem, "order-1", caller="shop-a"))
    second = asyncio.run(_pay(payouts, idem, "order-1", caller="shop-b"))
    assert not isinstance(second, Replay), "shop-b got shop-a's stored answer"
    assert first != second and len(wallet.sent) == 2
    assert isinstance(asyncio.run(_pay(payouts, idem, "order-1", caller="shop-a")), Replay)
    assert len(store.keys) == 2


def test_cancelled_payout_keeps_its_key() -> None:
    wallet, _, store, payouts, idem = _setup(asyncio.CancelledError(), journal_fails=False)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_pay(payouts, idem, "k"))
    assert len(store.keys) == 1, "a cancelled payout released its key"
    wallet.transfer_error = None
    with pytest.raises(Conflict):
        asyncio.run(_pay(payouts, idem, "k"))
    assert len(wallet.sent) == 1


def _key_states(store: FakeIdempotencyStore) -> list[str]:
    return [answer.state for answer in store.keys.values()]


@pytest.mark.parametrize("failing", ["complete", "release"])
@pytest.mark.parametrize("outcome", list(WALLET_OUTCOMES))
def test_a_key_store_failure_never_changes_the_answer(
    outcome: str, failing: str, caplog: pytest.LogCaptureFixture
) -> None:
    """After the wallet was asked, the database fails to store the answer under the key
    (``complete``) or to release the key: the client still gets what the wallet did (200
    with the hashes, the refusal, 504), the failure is logged, and a key whose payout may
    have gone out is never released: retries get 409 until the key expires."""
    make_error, expected, key_kept, _ = WALLET_OUTCOMES[outcome]
    wallet, _, store, payouts, idem = _setup(make_error() if make_error else None, False)
    setattr(store, f"fail_{failing}", True)
    # The store call this outcome needs is the one that fails: kept -> complete, else release.
    store_failed = key_kept == (failing == "complete")

    async def scenario() -> None:
        if expected is None:
            answer = await _pay(payouts, idem, "k1")
            assert answer["tx_hash_list"] == [f"{1:064x}"]
            status = 200
        else:
            with pytest.raises(expected) as raised:
                await _pay(payouts, idem, "k1")
            assert type(raised.value) is expected, raised.value
            assert isinstance(raised.value, XmrgateError)
            assert "idempotency table" not in raised.value.message
            status = error_answer(raised.value)[0]
        assert status == ANSWER_STATUS[outcome]
        assert len(wallet.sent) == 1
        if key_kept:
            assert store.release_calls == [], "released the key of a payout that may have gone"
        # The database and the wallet are back for the retry.
        wallet.transfer_error = None
        store.fail_complete = store.fail_release = False
        if store_failed:
            assert _key_states(store) == ["running"]
            assert any("Idempotency-Key" in r.getMessage() for r in caplog.records)
            with pytest.raises(Conflict):
                await _pay(payouts, idem, "k1")
            assert len(wallet.sent) == 1
        elif key_kept:
            assert _key_states(store) == ["done"]
            assert isinstance(await _pay(payouts, idem, "k1"), Replay)
            assert len(wallet.sent) == 1
        else:
            assert store.keys == {}
            assert not isinstance(await _pay(payouts, idem, "k1"), Replay)
            assert len(wallet.sent) == 2

    with caplog.at_level(logging.ERROR, logger="xmrgate.core.idempotency"):
        asyncio.run(scenario())


@pytest.mark.parametrize(
    "before_the_wallet", ["journal down", "address check failed", "view-only wallet"]
)
def test_release_failing_when_nothing_happened_keeps_the_answer(before_the_wallet: str) -> None:
    """Nothing was sent and the key should be released, but the database fails to: the
    answer is still the real refusal (not the database's 503, not a 500); the key stays
    claimed (retries get 409 until it expires), never sending."""
    wallet, journal, store, payouts, idem = _setup(None, journal_fails=False)
    store.fail_release = True
    if before_the_wallet == "journal down":
        journal.fail_requested = True
    elif before_the_wallet == "address check failed":
        wallet.validate_error = WalletTimeout("no answer")
    else:
        wallet.view_only = True
    with pytest.raises(XmrgateError) as raised:
        asyncio.run(_pay(payouts, idem, "k"))
    assert "idempotency table" not in raised.value.message
    assert error_answer(raised.value)[0] in (409, 503)
    assert wallet.sent == [] and len(store.release_calls) == 1
    assert _key_states(store) == ["running"]
    store.fail_release = journal.fail_requested = wallet.view_only = False
    wallet.validate_error = None
    with pytest.raises(Conflict):
        asyncio.run(_pay(payouts, idem, "k"))
    assert wallet.sent == []
