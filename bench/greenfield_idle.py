"""What open Greenfield invoices cost a gateway that has nothing to do.

A shop's open invoices mostly wait for a payment that may never come. The webhook
announcer (``core/greenfield_announcer.py``) looks at the watched invoices after every
sync tick that wrote events and every 5 s anyway; this measures what that costs while
nothing happens: a gateway on PostgreSQL with ``--open`` invoices made through
``POST /api/v1/stores/default/invoices`` (in EUR priced by fake providers on loopback, as
``bench/greenfield.py``; from the address pool; a 10-minute rate lock: none expires
while measuring), then the gateway process's own CPU time over
``--seconds`` of idling, as a share of one core. With ``--baseline REV`` (``python -m
bench --only greenfield-idle --baseline 7d9c695``) the same is measured on that version's
gateway in the same run, and the ratio printed.

``python -m bench --only greenfield-idle`` or ``python -m bench.greenfield_idle``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench import profiling, runner
from bench.common import Context, Figure, fresh_database, fresh_wallet, hostport, section
from bench.greenfield import OPERATOR, RATES, _store_key
from bench.greenfield_client import run_client
from testsupport.fake_rates import FakeRates
from testsupport.gateway import GatewayProcess

NAME = "greenfield-idle"
CLIENTS = 8
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


@contextmanager
def _gateway(ctx: Context, label: str, pool: int, baseline: bool) -> Iterator[GatewayProcess]:
    """A ready gateway on PostgreSQL whose pool holds ``pool`` subaddresses, pricing EUR."""
    with ExitStack() as stack:
        rates = stack.enter_context(FakeRates())
        for source, value in RATES.items():
            rates.set(source, "EUR", value)
        wallet = fresh_wallet(ctx.devnet, f"bench-gf-idle-{label}", open_wallet=False)
        stack.callback(wallet.stop)
        workdir = Path(ctx.workdir) / f"{NAME}-{label}"
        database = stack.enter_context(fresh_database())
        args = ["--api-key", OPERATOR, "--address-pool-size", str(pool)]
        args += ["--address-pool-low-water", "1", "--rate-currencies", "EUR"]
        args += ["--rate-source-url", rates.option(), "--rate-lock", "10m", *ctx.gateway_args]
        if baseline:
            assert ctx.baseline is not None
            gateway = ctx.baseline.gateway(workdir, wallet.url, database, args)
        else:
            gateway = GatewayProcess(workdir, wallet.url, database, args)
        stack.callback(gateway.close)
        gateway.start(wait=False)
        gateway.wait_ready(timeout=900)
        time.sleep(3)  # the first rates fetched (a create before them is refused 503)
        yield gateway


def _share(pid: int, seconds: float) -> float:
    """The process's share of one core over the next ``seconds``."""
    before, started = _cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (_cpu_seconds(pid) - before) / (time.monotonic() - started)


def _settle(pid: int, budget: float) -> None:
    """Wait until the work the creates left behind is done (each invoice's
    InvoiceCreated announced, its wallet label written): two 5 s windows in a row
    within one point of a core of each other, or ``budget`` seconds."""
    deadline = time.monotonic() + budget
    last = _share(pid, 5)
    while time.monotonic() < deadline:
        now = _share(pid, 5)
        if abs(now - last) < 0.01:
            return
        last = now
    print(f"  (not settled after {budget:.0f} s: the figure includes leftover work)")


def _idle_share(ctx: Context, label: str, args: argparse.Namespace, baseline: bool) -> float:
    """The gateway's share of a core while idle with ``args.open`` open invoices."""
    with _gateway(ctx, label, args.open + 100, baseline) as gateway:
        key = _store_key(gateway)
        host, port = hostport(gateway.url)
        per_client = -(-args.open // CLIENTS)
        made = run_client(
            {"host": host, "port": port, "key": key, "mode": "block", "kind": "greenfield"}
            | {"clients": CLIENTS, "count": per_client, "base": 1}
        )
        if made["bad"]:
            raise RuntimeError(f"{label}: {made['bad']} creates were not answered 200")
        _settle(gateway.pid, args.settle)
        out = Path(ctx.workdir) / f"profile-{NAME}-{label.replace(' ', '-')}.txt"
        spy = profiling.start(gateway.pid, args.seconds, out) if args.profile else None
        before, started = _cpu_seconds(gateway.pid), time.monotonic()
        time.sleep(args.seconds)
        share = (_cpu_seconds(gateway.pid) - before) / (time.monotonic() - started)
        if spy is not None:
            spy.wait(timeout=60)
            ctx.profiles.append((f"{label}, idle", profiling.summarize(out, top=25)))
        print(
            f"  {label}: {len(made['latencies']):,} open invoices, gateway CPU while idle "
            f"{100 * share:.1f}% of a core over {args.seconds:.0f} s",
            flush=True,
        )
        return share


def run(ctx: Context, options: argparse.Namespace | None = None) -> None:
    """This version's idle cost, and the baseline's beside it when one is given."""
    args = options or _parse([])
    section(f"greenfield: an idle gateway with {args.open:,} open invoices (PostgreSQL)")
    new = _idle_share(ctx, "this tree", args, baseline=False)
    ctx.add(Figure(NAME, f"idle CPU with {args.open:,} open invoices", 100 * new, "%"))
    if ctx.baseline is not None:
        old = _idle_share(ctx, ctx.baseline.label, args, baseline=True)
        ctx.add(
            Figure(
                NAME,
                f"idle CPU, {ctx.baseline.label} / this tree",
                old / new if new else float("inf"),
                "x",
                note=f"{100 * old:.1f}% vs {100 * new:.1f}% of a core",
            )
        )


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.greenfield_idle", description=__doc__)
    parser.add_argument("--open", type=int, default=2000, help="open invoices to make")
    parser.add_argument("--seconds", type=float, default=30.0, help="idle time measured")
    parser.add_argument(
        "--settle", type=float, default=180.0, help="longest wait for the creates' after-work"
    )
    parser.add_argument("--baseline", default=None, help="git revision measured beside")
    parser.add_argument("--profile", action="store_true", help="py-spy while idle")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    """``python -m bench.greenfield_idle``: ``python -m bench --only greenfield-idle``."""
    args = _parse(argv)
    flags = ["--only", NAME] + (["--baseline", args.baseline] if args.baseline else [])
    return runner.main(flags, {NAME: lambda ctx: run(ctx, args)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
