"""The benchmarks' runner: options, one regtest network, the table of figures and targets.

``python -m bench`` (``bench/__main__.py``) runs it over every benchmark;
``python -m bench.stores`` over that one. It imports no benchmark: each caller names
those it may run, so no benchmark module and the runner import each other.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence, Set
from pathlib import Path
from types import FrameType

from bench import baseline
from bench.common import PG_ADMIN_URL, Context, fmt
from xmrgate.devnet import Devnet

# One benchmark: it measures, prints its section and adds its figures to the context.
Benchmark = Callable[[Context], None]


def _parse(
    argv: Sequence[str], benchmarks: Mapping[str, Benchmark], opt_in: Set[str]
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="xmrgate benchmarks (real regtest network, real PostgreSQL).",
    )
    parser.add_argument(
        "--only",
        default="",
        help=f"comma-separated subset of: {', '.join(benchmarks)} "
        f"(default: all but {', '.join(sorted(opt_in))})",
    )
    parser.add_argument(
        "--quick", action="store_true", help="shorter runs and fewer repeats (a smoke test)"
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="repeats of each measurement (default 3, quick 2)"
    )
    parser.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="py-spy profile of the gateway when a throughput target is missed (default auto)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--gateway-args",
        default="",
        help="extra options for the gateway of the read benchmark, e.g. '--workers 2' "
        "(CPU per request then counts only the supervisor process)",
    )
    parser.add_argument(
        "--baseline",
        default="",
        metavar="REV",
        help="also measure the gateway of git revision REV (a temporary worktree under /tmp) "
        "in the same run, and print this version's ratio to it (read, create, callbacks, stores)",
    )
    parser.add_argument(
        "--keep-workdir", action="store_true", help="keep logs and wallets (printed path)"
    )
    return parser.parse_args(list(argv))


def _table(ctx: Context) -> str:
    rows = [("benchmark", "figure", "value", "target", "verdict")]
    for f in ctx.figures:
        target = "-"
        if f.target is not None:
            target = f"{'>=' if f.higher_is_better else '<'} {fmt(f.target)} {f.unit}"
        rows.append((f.bench, f.name, f"{fmt(f.value)} {f.unit}", target, f.verdict()))
    peaks: dict[str, int] = {}
    for phase, kib in ctx.rss:
        peaks[phase] = max(peaks.get(phase, 0), kib)
    for phase, kib in peaks.items():
        rows.append(
            ("rss", f"gateway peak RSS (VmHWM), {phase}", f"{kib / 1024:.1f} MiB", "-", "-")
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    # Turn SIGTERM into KeyboardInterrupt so every finally block stops its processes.
    raise KeyboardInterrupt


def main(
    argv: Sequence[str], benchmarks: Mapping[str, Benchmark], opt_in: Set[str] = frozenset()
) -> int:
    """Run the benchmarks of ``benchmarks`` that ``--only`` names (default: all but those
    of ``opt_in``) on one regtest network; return the process exit code."""
    args = _parse(argv, benchmarks, opt_in)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    names = names or [n for n in benchmarks if n not in opt_in]
    unknown = [n for n in names if n not in benchmarks]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(benchmarks)}")
        return 2
    signal.signal(signal.SIGTERM, _on_sigterm)
    repeats = args.repeats or (2 if args.quick else 3)
    workdir = Path(tempfile.mkdtemp(prefix="xmrgate-bench-"))
    started = time.monotonic()
    print(
        f"xmrgate benchmarks: {', '.join(names)}; {os.cpu_count()} CPUs; repeats {repeats}"
        f"{'; quick' if args.quick else ''}; PostgreSQL {PG_ADMIN_URL.rsplit('/', 1)[0]}; "
        f"work dir {workdir}",
        flush=True,
    )
    devnet = Devnet(workdir / "devnet")
    ctx = Context(
        devnet=devnet,
        workdir=workdir,
        quick=args.quick,
        repeats=repeats,
        profile=args.profile,
        gateway_args=args.gateway_args.split(),
    )
    failed: list[str] = []
    stack = contextlib.ExitStack()
    try:
        if args.baseline:
            ctx.baseline = stack.enter_context(baseline.checkout(args.baseline))
            print(f"baseline {ctx.baseline.rev[:7]} checked out in {ctx.baseline.path}", flush=True)
        devnet.start()
        print(
            f"devnet up in {time.monotonic() - started:.0f}s (height {devnet.height()})", flush=True
        )
        for name in names:
            try:
                benchmarks[name](ctx)
            except KeyboardInterrupt:
                raise
            except Exception as exc:
                failed.append(name)
                print(f"!! benchmark {name} failed: {type(exc).__name__}: {exc}", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up", flush=True)
        return 130
    finally:
        devnet.stop()
        stack.close()
        if args.keep_workdir:
            print(f"work dir kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n== results ({time.monotonic() - started:.0f}s; machine shared, figures are medians)")
    print(_table(ctx))
    for label, summary in ctx.profiles:
        print(f"\n== profile: {label}\n{summary}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "figures": [f.__dict__ | {"met": f.met, "ratio": f.ratio} for f in ctx.figures],
                    "rss_kib": ctx.rss,
                    "profiles": ctx.profiles,
                },
                indent=2,
            )
        )
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
        return 1
    return 0
