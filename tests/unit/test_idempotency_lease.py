"""Idempotency-Key claims that end with their process (``core/idempotency.py``).

A claim names its owner and holds for a lease the owner renews while its handler runs.
A retry that finds a running claim whose lease ran out takes it over: it answers the
request the dead owner made (found by the claim's reference), or runs the work again
under the same reference; a payout's claim is never run again.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from tests.unit.fakes import NOW, FakeIdempotencyStore
from xmrgate.core.idempotency import Idempotency, Replay
from xmrgate.domain.errors import AlreadyExists, Conflict, XmrgateError

KEY = "order-7"
BODY = {"amount": 5}


def _answer(exc: XmrgateError) -> tuple[int, dict[str, Any]]:
    return 409, {"status": 409, "message": exc.message}


class Work:
    """A handler that records what it made under each reference, and a recover."""

    def __init__(self) -> None:
        self.made: dict[str, dict[str, Any]] = {}
        self.runs = 0

    async def handler(self, ref: str | None) -> dict[str, Any]:
        self.runs += 1
        assert ref is not None
        if ref in self.made:
            raise AlreadyExists("a request was made under this Idempotency-Key already")
        self.made[ref] = {"address": f"8addr-{len(self.made)}", "amount": 5}
        return self.made[ref]

    async def recover(self, ref: str) -> dict[str, Any] | None:
        return self.made.get(ref)


def _run(idem: Idempotency, work: Work, *, moves_money: bool = False) -> dict[str, Any] | Replay:
    return asyncio.run(
        idem.run(
            endpoint="receive",
            caller=None,
            key=KEY,
            body=BODY,
            handler=work.handler,
            error_answer=_answer,
            moves_money=moves_money,
            recover=work.recover,
        )
    )


def _dead_claim(store: FakeIdempotencyStore, work: Work, *, committed: bool) -> str:
    """A claim left running by a process that died (its work committed or not)."""
    ref = "ref-of-the-dead"
    asyncio.run(store.claim("receive", KEY, _digest(), owner="dead:1", ref=ref))
    if committed:
        work.made[ref] = {"address": "8addr-dead", "amount": 5}
    return ref


def _digest() -> str:
    from xmrgate.core.idempotency import body_hash

    return body_hash(BODY)


def _clock(store: FakeIdempotencyStore) -> Any:
    return lambda: store.now


def test_a_live_claim_of_another_process_is_a_conflict() -> None:
    store, work = FakeIdempotencyStore(), Work()
    _dead_claim(store, work, committed=False)
    store.now = NOW + timedelta(seconds=store.lease - 1)
    with pytest.raises(Conflict, match="still in progress"):
        _run(Idempotency(store, owner="me", clock=_clock(store)), work)
    assert work.runs == 0


def test_an_expired_claim_whose_work_committed_answers_that_request() -> None:
    store, work = FakeIdempotencyStore(), Work()
    _dead_claim(store, work, committed=True)
    store.now = NOW + timedelta(seconds=store.lease + 1)
    idem = Idempotency(store, owner="me", clock=_clock(store))
    answer = _run(idem, work)
    assert isinstance(answer, Replay)
    assert answer.body == {"address": "8addr-dead", "amount": 5}
    assert work.runs == 0
    # Stored: the next retry replays it without taking anything over.
    again = _run(idem, work)
    assert isinstance(again, Replay) and again.body == answer.body


def test_an_expired_claim_whose_work_never_committed_runs_again_under_its_ref() -> None:
    store, work = FakeIdempotencyStore(), Work()
    ref = _dead_claim(store, work, committed=False)
    store.now = NOW + timedelta(seconds=store.lease + 1)
    answer = _run(Idempotency(store, owner="me", clock=_clock(store)), work)
    assert answer == work.made[ref]
    assert work.runs == 1 and list(work.made) == [ref]


def test_a_late_commit_of_the_dead_owner_is_the_answer_not_a_second_request() -> None:
    """The owner was only stalled: it commits while we run. Our insert collides on the
    unique reference, and the answer is the request it made."""
    store, work = FakeIdempotencyStore(), Work()
    ref = _dead_claim(store, work, committed=False)
    store.now = NOW + timedelta(seconds=store.lease + 1)
    original = work.handler

    async def late(r: str | None) -> dict[str, Any]:
        work.made[ref] = {"address": "8addr-late", "amount": 5}  # the stalled owner commits
        return await original(r)

    work.handler = late  # type: ignore[method-assign]
    answer = _run(Idempotency(store, owner="me", clock=_clock(store)), work)
    assert isinstance(answer, Replay) and answer.body["address"] == "8addr-late"


def test_a_payout_claim_is_never_run_again_after_its_owner_died() -> None:
    store, work = FakeIdempotencyStore(), Work()
    _dead_claim(store, work, committed=False)
    store.now = NOW + timedelta(seconds=store.lease + 1)
    with pytest.raises(Conflict, match="payout may have been sent"):
        _run(Idempotency(store, owner="me", clock=_clock(store)), work, moves_money=True)
    assert work.runs == 0


def test_the_owner_renews_its_lease_while_the_handler_runs() -> None:
    store = FakeIdempotencyStore(lease=0.06)
    idem = Idempotency(store, owner="me")

    async def slow(ref: str | None) -> dict[str, Any]:
        await asyncio.sleep(0.2)
        return {"ok": True}

    result = asyncio.run(
        idem.run(
            endpoint="receive",
            caller=None,
            key=KEY,
            body=BODY,
            handler=slow,
            error_answer=_answer,
            moves_money=False,
        )
    )
    assert result == {"ok": True}
    assert store.renewals >= 3
