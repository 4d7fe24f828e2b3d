"""``python -m bench.outside``: xmrgate, a previous xmrgate and MoneroPay side by side,
measured from outside, in one run, as one table.

One regtest network; each gateway on its own fresh wallet-rpc (fresh wallet) and its
own fresh PostgreSQL database, with default settings (xmrgate: ``serve --rpc-address
--postgresql`` only, so its address pool is 250 with low water 150). The clients are
separate processes that import nothing of xmrgate:

1. ``bench/moneropay/outside_client.py``: 5 warm-up + 200 sequential ``POST /receive``
   on one keep-alive connection, xmrgate's pool full beforehand;
2. ``bench/outside_burst.py``: bursts of 200 ``POST /receive`` over 16 keep-alive
   connections, the pool refilled before each (the pool holds 250);
3. ``wrk`` (``bench.loadgen`` without it): ``GET /receive/:address`` on 16
   connections over the addresses the bursts made, cycling;
4. the gateway's VmRSS (its process and any children) after 1-3;
5. idle CPU of each gateway and of its wallet-rpc over the same quiet window.

The gateways take turns (which goes first rotates). ``--moneropay BIN --moneropay-dir
SRC`` adds MoneroPay (run from SRC: it reads its migrations there).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

from bench.baseline import Baseline, checkout
from bench.common import REPO_ROOT, percentile
from bench.outside_profile import Sampler
from bench.outside_profile import table as profile_table
from bench.outside_subjects import (
    cpu_of,
    process_tree,
    rss_kib,
    start_moneropay,
    start_xmrgate,
    wait_pool,
)
from bench.outside_table import BURST, CONNECTIONS, ROWS, SEQUENTIAL, Figures, table
from bench.outside_wrk import read_load
from xmrgate.devnet import Devnet

WARMUP = 5
CLIENT = REPO_ROOT / "bench" / "moneropay" / "outside_client.py"
BURST_CLIENT = REPO_ROOT / "bench" / "outside_burst.py"
SEQUENTIAL_ARGS = ("-n", str(SEQUENTIAL), "--warmup", str(WARMUP), "--json")
BURST_ARGS = ("--total", str(BURST), "--connections", str(CONNECTIONS))


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.outside", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--baseline", default="HEAD", metavar="REV", help="previous xmrgate (default HEAD)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="measure no previous xmrgate")
    parser.add_argument("--moneropay", type=Path, default=None, metavar="BIN")
    parser.add_argument("--moneropay-dir", type=Path, default=None, metavar="SRC_DIR")
    parser.add_argument("--rounds", type=int, default=5, help=f"bursts of {BURST} (default 5)")
    parser.add_argument("--seconds", type=float, default=6.0, help="a read round (default 6)")
    parser.add_argument(
        "--read-rounds", type=int, default=3, help="read rounds, median kept (default 3)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="py-spy: CPU per request by stage (xmrgate only)"
    )
    parser.add_argument("--idle", type=float, default=30.0, help="idle window (default 30)")
    parser.add_argument(
        "--json", nargs="?", const="-", default=None, metavar="PATH",
        help="also write the figures as JSON to PATH (no PATH: to stdout after the table)",
    )  # fmt: skip
    args = parser.parse_args(list(argv))
    if (args.moneropay is None) != (args.moneropay_dir is None):
        parser.error("--moneropay and --moneropay-dir go together")
    return args


def _turns(figures: list[Figures], turn: int) -> list[Figures]:
    """The subjects in this turn's order: who goes first rotates."""
    k = turn % len(figures)
    return figures[k:] + figures[:k]


def _guard(f: Figures, what: str, measure: Callable[[], None]) -> None:
    """Run one measurement; a failure costs that figure (noted), not the run."""
    try:
        measure()
    except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as exc:
        f.notes.append(f"{what} failed: {exc}"[:300])
        print(f"  !! {f.subject.label}: {what} failed: {exc}", flush=True)


def _client(script: Path, url: str, args: Sequence[str]) -> dict[str, Any]:
    """Run one outside client (a process of its own) against ``url``; its JSON answer."""
    done = subprocess.run(
        [sys.executable, str(script), url, *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-300:] or "no output")
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _sequential(f: Figures) -> None:
    wait_pool(f.subject)
    out = _client(CLIENT, f.subject.url, SEQUENTIAL_ARGS)
    f.values |= {"seq_rps": out["req_per_s"], "seq_p50": out["median_ms"], "seq_p99": out["p99_ms"]}
    print(
        f"  {f.subject.label}: {out['req_per_s']} req/s, median {out['median_ms']} ms, "
        f"p99 {out['p99_ms']} ms",
        flush=True,
    )


def _burst(f: Figures, bursts: list[dict[str, Any]]) -> None:
    waited = wait_pool(f.subject)
    out = _client(BURST_CLIENT, f.subject.url, BURST_ARGS)
    bursts.append(out)
    f.addresses += out["addresses"]
    print(
        f"  {f.subject.label}: {BURST} in {out['wall_s'] * 1000:.0f} ms "
        f"(pool refilled in {waited:.1f} s before), statuses {out['statuses']}",
        flush=True,
    )


def _summarize_bursts(f: Figures, bursts: list[dict[str, Any]]) -> None:
    if not bursts:
        return
    latencies = [ms for b in bursts for ms in b["latencies_ms"]]
    ok = sum(b["statuses"].get("200", 0) for b in bursts)
    wall = sum(b["wall_s"] for b in bursts)
    f.values |= {
        "burst_rps": ok / wall if wall else math.nan,
        "burst_p50": percentile(latencies, 0.50),
        "burst_p99": percentile(latencies, 0.99),
    }
    failed = len(latencies) - ok + sum(b["errors"] for b in bursts)
    if failed:
        f.notes.append(f"bursts: {failed} of {BURST * len(bursts)} not 200")


def _read(f: Figures, seconds: float, rounds: list[dict[str, float]]) -> None:
    result = read_load(f.subject.url, f.addresses, connections=CONNECTIONS, seconds=seconds)
    rounds.append({"read_rps": result.rps, "read_p50": result.p50_ms, "read_p99": result.p99_ms})
    # The median round of each figure: one 10 s run swings by 10-20 % on a loaded host.
    for key in rounds[0]:
        f.values[key] = statistics.median(r[key] for r in rounds)
    note = f"reads by {result.client} over {len(set(f.addresses))} addresses"
    if len(rounds) == 1:
        f.notes.append(note)
    if len(rounds) > 1:
        f.notes[-1] = note + f", median of {len(rounds)} rounds"
    if result.failed:
        f.notes.append(f"reads: {result.failed} failed")
    print(
        f"  {f.subject.label} ({result.client}): {result.rps:.0f} req/s, "
        f"p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, {result.failed} failed",
        flush=True,
    )


def _rss(f: Figures) -> None:
    pids = process_tree(f.subject.pid)
    f.values["rss"] = rss_kib(pids) / 1024
    if len(pids) > 1:
        f.notes.append(f"RSS summed over {len(pids)} processes (gateway + children)")


def _idle(figures: list[Figures], seconds: float) -> None:
    """CPU of every gateway (with children) and wallet-rpc over one shared quiet window."""
    trees = {f.subject.key: process_tree(f.subject.pid) for f in figures}
    before = {
        f.subject.key: (cpu_of(trees[f.subject.key]), cpu_of([f.subject.wallet.pid]))
        for f in figures
    }
    started = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - started
    for f in figures:
        gateway0, wallet0 = before[f.subject.key]
        f.values["idle_gateway"] = (cpu_of(trees[f.subject.key]) - gateway0) * 60 / wall
        f.values["idle_wallet"] = (cpu_of([f.subject.wallet.pid]) - wallet0) * 60 / wall


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    # Turn SIGTERM into KeyboardInterrupt so every finally block stops its processes.
    raise KeyboardInterrupt


def _sampler(args: argparse.Namespace, f: Figures) -> Sampler | None:
    """py-spy on an xmrgate gateway for one load, with ``--profile``."""
    if not args.profile or f.subject.key == "moneropay":
        return None
    out = Path(tempfile.mkstemp(prefix="xmrgate-profile-", suffix=".txt")[1])
    return Sampler(f.subject.pid, 120, out)


def _keep(sampler: Sampler | None, f: Figures, load: str, requests: int) -> None:
    if sampler is not None:
        f.profiles[load] = sampler.stop(requests)
        sampler.out.unlink(missing_ok=True)


def _measure(args: argparse.Namespace, figures: list[Figures]) -> None:
    print(f"\n== 1. {SEQUENTIAL} sequential POST /receive (outside_client.py)", flush=True)
    for f in _turns(figures, 0):
        wait_pool(f.subject)  # before the profile starts: a refill is not the POSTs' work
        sampler = _sampler(args, f)
        _guard(f, "sequential POST", partial(_sequential, f))
        _keep(sampler, f, "POST", SEQUENTIAL + WARMUP)
    print(f"\n== 2. {args.rounds} bursts of {BURST} POST /receive over {CONNECTIONS} connections")
    bursts: dict[str, list[dict[str, Any]]] = {f.subject.key: [] for f in figures}
    for r in range(args.rounds):
        for f in _turns(figures, r):
            _guard(f, "burst", partial(_burst, f, bursts[f.subject.key]))
    for f in figures:
        _summarize_bursts(f, bursts[f.subject.key])
        wait_pool(f.subject)  # the reads run on a quiet gateway, not during a refill
    print(
        f"\n== 3. GET /receive/:address, {CONNECTIONS} connections, {args.read_rounds} rounds "
        f"of {args.seconds:g} s (who goes first rotates)"
    )
    reads: dict[str, list[dict[str, float]]] = {f.subject.key: [] for f in figures}
    for r in range(args.read_rounds):
        for f in _turns(figures, r + 1):
            sampler = _sampler(args, f) if r == 0 else None
            _guard(f, "read load", partial(_read, f, args.seconds, reads[f.subject.key]))
            if reads[f.subject.key]:
                _keep(sampler, f, "GET", round(reads[f.subject.key][-1]["read_rps"] * args.seconds))
    for f in figures:
        _rss(f)  # 4.
    print(f"\n== 5. idle for {args.idle:g} s (every gateway and wallet-rpc at once)", flush=True)
    time.sleep(3)  # let the last answers' background work (labels, refills) finish
    _idle(figures, args.idle)


def _run(args: argparse.Namespace, workdir: Path, stack: contextlib.ExitStack) -> list[Figures]:
    devnet = Devnet(workdir / "devnet")
    stack.callback(devnet.stop)  # closed last of the processes: the wallets stop first
    baseline: Baseline | None = None
    if not args.no_baseline:
        baseline = stack.enter_context(checkout(args.baseline))
        print(f"baseline {baseline.rev[:7]} checked out in {baseline.path}", flush=True)
    started = time.monotonic()
    devnet.start()
    print(f"devnet up in {time.monotonic() - started:.0f} s", flush=True)
    subjects = [start_xmrgate(devnet, workdir, stack, None)]
    if baseline is not None:
        subjects.append(start_xmrgate(devnet, workdir, stack, baseline))
    if args.moneropay is not None:
        subjects.append(
            start_moneropay(
                devnet, workdir / "moneropay", stack, args.moneropay, args.moneropay_dir
            )
        )
    for s in subjects:
        print(f"{s.label}: {s.url} (pid {s.pid}), pool {s.pool_full}", flush=True)
    figures = [Figures(s) for s in subjects]
    _measure(args, figures)
    return figures


def _report(
    args: argparse.Namespace, figures: list[Figures], load: list[tuple[float, ...]]
) -> None:
    print(
        "\n== outside, side by side (ratio = new / other: > 1 better for req/s, < 1 for the rest)"
    )
    print(table(figures))
    if args.profile:
        by_load = {
            load: {f.subject.key: f.profiles[load] for f in figures if load in f.profiles}
            for load in ("POST", "GET")
        }
        print("\n== where the gateway's CPU goes (py-spy, GIL-holding samples: outside_profile.py)")
        print(profile_table(by_load))
    for f in figures:
        for note in f.notes:
            print(f"  {f.subject.label}: {note}")
    tick = 1 / os.sysconf("SC_CLK_TCK")
    print(
        f"  idle CPU is counted in {tick * 1000:g} ms ticks: over {args.idle:g} s one tick "
        f"is {tick * 60 / args.idle:.2f} s/min (0 means less than that)"
    )
    print(
        "  machine: {} CPUs; load average (1/5/15 min) {} at start, {} at end".format(
            os.cpu_count(), *("/".join(f"{x:.2f}" for x in avg) for avg in load)
        )
    )
    if args.json is None:
        return
    document = {
        "load_start": load[0],
        "load_end": load[1],
        "rows": [row.__dict__ for row in ROWS],
        "subjects": {
            f.subject.key: {"label": f.subject.label, "values": f.values, "notes": f.notes}
            for f in figures
        },
    }
    text = json.dumps(document, indent=2)
    if args.json == "-":
        print(text)
    else:
        Path(args.json).write_text(text + "\n")


def main(argv: Sequence[str]) -> int:
    """Start the gateways, measure, print the table; return the process exit code."""
    args = _parse(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    load_start = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="xmrgate-outside-"))
    started = time.monotonic()
    print(f"bench.outside: work dir {workdir}", flush=True)
    try:
        with contextlib.ExitStack() as stack:
            figures = _run(args, workdir, stack)
    except KeyboardInterrupt:
        print("\ninterrupted: everything started was ended", flush=True)
        return 130
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n(run took {time.monotonic() - started:.0f} s)")
    _report(args, figures, [load_start, os.getloadavg()])
    return 1 if any(f.notes and "failed" in " ".join(f.notes) for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
