"""Unmatched receipts' rules (``domain/unmatched.py``): which transfers are receipts,
how they follow the chain, and which steps are announced."""

from __future__ import annotations

from datetime import UTC, datetime

from xmrgate.domain.ledger import Observation, Transfer, TransferState
from xmrgate.domain.unmatched import (
    ReceiptStatus,
    UnmatchedReceipt,
    event_json,
    receipt_json,
    reconcile_receipts,
    split_observations,
)

NOW = 1_800_000_000


def seen(
    tx: str, index: int, height: int = 100, amount: int = 5, pool: bool = False
) -> Observation:
    return Observation(
        tx_hash=tx,
        subaddr_index=index,
        amount=amount,
        fee=1,
        height=0 if pool else height,
        timestamp=NOW - 60,
        unlock_time=0,
        double_spend_seen=False,
        in_pool=pool,
    )


def stored(tx: str, index: int, state: TransferState, height: int = 100) -> Transfer:
    return Transfer(
        tx_hash=tx,
        subaddr_index=index,
        amount=5,
        fee=1,
        height=0 if state is TransferState.POOL else height,
        timestamp=NOW - 60,
        unlock_time=0,
        double_spend_seen=False,
        state=state,
        first_seen=NOW - 60,
    )


def test_a_transfer_to_a_subaddress_without_a_request_is_a_receipt() -> None:
    requests, receipts = split_observations([seen("a", 1), seen("b", 2)], {1}, set())
    assert [o.tx_hash for o in requests] == ["a"]
    assert [o.tx_hash for o in receipts] == ["b"]


def test_a_recorded_receipt_stays_one_when_its_index_gets_a_request() -> None:
    """A pooled index handed out after money reached it: the old money stays a receipt,
    new money to it is the request's."""
    requests, receipts = split_observations([seen("old", 7), seen("new", 7)], {7}, {("old", 7)})
    assert [o.tx_hash for o in receipts] == ["old"]
    assert [o.tx_hash for o in requests] == ["new"]


def test_a_new_mined_receipt_is_recorded_and_announced_confirmed() -> None:
    outcome = reconcile_receipts(
        stored=[], observed=[seen("a", 3, height=100)], window_start=90, chain_height=101, now=NOW
    )
    [changed] = outcome.changed
    assert (changed.key, changed.state) == (("a", 3), TransferState.CONFIRMED)
    assert [t.state for t in outcome.announced] == [TransferState.CONFIRMED]


def test_a_pool_receipt_is_recorded_but_not_announced_until_mined() -> None:
    outcome = reconcile_receipts(
        stored=[], observed=[seen("a", 3, pool=True)], window_start=90, chain_height=101, now=NOW
    )
    assert [t.state for t in outcome.changed] == [TransferState.POOL]
    assert outcome.announced == []
    mined = reconcile_receipts(
        stored=outcome.changed,
        observed=[seen("a", 3, height=101)],
        window_start=90,
        chain_height=102,
        now=NOW,
    )
    assert [t.state for t in mined.announced] == [TransferState.CONFIRMED]


def test_unlocking_is_recorded_silently() -> None:
    outcome = reconcile_receipts(
        stored=[stored("a", 3, TransferState.CONFIRMED, height=100)],
        observed=[seen("a", 3, height=100)],
        window_start=90,
        chain_height=111,
        now=NOW,
    )
    assert [t.state for t in outcome.changed] == [TransferState.UNLOCKED]
    assert outcome.announced == []


def test_a_confirmed_receipt_missing_from_the_window_is_gone_and_announced() -> None:
    outcome = reconcile_receipts(
        stored=[stored("a", 3, TransferState.CONFIRMED, height=100)],
        observed=[],
        window_start=90,
        chain_height=102,
        now=NOW,
    )
    assert [t.state for t in outcome.changed] == [TransferState.GONE]
    assert [t.state for t in outcome.announced] == [TransferState.GONE]


def test_nothing_new_changes_nothing() -> None:
    outcome = reconcile_receipts(
        stored=[stored("a", 3, TransferState.CONFIRMED, height=100)],
        observed=[seen("a", 3, height=100)],
        window_start=90,
        chain_height=102,
        now=NOW,
    )
    assert (outcome.changed, outcome.announced) == ([], [])


def test_a_receipt_in_json_has_its_documented_fields() -> None:
    receipt = UnmatchedReceipt(
        id=4,
        store_id="default",
        address="8Addr",
        transfer=stored("a", 3, TransferState.CONFIRMED, height=100),
        status=ReceiptStatus.OPEN,
        note=None,
        created_at=datetime(2026, 11, 26, tzinfo=UTC),
    )
    shown = receipt_json(receipt, chain_height=103)
    expected = {"id", "address", "subaddr_index", "tx_hash", "amount", "height"}
    expected |= {"confirmations", "locked", "state"}
    assert expected <= shown.keys()
    assert (shown["confirmations"], shown["locked"], shown["state"]) == (3, True, "confirmed")
    assert event_json(receipt, 103) == {"event": "transfer.unmatched", "unmatched": shown}
