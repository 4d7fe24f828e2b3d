"""Health and balance with fakes: the probe cache, its own connection, the wrong wallet,
and nothing created or sent before the open wallet was checked."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from tests.unit.fakes import (
    AllowAll,
    FakeIdempotencyStore,
    FakeIdentityStore,
    FakeJournal,
    FakeModeWallet,
    FakeOutbox,
    FakePaymentStore,
    FakePoolStore,
    FakePoolWallet,
    FakeWallet,
    checked_identity,
)
from xmrgate.core.address_pool import AddressPool
from xmrgate.core.idempotency import Idempotency
from xmrgate.core.overview import Overview
from xmrgate.core.payment_requests import NewPaymentRequest, PaymentRequests
from xmrgate.core.payouts import Destination, Payouts
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import WalletIdentity, WalletStatus, verify_identity
from xmrgate.domain.errors import WalletUnavailable
from xmrgate.domain.records import PaymentRequest
from xmrgate.web.api.errors import error_answer


class CountingWallet(FakeWallet):
    probes: int = 0

    async def probe(self, *, timeout: float) -> bool:
        self.probes += 1
        await asyncio.sleep(0.01)
        return self.up


def _status(identity: WalletIdentity, now: list[float]) -> tuple[WalletStatus, CountingWallet]:
    async def ping() -> bool:
        return True

    main, probe = FakeWallet(balance=(5, 3)), CountingWallet()
    status = WalletStatus(main, probe, ping, "sqlite", identity, clock=lambda: now[0])
    return status, probe


def _ready() -> WalletIdentity:
    identity = checked_identity("4A")
    identity.ready.set()
    return identity


def test_health_is_503_until_the_wallet_is_open() -> None:
    status, _ = _status(WalletIdentity(), [0.0])
    report = asyncio.run(status.health())
    assert report.status == 503 and "not opened its wallet" in (report.message or "")


def test_a_flood_of_health_checks_probes_the_wallet_once_a_second() -> None:
    now = [100.0]
    status, probe = _status(_ready(), now)

    async def flood() -> None:
        reports = await asyncio.gather(*(status.health() for _ in range(200)))
        assert {r.status for r in reports} == {200}

    asyncio.run(flood())
    assert probe.probes == 1
    now[0] += 0.5
    asyncio.run(status.health())
    assert probe.probes == 1
    now[0] += 0.6
    probe.up = False
    report = asyncio.run(status.health())
    assert probe.probes == 2
    assert (report.status, report.services) == (503, {"walletrpc": False, "sqlite": True})


def test_wrong_wallet_makes_health_503_with_both_addresses_and_refuses_balance() -> None:
    identity = WalletIdentity(
        mismatch="wallet-rpc has 4B... open but this database belongs to 4A..."
    )
    status, _ = _status(identity, [0.0])
    report = asyncio.run(status.health())
    assert (
        report.status == 503 and "4A" in (report.message or "") and "4B" in (report.message or "")
    )
    with pytest.raises(WalletUnavailable):
        asyncio.run(status.balance())


def test_balance_of_the_right_wallet() -> None:
    status, _ = _status(_ready(), [0.0])
    assert asyncio.run(status.balance()) == (5, 3)


class _UseCases:
    """A payout (with an Idempotency-Key), a request made on the wallet (no address pool)
    and the balance, all guarded by one ``identity`` as the container wires them."""

    def __init__(self, identity: WalletIdentity) -> None:
        self.wallet, self.journal = FakeWallet(balance=(5, 3)), FakeJournal()
        self.payments, self.keys = FakePaymentStore(), FakeIdempotencyStore()
        self.payouts = Payouts(
            self.wallet,
            self.journal,
            priority=0,
            timeout=5,
            require_wallet=identity.require_usable,
            mode=WalletMode(self.wallet, identity),
        )
        self.requests = PaymentRequests(
            self.wallet,
            self.payments,
            FakeOutbox(),
            AllowAll(),
            require_wallet=identity.require_usable,
        )
        self.status, _ = _status(identity, [0.0])

    async def pay(self) -> Any:
        async def send(_ref: str | None) -> dict[str, Any]:
            dest = [Destination(address="9" + "a" * 94, amount=1000)]
            result = await self.payouts.send(dest, requested_by=None, idempotency_key="k")
            return {"tx_hash_list": result.tx_hash_list}

        return await Idempotency(self.keys).run(
            endpoint="transfer",
            caller=None,
            key="k",
            body={"amount": 1000},
            handler=send,
            error_answer=error_answer,
            moves_money=True,
        )


def test_nothing_is_sent_or_created_before_the_wallet_was_checked() -> None:
    """The HTTP app serves before the supervisor has compared the open wallet with the one
    the database belongs to: until then a payout, a request made on the wallet and the
    balance are 503 with nothing journaled, sent or created, and the Idempotency-Key is
    released (nothing happened: the retry runs). Reads of the database keep working.
    (Each waits ``wait_budget`` for the first check: 0.2 s here, 5 s in a gateway.)"""
    identity = WalletIdentity(wait_budget=0.2)
    cases = _UseCases(identity)
    stored = asyncio.run(
        cases.payments.create(
            address="8Stored",
            subaddr_index=9,
            amount=1,
            description="",
            callback_url=None,
            return_url=None,
        )
    )
    with pytest.raises(WalletUnavailable, match="not been checked yet") as refused:
        asyncio.run(cases.pay())
    assert error_answer(refused.value)[0] == 503 and refused.value.request_sent is False
    assert cases.wallet.sent == [] and cases.journal.rows == {} and cases.keys.keys == {}
    assert cases.wallet.mode_checks == 0, "the unchecked wallet was asked something"
    with pytest.raises(WalletUnavailable, match="not been checked yet"):
        asyncio.run(cases.requests.create(NewPaymentRequest(amount=1)))
    assert cases.wallet.next_index == 1 and list(cases.payments.requests) == ["8Stored"]
    with pytest.raises(WalletUnavailable, match="not been checked yet"):
        asyncio.run(cases.status.balance())
    assert asyncio.run(cases.requests.get("8Stored")) == stored
    assert asyncio.run(cases.payouts.journal(10)) == []


def test_an_identity_check_without_the_mode_still_refuses() -> None:
    """The identity was compared but the mode question (restricted? view-only?) has not
    been answered yet, e.g. wallet-rpc stopped answering in between: still refused."""
    identity = WalletIdentity(wait_budget=0.2)
    asyncio.run(verify_identity(FakeModeWallet(primary="4A"), FakeIdentityStore("4A"), identity))
    assert identity.mismatch is None and identity.mode is None
    with pytest.raises(WalletUnavailable, match="not been checked yet"):
        asyncio.run(identity.require_usable())


def test_at_start_payouts_requests_and_balance_wait_for_the_first_check() -> None:
    """The HTTP app answers about a second before the supervisor's first check;
    a payout, a request on the wallet and the balance made then wait for that check
    (within the budget) instead of an immediate 503."""
    identity = WalletIdentity()
    cases = _UseCases(identity)

    async def start_then_use() -> tuple[Any, PaymentRequest, tuple[int, int], float]:
        async def check_later() -> None:
            await asyncio.sleep(0.5)  # the supervisor's first check lands
            await verify_identity(FakeModeWallet(primary="4A"), FakeIdentityStore("4A"), identity)
            await WalletMode(FakeModeWallet(primary="4A"), identity).detect()

        started = time.monotonic()
        checker = asyncio.create_task(check_later())
        paid, made, balance = await asyncio.gather(
            cases.pay(), cases.requests.create(NewPaymentRequest(amount=1)), cases.status.balance()
        )
        await checker
        return paid, made, balance, time.monotonic() - started

    paid, made, balance, elapsed = asyncio.run(start_then_use())
    assert paid["tx_hash_list"] and len(cases.wallet.sent) == 1
    assert cases.payments.requests[made.address] == made and balance == (5, 3)
    assert 0.5 <= elapsed < 2.0


async def _supervisor(identity: WalletIdentity, outcomes: list[str | None]) -> None:
    """The start-up loop as far as requests see it: an attempt each time one asks (the
    back-off itself is long); a None outcome is a wallet that got through and is checked."""
    for outcome in outcomes:
        await identity.retry.wait()
        if outcome is None:
            await verify_identity(FakeModeWallet(primary="4A"), FakeIdentityStore("4A"), identity)
            await WalletMode(FakeModeWallet(primary="4A"), identity).detect()
        identity.attempt_ended(outcome)


def _refused(identity: WalletIdentity, calls: list[Any], outcomes: list[str | None]) -> list[Any]:
    """Run ``calls`` (coroutine factories) one after another beside ``_supervisor``."""

    async def run() -> list[Any]:
        supervisor = asyncio.create_task(_supervisor(identity, outcomes))
        results = []
        for call in calls:
            try:
                results.append(await call())
            except WalletUnavailable as exc:
                results.append(exc)
        supervisor.cancel()
        return results

    return asyncio.run(run())


def test_at_start_a_wallet_still_down_fails_fast_saying_why() -> None:
    """The supervisor's last attempt was refused: the request has it try again at once
    (not at the end of its back-off) and fails as soon as that is refused too."""
    identity = WalletIdentity(unreachable="wallet-rpc refused the connection")
    identity.attempts = 1
    cases = _UseCases(identity)
    refused = "wallet-rpc refused the connection again"
    started = time.monotonic()
    paid, balance = _refused(identity, [cases.pay, cases.status.balance], [refused, refused])
    assert time.monotonic() - started < 0.5
    for answer in (paid, balance):
        assert isinstance(answer, WalletUnavailable) and "refused the connection again" in str(
            answer
        )
        assert answer.request_sent is False
    assert cases.wallet.sent == [] and identity.attempts == 3


def test_at_start_a_wallet_back_up_is_used_without_waiting_out_the_back_off() -> None:
    """wallet-rpc came back during the supervisor's back-off: the request's fresh attempt
    gets through, the wallet is checked, and the payout and the balance run."""
    identity = WalletIdentity(unreachable="wallet-rpc refused the connection")
    cases = _UseCases(identity)
    paid, balance = _refused(identity, [cases.pay, cases.status.balance], [None])
    assert paid["tx_hash_list"] and len(cases.wallet.sent) == 1 and balance == (5, 3)
    assert identity.unreachable is None


def _slow_open(identity: WalletIdentity, opens_for: float) -> Any:
    """The supervisor's attempt as wallet-rpc 0.18 makes it: asked, it starts at once,
    then opening the wallet takes ``opens_for`` seconds before the check lands."""

    async def supervise() -> None:
        await identity.retry.wait()
        identity.attempt_started()
        await asyncio.sleep(opens_for)
        await verify_identity(FakeModeWallet(primary="4A"), FakeIdentityStore("4A"), identity)
        await WalletMode(FakeModeWallet(primary="4A"), identity).detect()
        identity.attempt_ended(None)

    return supervise()


def test_a_wallet_that_is_slow_to_open_is_waited_for_past_the_wait_budget() -> None:
    """wallet-rpc is back, but opening the wallet takes it longer than ``wait_budget``
    (1-5 s on regtest): the request waits for the attempt under way (``open_budget``)
    and gets its answer instead of a 503 (a regression seen in CI)."""
    identity = WalletIdentity(unreachable="refused", wait_budget=0.2, open_budget=2.0)
    cases = _UseCases(identity)

    async def run() -> tuple[tuple[int, int], float]:
        supervisor = asyncio.create_task(_slow_open(identity, 0.6))
        started = time.monotonic()
        balance = await cases.status.balance()
        await supervisor
        return balance, time.monotonic() - started

    balance, elapsed = asyncio.run(run())
    assert balance == (5, 3) and 0.6 <= elapsed < 1.5


def test_an_open_that_never_ends_is_refused_after_the_open_budget() -> None:
    """A wallet-rpc that accepted the attempt and hangs: the request is refused once the
    open budget is spent, saying the wallet is not checked, with nothing sent."""
    identity = WalletIdentity(unreachable="refused", wait_budget=0.2, open_budget=0.8)
    cases = _UseCases(identity)

    async def run() -> tuple[BaseException | None, float]:
        supervisor = asyncio.create_task(_slow_open(identity, 60))
        started = time.monotonic()
        try:
            await cases.pay()
            failure: BaseException | None = None
        except WalletUnavailable as exc:
            failure = exc
        supervisor.cancel()
        return failure, time.monotonic() - started

    failure, elapsed = asyncio.run(run())
    assert isinstance(failure, WalletUnavailable) and "not been checked yet" in str(failure)
    assert failure.request_sent is False and cases.wallet.sent == []
    assert 0.8 <= elapsed < 1.3


def test_after_the_first_check_payouts_requests_and_balance_run() -> None:
    """The start-up check (``WalletChecks.before_tick`` on the right wallet) lets them run."""
    cases = _UseCases(checked_identity())
    assert asyncio.run(cases.pay())["tx_hash_list"] and len(cases.wallet.sent) == 1
    assert cases.journal.rows[1]["state"] == "sent"
    made = asyncio.run(cases.requests.create(NewPaymentRequest(amount=1)))
    assert cases.payments.requests[made.address] == made
    assert asyncio.run(cases.status.balance()) == (5, 3)


def _pooled_requests(identity: WalletIdentity, wallet: FakeWallet) -> PaymentRequests:
    """Requests from an address pool holding one subaddress, guarded as the container
    wires them."""
    pool = FakePoolStore(pool={7: "8Pooled"})
    return PaymentRequests(
        wallet,
        FakePaymentStore(),
        FakeOutbox(),
        AllowAll(),
        require_wallet=identity.require_usable,
        refuse_wallet_problem=identity.refuse_known_problem,
        pool=pool,
    )


def test_the_pool_answers_before_the_first_check() -> None:
    """A start with wallet-rpc down: the wallet is not checked yet, but the pooled
    subaddresses were checked against the right wallet when pooled, so POST /receive
    keeps answering from the pool without asking it."""
    identity, wallet = WalletIdentity(), FakeWallet()
    created = asyncio.run(_pooled_requests(identity, wallet).create(NewPaymentRequest(amount=1)))
    assert created.address == "8Pooled" and created.subaddr_index == 7
    assert wallet.next_index == 1, "the unchecked wallet was asked for a subaddress"


def test_the_pool_refuses_while_another_wallet_is_open() -> None:
    """Known wrong wallet: 503 naming it, and nothing is taken from the pool."""
    identity = WalletIdentity(mismatch="wallet-rpc has wallet B open; the database belongs to A")
    requests = _pooled_requests(identity, FakeWallet())
    with pytest.raises(WalletUnavailable, match="wallet B"):
        asyncio.run(requests.create(NewPaymentRequest(amount=1)))


def test_a_wrong_wallet_found_while_waiting_on_the_empty_pool_is_said_at_once() -> None:
    """At start the pool is empty and a request waits for the first check and fill; the
    check finds another wallet open (nothing will be pooled): the request fails then,
    naming it, instead of at the end of its 5 s budget."""
    identity = WalletIdentity()
    pool = AddressPool(FakePoolWallet(), FakePoolStore(), size=5, low_water=0)
    requests = PaymentRequests(
        FakeWallet(),
        FakePaymentStore(),
        FakeOutbox(),
        AllowAll(),
        refuse_wallet_problem=identity.refuse_known_problem,
        pool=FakePoolStore(),
        pool_refilled=pool.next_round,
    )

    async def run() -> float:
        async def check_finds_wallet_b() -> None:
            await asyncio.sleep(0.3)
            identity.mismatch = "wallet-rpc has wallet B open; the database belongs to A"

        started = time.monotonic()
        checker = asyncio.create_task(check_finds_wallet_b())
        with pytest.raises(WalletUnavailable, match="wallet B"):
            await requests.create(NewPaymentRequest(amount=1))
        await checker
        return time.monotonic() - started

    assert asyncio.run(run()) < 1.0


def test_the_overview_never_waits_for_the_start_up_check() -> None:
    """GET /status (the dashboard) reads the balance without the 5 s start-up wait that
    GET /balance has: before the first check it shows the rest at once, the balance
    listed as a problem."""
    status, _ = _status(WalletIdentity(), [0.0])

    async def facts() -> None:
        return None

    async def height() -> int:
        return 7

    store = SimpleNamespace(facts=facts)
    found = Overview(store, status, SimpleNamespace(get_height=height))  # type: ignore[arg-type]
    started = time.monotonic()
    report = asyncio.run(found.report())
    assert time.monotonic() - started < 1.0, "the overview waited for the wallet check"
    assert report.balance is None and report.wallet_height == 7
    assert any("not been checked yet" in p for p in report.problems), report.problems
