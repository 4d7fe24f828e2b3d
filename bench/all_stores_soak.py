"""Every kind of store at once, for minutes: two gateway processes, payments every few seconds.

``python -m bench.all_stores_soak`` (``--minutes 5``, ``--every 5``, ``--lookahead 2s``;
``--help``), or ``python -m bench --only all-stores-soak``. Not in the default set of
``python -m bench``: it runs for minutes.

The scenario of ``tests/integration/test_all_stores_together.py``
(``testsupport/all_stores.py``) stretched over ``--minutes``: the default store, a store
on another account of the main wallet and a store on a wallet-rpc of its own; processes A
and B (``xmrgate serve``) on one PostgreSQL database, checking every store account's
lookahead in full every ``--lookahead``; a round every ``--every`` seconds paying a request
of each store (with a callback URL) and, every third round, a Greenfield invoice of each
(each store has a webhook), in one transaction mined at once. A third of the way in, A
is SIGKILLed just after a round's block and restarted; half way, a round's block is
replaced by a reorg (its transaction gone) and the round paid again. Then every payment
is let unlock, and the deliveries counted at two receiver processes (``bench/receiver.py``:
the callbacks' and the webhooks').

It prints figures and asserts nothing: payments made, credited (the amount covered with
the transaction mined) and complete; callbacks and webhook events delivered once,
duplicated, missing; failed sync ticks (lines of both processes' logs, and the counters
of the processes running at the end); the time from a payment's block to its credit.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass

import httpx

from bench import runner
from bench.common import Context, Figure, fresh_database, section
from bench.receiver import ReceiverProcess
from testsupport.all_stores import AllStores
from testsupport.all_stores_ledger import (
    XMR,
    Payment,
    due_callbacks,
    due_webhooks,
    spread,
    tally,
)
from testsupport.gateway import Gateway

NAME = "all-stores-soak"
# After the last round: how long the last payments get to complete, and the deliveries
# to arrive (a delivery claimed by the killed process waits 32 s for the other one).
SETTLE = 120.0
# Room for a duplicate delivery to arrive once every due one has (an absence).
DUPLICATE_WAIT = 3.0


@dataclass
class Run:
    """What happened besides the payments themselves."""

    rounds: int = 0
    seconds: float = 0.0
    failed_rounds: int = 0
    uncredited_waits: int = 0
    restart_seconds: float = float("nan")
    reorged: bool = False


def _amount(round_no: int, n: int) -> int:
    """A distinct small amount per payment (thousands of them fit the funder's outputs)."""
    return (1_000 + 10 * round_no + n) * XMR // 1_000_000


def _round(mix: AllStores, run: Run, round_no: int, *, kill: bool, reorg: bool) -> None:
    """One round: a request of each store (and invoices every third round), paid at once;
    with ``kill``, A SIGKILLed after the block and restarted once B credited the round;
    with ``reorg``, the round's block replaced and the round paid again."""
    # Made through both processes in turn (through B alone while A is down: a restart
    # that never got ready leaves it so).
    makers = [gw for gw in (mix.a, mix.b) if gw.proc is not None]
    payments: list[Payment] = [
        mix.request(store, _amount(round_no, n), round_no, makers[(round_no + n) % len(makers)])
        for n, store in enumerate(mix.stores)
    ]
    if round_no % 3 == 1 and not reorg:  # an invoice's events after a reorg: not counted here
        payments += [
            mix.invoice(
                store, _amount(round_no, 10 + n), round_no, makers[(round_no + n + 1) % len(makers)]
            )
            for n, store in enumerate(mix.stores)
        ]
    if reorg:
        run.reorged = True
        if not mix.reorg(payments):
            run.uncredited_waits += 1
        return
    mix.pay(payments)
    if kill:
        mix.kill(mix.a)
    if not mix.wait_credited(payments):
        run.uncredited_waits += 1
    if kill:
        run.restart_seconds = mix.restart(mix.a)


def _soak(mix: AllStores, args: argparse.Namespace) -> Run:
    """Rounds every ``args.every`` seconds for ``args.minutes``."""
    run = Run()
    started = time.monotonic()
    length = 60.0 * args.minutes
    kill_at, reorg_at = started + length / 3, started + length / 2
    killed = reorged = False
    last_report = started
    while (now := time.monotonic()) < started + length:
        run.rounds += 1
        kill = not killed and now >= kill_at
        reorg = not reorged and not kill and now >= reorg_at
        killed, reorged = killed or kill, reorged or reorg
        try:
            _round(mix, run, run.rounds, kill=kill, reorg=reorg)
        except (AssertionError, httpx.HTTPError) as exc:  # counted; the soak goes on
            run.failed_rounds += 1
            print(f"  round {run.rounds} failed: {str(exc)[:300]}", flush=True)
        if time.monotonic() - last_report >= 30.0:
            last_report = time.monotonic()
            credited = sum(p.credited_at is not None for p in mix.payments)
            print(
                f"  {last_report - started:.0f}s: {run.rounds} rounds, {len(mix.payments)} "
                f"payments, {credited} credited, {len(mix.failed_ticks())} failed ticks",
                flush=True,
            )
        time.sleep(max(started + run.rounds * args.every - time.monotonic(), 0.0))
    run.seconds = time.monotonic() - started
    return run


def _counted(mix: AllStores, gateway: Gateway) -> float:
    """The process's failure counters (NaN when it does not answer them)."""
    try:
        return mix.tick_failures_metric(gateway)
    except (AssertionError, httpx.HTTPError):
        return float("nan")


def _report(
    ctx: Context, mix: AllStores, run: Run, callbacks: ReceiverProcess, webhooks: ReceiverProcess
) -> None:
    """Let everything unlock and be delivered, then print the figures."""
    mix.unlock_all()
    complete_in_time = mix.wait_complete(mix.payments, timeout=SETTLE)
    calls_due, hooks_due = due_callbacks(mix.payments), due_webhooks(mix.payments)
    deadline = time.monotonic() + SETTLE
    for receiver, due in ((callbacks, calls_due), (webhooks, hooks_due)):
        while receiver.stats()["count"] < sum(due.values()) and time.monotonic() < deadline:
            time.sleep(0.5)
    time.sleep(DUPLICATE_WAIT)
    calls = tally(calls_due, [(about, kind) for _, kind, about in callbacks.items()])
    hooks = tally(hooks_due, [(about, kind) for _, kind, about in webhooks.items()])
    reader = mix.reader()
    complete = sum(mix.final_state(reader, p) == mix.settled_state(p) for p in mix.payments)
    credited = sum(p.credited_at is not None for p in mix.payments)
    low, mid, high = spread(mix.credit_seconds())
    counters = {mix.name(gw): _counted(mix, gw) for gw in (mix.a, mix.b)}
    reorg = "done" if run.reorged else "not reached"
    settled = "every payment complete" if complete_in_time else "NOT every payment complete"
    print(
        f"  {run.rounds} rounds over {run.seconds:.0f}s ({run.failed_rounds} failed, "
        f"{run.uncredited_waits} waits for a credit in vain; reorg {reorg}; A ready "
        f"{run.restart_seconds:.1f}s after its restart); {settled} within {SETTLE:.0f}s "
        "of the last round",
        flush=True,
    )
    add = ctx.add
    add(Figure(NAME, "payments made (requests and invoices)", len(mix.payments), ""))
    add(Figure(NAME, "payments credited", credited, ""))
    add(Figure(NAME, "payments complete at the end", complete, ""))
    for what, t in (("callbacks", calls), ("webhook deliveries", hooks)):
        add(Figure(NAME, f"{what} due", t.due, ""))
        add(Figure(NAME, f"{what} delivered once", t.once, ""))
        add(Figure(NAME, f"{what} duplicated", t.duplicated, ""))
        add(Figure(NAME, f"{what} missing", t.missing, ""))
    add(Figure(NAME, "failed sync ticks (both logs)", len(mix.failed_ticks()), ""))
    note = ", ".join(f"{name} {value:g}" for name, value in counters.items())
    add(
        Figure(
            NAME,
            "failed ticks and steps (counters at the end)",
            sum(counters.values()),
            "",
            note=f"{note}; A's since its restart",
        )
    )
    for label, value in (("min", low), ("median", mid), ("max", high)):
        add(Figure(NAME, f"block to credit, {label}", value, "s"))


def run(ctx: Context, options: argparse.Namespace | None = None) -> None:
    """The soak on the run's devnet, its own database, wallet-rpcs and processes."""
    args = options or _parse([])
    section(
        f"all stores soak: {args.minutes:g} min, a round every {args.every:g}s, full "
        f"lookahead check every {args.lookahead} (PostgreSQL, processes A and B)"
    )
    with ExitStack() as stack:
        # Two receiver processes: the callbacks' and the webhooks' (each counted apart).
        callbacks = ReceiverProcess()
        stack.callback(callbacks.stop)
        webhooks = ReceiverProcess()
        stack.callback(webhooks.stop)
        database = stack.enter_context(fresh_database())
        mix = AllStores(
            ctx.devnet,
            ctx.workdir / NAME,
            database,
            callback_url=callbacks.url,
            webhook_url=webhooks.url,
            lookahead=args.lookahead,
            strict=False,
        )
        stack.enter_context(mix)
        soaked = _soak(mix, args)
        _report(ctx, mix, soaked, callbacks, webhooks)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.all_stores_soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=5.0, help="length of the soak")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between two rounds")
    parser.add_argument(
        "--lookahead", default="2s", help="the gateways' --lookahead-check-interval"
    )
    parser.add_argument(
        "--keep-workdir", action="store_true", help="keep the logs (path printed at the end)"
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    """``python -m bench.all_stores_soak``: ``python -m bench --only all-stores-soak``."""
    args = _parse(argv)
    flags = ["--only", NAME] + (["--keep-workdir"] if args.keep_workdir else [])
    return runner.main(flags, {NAME: lambda ctx: run(ctx, args)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
