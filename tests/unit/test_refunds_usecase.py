"""Refunds with fakes: the money rule, the claim, the one send, the record by hand, the watch.

The integration tests (``tests/integration/test_refunds.py``) show the same on regtest;
these reach what real processes cannot do on demand: a wallet that times out while
sending, refuses, or is down while an address is checked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.unit.fakes import FakeJournal, FakeWallet
from testsupport.fake_refunds import FakeRefundStore, RefundBook, holding_total
from testsupport.monero_addresses import fake_address
from xmrgate.core.payouts import Payouts
from xmrgate.core.refunds import RefundAsk, Refunds
from xmrgate.domain.errors import (
    InvalidInput,
    NotFound,
    PayoutOutcomeUnknown,
    WalletCannotSpend,
    WalletRejected,
    WalletTimeout,
    WalletUnavailable,
)
from xmrgate.domain.fiat import Price
from xmrgate.domain.refunds import (
    RefundGone,
    RefundStateConflict,
    RefundStatus,
    RefundTooLarge,
)

SHOP = fake_address("mainnet", "subaddress", seed=bytes(range(64)))
CUSTOMER = fake_address("mainnet", "standard", seed=bytes(range(1, 65)))
TESTNET = fake_address("testnet", "standard", seed=bytes(range(2, 66)))


@dataclass
class TxKeyAnswer:
    """What ``check_tx_key`` answers (the shape of the adapter's record)."""

    received: int
    confirmations: int = 0
    in_pool: bool = True


@dataclass
class RefundWallet(FakeWallet):
    """The fake wallet plus what refunds ask: an address's network, a tx key's proof."""

    networks: dict[str, str | None] = field(default_factory=dict)
    network_error: BaseException | None = None
    tx_keys: dict[tuple[str, str, str], TxKeyAnswer] = field(default_factory=dict)
    mined: dict[str, int] = field(default_factory=dict)

    async def address_network(self, address: str) -> str | None:
        if self.network_error is not None:
            raise self.network_error
        return self.networks.get(address, "mainnet")

    async def check_tx_key(self, txid: str, tx_key: str, address: str) -> Any:
        answer = self.tx_keys.get((txid, tx_key, address))
        if answer is None:
            raise WalletRejected("the tx key does not prove this transaction", code=-25)
        return answer

    async def get_transfer_by_txid(self, txid: str) -> dict[str, Any] | None:
        if txid not in self.mined:
            return None
        confirmations = self.mined[txid]
        return {"type": "out" if confirmations else "pending", "confirmations": confirmations}


@dataclass
class KeyedJournal(FakeJournal):
    """The payout journal, keeping the idempotency key of each row."""

    keys: list[str | None] = field(default_factory=list)

    async def record_requested(
        self,
        destinations: list[dict[str, Any]],
        *,
        requested_by: str | None,
        idempotency_key: str | None,
    ) -> int:
        self.keys.append(idempotency_key)
        return await super().record_requested(
            destinations, requested_by=requested_by, idempotency_key=idempotency_key
        )


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class FixedPricing:
    """1 XMR = 150 EUR, or no rate at all."""

    def __init__(self) -> None:
        self.rate = Decimal("150")

    def quote(self, price: Price) -> tuple[int, object]:
        return int(price.amount / self.rate * 10**12), None


@dataclass
class World:
    book: RefundBook
    wallet: RefundWallet
    journal: KeyedJournal
    clock: Clock
    refunds: Refunds
    pricing: FixedPricing


def world(*, received: int = 5000, auto_send: bool = False, view_only: bool = False) -> World:
    book = RefundBook()
    book.add_request(SHOP, received)
    wallet = RefundWallet(view_only=view_only)
    journal = KeyedJournal()
    clock = Clock()
    pricing = FixedPricing()
    refunds = Refunds(
        FakeRefundStore(book),
        Payouts(wallet, journal, priority=0, timeout=5),
        wallet,
        pricing=pricing,
        auto_send=auto_send,
        clock=clock,
    )
    return World(book, wallet, journal, clock, refunds, pricing)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- making a refund: the money rule ---------------------------------------------------


def test_without_amount_everything_received_and_not_refunded_is_refunded() -> None:
    w = world(received=5000)
    first = run(w.refunds.create(RefundAsk(SHOP, amount=1200)))
    rest = run(w.refunds.create(RefundAsk(SHOP)))
    assert (first.refund.amount, rest.refund.amount) == (1200, 3800)
    assert w.book.requests[SHOP].refunded == 5000 == holding_total(w.book, 1)
    assert first.token != rest.token and len(first.token) == 32
    with pytest.raises(RefundStateConflict, match="nothing to refund"):
        run(w.refunds.create(RefundAsk(SHOP)))


def test_more_than_received_minus_refunded_is_refused_with_nothing_made() -> None:
    w = world(received=5000)
    run(w.refunds.create(RefundAsk(SHOP, amount=4000)))
    with pytest.raises(RefundTooLarge):
        run(w.refunds.create(RefundAsk(SHOP, amount=1001)))
    assert len(w.book.refunds) == 1 and w.book.requests[SHOP].refunded == 4000
    assert run(w.refunds.create(RefundAsk(SHOP, amount=1000))).refund.amount == 1000


def test_the_rest_right_after_a_link_lapsed_counts_its_money_free() -> None:
    w = world(received=5000)
    run(w.refunds.create(RefundAsk(SHOP, amount=5000, expires_in=60)))
    w.clock.now += timedelta(seconds=61)
    assert run(w.refunds.create(RefundAsk(SHOP))).refund.amount == 5000


def test_a_token_whose_digest_does_not_match_the_stored_one_finds_nothing() -> None:
    w = world()
    made = run(w.refunds.create(RefundAsk(SHOP, amount=1000)))
    stored = w.book.refunds[made.refund.id]
    w.book.refunds[made.refund.id] = replace(stored, token_digest="0" * 64)
    with pytest.raises(NotFound):
        run(w.refunds.find_claim(made.token))


def test_unknown_and_other_stores_requests_are_not_found() -> None:
    w = world()
    other = fake_address("mainnet", "subaddress")
    w.book.add_request(other, 9000, store_id="other")
    for address in (other, fake_address()):
        with pytest.raises(NotFound):
            run(w.refunds.create(RefundAsk(address, amount=1)))


@pytest.mark.parametrize(
    ("ask", "message"),
    [
        (RefundAsk(SHOP, reason="x" * 501), "reason"),
        (RefundAsk(SHOP, expires_in=59), "expires_in"),
        (RefundAsk(SHOP, expires_in=91 * 86400), "expires_in"),
        (RefundAsk(SHOP, amount=1, price=Price(Decimal("1"), "EUR")), "not both"),
    ],
)
def test_bad_asks_are_refused_before_anything_is_reserved(ask: RefundAsk, message: str) -> None:
    w = world()
    with pytest.raises(InvalidInput, match=message):
        run(w.refunds.create(ask))
    assert not w.book.refunds and w.book.requests[SHOP].refunded == 0


def test_a_fiat_refund_is_converted_when_made_and_again_when_sent() -> None:
    w = world(received=10**12)
    made = run(w.refunds.create(RefundAsk(SHOP, price=Price(Decimal("15.00"), "EUR"))))
    assert made.refund.amount == 10**11 and made.refund.price == {
        "amount": "15.00",
        "currency": "EUR",
    }
    run(w.refunds.claim(made.refund.id, CUSTOMER))
    w.pricing.rate = Decimal("300")  # XMR doubled: half the XMR gives the same euros
    sent = run(w.refunds.send(made.refund.id, requested_by="op"))
    assert sent.amount == 5 * 10**10 and w.wallet.sent[-1][0]["amount"] == 5 * 10**10
    assert w.book.requests[SHOP].refunded == 5 * 10**10


# --- the claim --------------------------------------------------------------------------


def test_a_claim_checks_the_address_and_happens_once() -> None:
    w = world()
    made = run(w.refunds.create(RefundAsk(SHOP, amount=1000)))
    found = run(w.refunds.find_claim(made.token))
    assert found.id == made.refund.id
    claimed = run(w.refunds.claim(found.id, f"  {CUSTOMER}\n"))
    assert claimed.status is RefundStatus.CLAIMED and claimed.claim_address == CUSTOMER
    assert [e[0] for e in w.book.events] == ["refund.claimed"]
    with pytest.raises(RefundStateConflict, match="claimed already"):
        run(w.refunds.claim(found.id, fake_address()))
    assert w.book.refunds[found.id].claim_address == CUSTOMER


@pytest.mark.parametrize(
    ("address", "wallet_says", "message"),
    [
        (CUSTOMER[:40] + " " + CUSTOMER[41:], "mainnet", "space"),
        (CUSTOMER + "?tx_payment_id=0123456789abcdef", "mainnet", "payment id"),
        (TESTNET, "testnet", "testnet"),
        (CUSTOMER, None, "checksum"),
        (CUSTOMER, "stagenet", "stagenet"),
    ],
)
def test_a_bad_address_is_refused_with_a_clear_message_and_the_refund_stays_open(
    address: str, wallet_says: str | None, message: str
) -> None:
    w = world()
    w.wallet.networks[address] = wallet_says
    made = run(w.refunds.create(RefundAsk(SHOP, amount=1000)))
    with pytest.raises(InvalidInput, match=message):
        run(w.refunds.claim(made.refund.id, address))
    assert w.book.refunds[made.refund.id].status is RefundStatus.OPEN and not w.book.events


def test_a_wallet_that_cannot_check_the_address_is_503_and_nothing_is_claimed() -> None:
    w = world()
    w.wallet.network_error = WalletUnavailable("refused", request_sent=False)
    made = run(w.refunds.create(RefundAsk(SHOP, amount=1000)))
    with pytest.raises(WalletUnavailable, match="try again"):
        run(w.refunds.claim(made.refund.id, CUSTOMER))
    assert w.book.refunds[made.refund.id].status is RefundStatus.OPEN


def test_expired_and_cancelled_links_are_gone() -> None:
    w = world()
    late = run(w.refunds.create(RefundAsk(SHOP, amount=1000, expires_in=60)))
    withdrawn = run(w.refunds.create(RefundAsk(SHOP, amount=1000)))
    run(w.refunds.cancel(withdrawn.refund.id))
    w.clock.now += timedelta(seconds=61)
    for refund_id in (late.refund.id, withdrawn.refund.id):
        with pytest.raises(RefundGone):
            run(w.refunds.claim(refund_id, CUSTOMER))


@pytest.mark.parametrize("token", ["", "short", "x" * 32, "é" * 32, "a" * 10_000])
def test_a_guessed_or_malformed_token_finds_nothing(token: str) -> None:
    w = world()
    run(w.refunds.create(RefundAsk(SHOP, amount=1000)))
    with pytest.raises(NotFound):
        run(w.refunds.find_claim(token))


# --- sending: once ----------------------------------------------------------------------


def claimed(w: World, amount: int = 1000) -> str:
    made = run(w.refunds.create(RefundAsk(SHOP, amount=amount)))
    run(w.refunds.claim(made.refund.id, CUSTOMER))
    return made.refund.id


def test_a_claimed_refund_is_sent_once_through_the_journal() -> None:
    w = world()
    refund_id = claimed(w)
    sent = run(w.refunds.send(refund_id, requested_by="op"))
    assert sent.status is RefundStatus.SENT and sent.tx_hash_list == (f"{1:064x}",)
    assert w.wallet.sent == [[{"amount": 1000, "address": CUSTOMER}]]
    assert w.journal.keys == [f"refund:{refund_id}"]
    with pytest.raises(RefundStateConflict, match="only a claimed refund"):
        run(w.refunds.send(refund_id, requested_by="op"))
    assert len(w.wallet.sent) == 1
    assert [e[0] for e in w.book.events] == ["refund.claimed", "refund.sent"]


def test_an_open_refund_cannot_be_sent() -> None:
    w = world()
    made = run(w.refunds.create(RefundAsk(SHOP, amount=1000)))
    with pytest.raises(RefundStateConflict):
        run(w.refunds.send(made.refund.id, requested_by="op"))
    assert not w.wallet.sent


def test_a_refused_send_goes_back_to_claimed_and_may_be_sent_again() -> None:
    w = world()
    refund_id = claimed(w)
    w.wallet.transfer_error = WalletRejected("not enough unlocked money", code=-4)
    with pytest.raises(WalletRejected):
        run(w.refunds.send(refund_id, requested_by="op"))
    back = w.book.refunds[refund_id]
    assert back.status is RefundStatus.CLAIMED and "not enough" in (back.error or "")
    w.wallet.transfer_error = None
    assert run(w.refunds.send(refund_id, requested_by="op")).status is RefundStatus.SENT


@pytest.mark.parametrize(
    "error",
    [
        WalletTimeout("no answer"),
        WalletUnavailable("connection reset", request_sent=True),
        RuntimeError("boom"),
    ],
)
def test_an_unknown_outcome_stays_sending_and_is_never_sent_again(error: BaseException) -> None:
    w = world()
    refund_id = claimed(w)
    w.wallet.transfer_error = error
    with pytest.raises(PayoutOutcomeUnknown):
        run(w.refunds.send(refund_id, requested_by="op"))
    stuck = w.book.refunds[refund_id]
    assert stuck.status is RefundStatus.SENDING and stuck.error
    w.wallet.transfer_error = None
    with pytest.raises(RefundStateConflict, match="never sent twice"):
        run(w.refunds.send(refund_id, requested_by="op"))
    with pytest.raises(RefundStateConflict):
        run(w.refunds.cancel(refund_id))
    assert len(w.wallet.sent) == 1


def test_a_view_only_wallet_cannot_send_and_the_refund_stays_claimed() -> None:
    w = world(view_only=True)
    refund_id = claimed(w)
    with pytest.raises(WalletCannotSpend):
        run(w.refunds.send(refund_id, requested_by="op"))
    assert w.book.refunds[refund_id].status is RefundStatus.CLAIMED
    assert not w.wallet.sent and not w.journal.rows


def test_auto_send_sends_at_claim_time_and_a_failure_leaves_it_claimed() -> None:
    w = world(auto_send=True)

    async def claim_and_settle(refund_id: str) -> RefundStatus:
        answered = await w.refunds.claim(refund_id, CUSTOMER)
        assert answered.status is RefundStatus.CLAIMED  # the page does not wait for the wallet
        await w.refunds.settled()
        return w.book.refunds[refund_id].status

    made = run(w.refunds.create(RefundAsk(SHOP, amount=1000)))
    assert run(claim_and_settle(made.refund.id)) is RefundStatus.SENT
    w.wallet.transfer_error = WalletRejected("not enough unlocked money", code=-4)
    other = run(w.refunds.create(RefundAsk(SHOP, amount=1000)))
    assert run(claim_and_settle(other.refund.id)) is RefundStatus.CLAIMED
    assert "not enough" in (w.book.refunds[other.refund.id].error or "")


# --- paid by hand (view-only) -----------------------------------------------------------

TX, KEY = "ab" * 32, "cd" * 32


def test_a_refund_paid_by_hand_is_recorded_when_check_tx_key_shows_enough() -> None:
    w = world(view_only=True)
    refund_id = claimed(w, amount=1000)
    w.wallet.tx_keys[(TX, KEY, CUSTOMER)] = TxKeyAnswer(received=999)
    with pytest.raises(InvalidInput, match="999 piconero, less than the refund's 1000"):
        run(w.refunds.record_paid(refund_id, TX, KEY))
    with pytest.raises(WalletRejected):
        run(w.refunds.record_paid(refund_id, TX, "ef" * 32))
    assert w.book.refunds[refund_id].status is RefundStatus.CLAIMED
    w.wallet.tx_keys[(TX, KEY, CUSTOMER)] = TxKeyAnswer(received=1000)
    paid = run(w.refunds.record_paid(refund_id, TX.upper(), KEY))
    assert paid.status is RefundStatus.SENT and paid.manual and paid.tx_hash_list == (TX,)
    with pytest.raises(RefundStateConflict):
        run(w.refunds.record_paid(refund_id, TX, KEY))


@pytest.mark.parametrize(("tx", "key"), [("ab" * 31, KEY), (TX, "zz" * 32), (TX, "")])
def test_malformed_hashes_and_keys_are_400(tx: str, key: str) -> None:
    w = world()
    refund_id = claimed(w)
    with pytest.raises(InvalidInput):
        run(w.refunds.record_paid(refund_id, tx, key))


# --- cancel and the watch ---------------------------------------------------------------


def test_cancel_frees_the_money_and_a_sent_refund_cannot_be_cancelled() -> None:
    w = world(received=1000)
    made = run(w.refunds.create(RefundAsk(SHOP)))
    assert run(w.refunds.cancel(made.refund.id)).status is RefundStatus.CANCELLED
    assert w.book.requests[SHOP].refunded == 0
    refund_id = claimed(w, amount=1000)
    run(w.refunds.send(refund_id, requested_by="op"))
    with pytest.raises(RefundStateConflict, match="only an open or claimed"):
        run(w.refunds.cancel(refund_id))


def test_the_watch_expires_links_and_confirms_mined_refunds() -> None:
    w = world(received=3000)
    late = run(w.refunds.create(RefundAsk(SHOP, amount=1000, expires_in=60)))
    sent_id = claimed(w, amount=1000)
    run(w.refunds.send(sent_id, requested_by="op"))
    tx = w.book.refunds[sent_id].tx_hash_list[0]
    w.clock.now += timedelta(seconds=61)
    assert run(w.refunds.watch()) == 1  # the link expired; the tx is not mined yet
    assert w.book.refunds[late.refund.id].status is RefundStatus.EXPIRED
    assert w.book.requests[SHOP].refunded == 1000
    w.wallet.mined[tx] = 0
    assert run(w.refunds.watch()) == 0
    w.wallet.mined[tx] = 1
    assert run(w.refunds.watch()) == 1
    assert w.book.refunds[sent_id].status is RefundStatus.CONFIRMED
    assert [e[0] for e in w.book.events][-1] == "refund.confirmed"


def test_the_watch_confirms_a_refund_paid_by_hand_with_its_tx_key() -> None:
    w = world(view_only=True)
    refund_id = claimed(w, amount=1000)
    w.wallet.tx_keys[(TX, KEY, CUSTOMER)] = TxKeyAnswer(received=1000)
    run(w.refunds.record_paid(refund_id, TX, KEY))
    assert run(w.refunds.watch()) == 0
    w.wallet.tx_keys[(TX, KEY, CUSTOMER)] = TxKeyAnswer(1000, confirmations=2, in_pool=False)
    assert run(w.refunds.watch()) == 1
    assert w.book.refunds[refund_id].status is RefundStatus.CONFIRMED


def test_a_wallet_down_during_the_watch_is_left_for_the_next_round() -> None:
    w = world(view_only=True)
    refund_id = claimed(w, amount=1000)
    w.wallet.tx_keys[(TX, KEY, CUSTOMER)] = TxKeyAnswer(received=1000)
    run(w.refunds.record_paid(refund_id, TX, KEY))
    w.wallet.tx_keys.clear()  # check_tx_key now raises
    assert run(w.refunds.watch()) == 0
    assert w.book.refunds[refund_id].status is RefundStatus.SENT
