"""Every kind of store at once, on two gateway processes sharing one PostgreSQL database.

The scenario of ``tests/integration/test_all_stores_together.py`` (which asserts) and of
``bench/all_stores_soak.py`` (which counts, for minutes). :class:`AllStores` holds:

- a main wallet-rpc with a fresh wallet, and the stores on it: the default store on its
  account 0 and a store on another account of it (``kind`` ``account``);
- a second wallet-rpc with a wallet of its own, and a store on it (``kind`` ``own``);
- two ``xmrgate serve`` processes, A and B, on the main wallet-rpc and one database (as
  two hosts would run them), each checking every store account's lookahead every
  ``--lookahead-check-interval`` (a few seconds here, a minute by default: a run of a
  minute passes many of those full checks, which a payment test of a few seconds never
  reaches);
- a Greenfield webhook on each store.

All three stores exist before the first payment. Then the caller pays requests
(``POST /receive`` with a callback URL) and Greenfield invoices of the stores in rounds,
kills and restarts a process, replaces the block of a round (:meth:`AllStores.reorg`);
each :class:`Payment` remembers what its request must end with (its amount, its callbacks
and webhook events), and :func:`tally` counts what a receiver got against it.

Every process started here is ended by PID in :meth:`AllStores.close`; the database is
the caller's (made and dropped by it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from testsupport.all_stores_ledger import (
    FAILED_CHECK,
    FAILED_TICK,
    OPERATOR,
    STEP_FAILURES_METRIC,
    TICK_FAILURES_METRIC,
    UNLOCK_BLOCKS,
    XMR,
    Payment,
    Store,
)
from testsupport.all_stores_setup import AllStoresSetup, ok_json, raised_after
from testsupport.gateway import SYNC_WAIT, Gateway
from testsupport.processes import wait_until


class AllStores(AllStoresSetup):
    """The scenario: the stores of :class:`AllStoresSetup`, their payments and checks."""

    def reader(self) -> Gateway:
        """A running process to read through: B, else A."""
        return self.b if self.b.proc is not None else self.a

    # ----------------------------------------------------------------- failed ticks

    def failed_ticks(self) -> list[str]:
        """Every line of A's and B's logs so far (before and after a restart) that says a
        sync tick failed, or went on without its lookahead check, which failed; each
        with the exception of the traceback that follows it, if one does."""
        self._note_logs()
        for path, offset in self._read_to.items():
            try:
                with path.open("rb") as log:
                    log.seek(offset)
                    new = log.read()
            except FileNotFoundError:
                continue
            whole = new[: new.rfind(b"\n") + 1]  # a line being written is read next time
            self._read_to[path] = offset + len(whole)
            lines = whole.decode(errors="replace").splitlines()
            for n, line in enumerate(lines):
                if FAILED_TICK in line or FAILED_CHECK.search(line):
                    self._failed.append(f"{path.name}: {line}{raised_after(lines[n + 1 :])}")
        return list(self._failed)

    def check_ticks(self) -> None:
        """In strict mode, fail at once if either process logged a failed sync tick."""
        if not self.strict:
            return
        failed = self.failed_ticks()
        assert not failed, f"{len(failed)} failed sync ticks, first ones:\n" + "\n".join(failed[:5])

    def tick_failures_metric(self, gateway: Gateway) -> float:
        """Failed sync ticks, and ticks that went on without a step that failed, of every
        wallet, as a running process counts them since its start (``/metrics``)."""
        text = gateway.get("/metrics", headers=OPERATOR).text
        # A labelled counter has no sample until its first count: its TYPE line says
        # that it exists. The steps' counter is the newer one: counted when it is there.
        family = TICK_FAILURES_METRIC.removesuffix("_total")
        assert f"# TYPE {family}" in text, f"no {family} in /metrics"
        total = 0.0
        for line in text.splitlines():
            name = line.split("{", 1)[0].split(" ", 1)[0]
            if name in (TICK_FAILURES_METRIC, STEP_FAILURES_METRIC):
                total += float(line.rsplit(" ", 1)[1])
        return total

    # ----------------------------------------------------------------- payments

    def request(self, store: Store, amount: int, round_no: int, on: Gateway) -> Payment:
        """POST /receive on ``on`` with the store's key and the callback URL."""
        body = {
            "amount": amount,
            "callback_url": self.callback_url,
            "description": f"round {round_no}, {store.id}",
        }
        made = ok_json(on.post("/receive", json=body, headers=store.auth))
        payment = Payment(store, str(made["address"]), amount, round_no, self.name(on))
        self.payments.append(payment)
        return payment

    def invoice(self, store: Store, amount: int, round_no: int, on: Gateway) -> Payment:
        """POST /api/v1/stores/{id}/invoices on ``on`` (in XMR: no rate involved)."""
        body = {
            "amount": str(Decimal(amount) / XMR),
            "currency": "XMR",
            "metadata": {"orderId": f"{round_no}-{store.id}"},
        }
        base = f"/api/v1/stores/{store.id}/invoices"
        made = ok_json(on.post(base, json=body, headers=OPERATOR))
        [method] = ok_json(on.get(f"{base}/{made['id']}/payment-methods", headers=OPERATOR))
        assert int(Decimal(method["due"]) * XMR) == amount, method
        payment = Payment(
            store, str(method["destination"]), amount, round_no, self.name(on), made["id"]
        )
        self.payments.append(payment)
        return payment

    def pay(self, payments: Sequence[Payment]) -> str:
        """One transaction paying each in full, mined at once; its hash."""
        tx_hash = self.devnet.pay_many([(p.address, p.amount) for p in payments])
        height = self.devnet.mine(1)
        mined = time.monotonic()
        for p in payments:
            p.txs.append(tx_hash)
            p.mined_height, p.paid_at, p.credited_at = height - 1, mined, None
        return tx_hash

    def _status(self, gateway: Gateway, payment: Payment) -> dict[str, Any]:
        body: dict[str, Any] = ok_json(
            gateway.get(f"/receive/{payment.address}", headers=payment.store.auth)
        )
        return body

    def credited(self, gateway: Gateway, payment: Payment) -> bool:
        """Whether ``gateway`` shows the payment's latest transaction mined, covering
        the amount in full."""
        status = self._status(gateway, payment)
        mined = any(
            t["tx_hash"] == payment.txs[-1] and t["height"] > 0 for t in status["transactions"]
        )
        return mined and status["amount"]["covered"]["total"] == payment.amount

    def wait_credited(self, payments: Sequence[Payment], timeout: float = SYNC_WAIT) -> bool:
        """Wait until each is credited (read through a running process), noting when.

        False when some were not, in time (strict mode raises instead).
        """
        pending = [p for p in payments if p.credited_at is None]

        def probe() -> tuple[bool, list[str]]:
            self.check_ticks()
            reader = self.reader()
            for p in list(pending):
                if self.credited(reader, p):
                    p.credited_at = time.monotonic()
                    pending.remove(p)
            return not pending, [f"{p.store.id} round {p.round}" for p in pending]

        return self._wait(f"{len(pending)} payments credited", probe, timeout)

    def _wait(self, what: str, probe: Callable[[], tuple[bool, Any]], timeout: float) -> bool:
        try:
            reader = self.reader()
            wait_until(what, probe, timeout=timeout, log=reader.log_path, interval=0.05)
        except AssertionError:
            if self.strict:
                raise
            return False
        return True

    def reorg(self, payments: Sequence[Payment], timeout: float = SYNC_WAIT) -> bool:
        """Pay them in a block of their own, wait until they are credited, replace that
        block by two without their transaction (popped, the pool flushed: it is gone),
        wait until they are uncovered, then pay them again. False on a wait in vain
        (strict mode raises)."""
        if self.devnet.pool_hashes():  # nothing else may go into the block popped
            self.devnet.mine(1)
        tx_hash = self.pay(payments)
        top = self.devnet.height()
        if not self.wait_credited(payments, timeout):
            return False
        assert self.devnet.height() == top, "a block was mined on top of the one to pop"
        self.devnet.pop_blocks(1)
        self.devnet.flush_txpool()
        self.devnet.mine(2)
        for p in payments:
            p.reorged = True

        def probe() -> tuple[bool, list[str]]:
            self.check_ticks()
            reader = self.reader()
            left = [
                p.store.id
                for p in payments
                if self._status(reader, p)["amount"]["covered"]["total"] != 0
            ]
            return not left, left

        if not self._wait(f"transaction {tx_hash[:12]}... gone", probe, timeout):
            return False
        self.pay(payments)
        return self.wait_credited(payments, timeout)

    def unlock_all(self) -> None:
        """Mine until every payment's block has its 10 confirmations."""
        newest = max(p.mined_height for p in self.payments if p.txs)
        self.devnet.mine(max(newest + UNLOCK_BLOCKS - self.devnet.height(), 0))

    def final_state(self, gateway: Gateway, payment: Payment) -> tuple[Any, ...]:
        """What ``gateway`` says of the request: (status, covered total, unlocked, due,
        complete), and the Greenfield status of an invoice."""
        status = self._status(gateway, payment)
        amount = status["amount"]
        state: tuple[Any, ...] = (
            status["status"],
            amount["covered"]["total"],
            amount["covered"]["unlocked"],
            amount["due"],
            status["complete"],
        )
        if payment.invoice is not None:
            path = f"/api/v1/stores/{payment.store.id}/invoices/{payment.invoice}"
            found = ok_json(gateway.get(path, headers=OPERATOR))
            state += (found["status"], found["additionalStatus"])
        return state

    def settled_state(self, payment: Payment) -> tuple[Any, ...]:
        """The final state a payment paid in full must reach (see :meth:`final_state`)."""
        state: tuple[Any, ...] = ("complete", payment.amount, payment.amount, 0, True)
        if payment.invoice is not None:
            state += ("Settled", "None")
        return state

    def wait_complete(self, payments: Sequence[Payment], timeout: float = SYNC_WAIT) -> bool:
        """Wait until each reaches its final state on a running process."""
        pending = list(payments)

        def probe() -> tuple[bool, list[str]]:
            self.check_ticks()
            reader = self.reader()
            for p in list(pending):
                if self.final_state(reader, p) == self.settled_state(p):
                    pending.remove(p)
            return not pending, [f"{p.store.id} round {p.round}" for p in pending]

        return self._wait(f"{len(pending)} payments complete", probe, timeout)

    def credit_seconds(self) -> list[float]:
        """From block to credit, of every credited payment (the latest payment of a
        request the reorg made pay twice)."""
        return [s for p in self.payments if (s := p.credit_seconds) is not None]
