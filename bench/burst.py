"""Bursts of ``POST /receive`` past the address pool, beside the previous main.

``python -m bench.burst [--baseline REV] [--repeats N]`` starts its own regtest devnet
and, for this working tree ("new") and ``REV`` ("baseline", a temporary git worktree
under /tmp), runs each scenario on a fresh wallet-rpc, a fresh SQLite file and a
gateway with the version's DEFAULT settings (only port, wallet, database and, when
asked, the poll period are given), alternating which version goes first per repeat:

1. right after start: /health 200, then 200 sequential requests;
2. 1,000 sequential requests while the devnet's funder pays one of the addresses just
   made about once a second and a block is mined every few seconds (so the gateway's
   sync ticks find something and keep the single-threaded wallet busy);
3. the same from 16 concurrent clients;
4. the bound: ``create_address`` sent straight to a fresh wallet-rpc (1, 16, 64 per call,
   and 64 followed by ``store``: a refill saves each batch before offering it).

It prints each run, then a Markdown table. ``finally`` blocks end every process by PID,
also on SIGTERM and Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import httpx

from bench.baseline import Baseline, checkout, same_gateway
from bench.common import fresh_wallet, median
from testsupport.gateway import count_rows
from xmrgate.devnet import Devnet

SCENARIOS = {  # name: (title, requests)
    "start": ("200 sequential, right after start", 200),
    "sequential": ("1,000 sequential, wallet syncing", 1_000),
    "clients": ("1,000 from 16 clients, wallet syncing", 1_000),
}
CLIENTS = 16
PAY_EVERY = 1.0  # seconds between the funder's payments during a burst
MINE_EVERY = 3.0  # seconds between mined blocks during a burst
PAY_AMOUNT = 10_000_000  # 0.00001 XMR: small, so the funder's outputs last the run
BOUND_SECONDS = 2.0  # per create_address shape
# addresses per call, and whether ``store`` follows (a refill batch saves before it offers)
BOUND_SHAPES = {"count 1": (1, False), "count 16": (16, False), "count 64": (64, False)}
BOUND_SHAPES["count 64 + store"] = (64, True)
TIMEOUT = 30.0  # per request: the gateway answers within its own 5 s wait
BODY = {"amount": 1_000_000_000, "description": "bench burst"}

# (request number from 1, status or 0 for a transport error, seconds since the start, body)
Answer = tuple[int, int, float, str]


@dataclass
class Burst:
    """One burst's answers and what happened around it."""

    answers: list[Answer]
    wall: float
    ready: float = 0.0  # seconds from spawning the gateway to /health 200
    pooled: int = 0  # subaddresses in the pool at /health 200
    payments: int = 0
    blocks: int = 0

    @property
    def ok(self) -> int:
        """Answers with status 200."""
        return sum(1 for a in self.answers if a[1] == 200)

    @property
    def refused(self) -> list[int]:
        """Request numbers answered 503."""
        return sorted(a[0] for a in self.answers if a[1] == 503)

    @property
    def rate(self) -> float:
        """200s per second of the whole burst."""
        return self.ok / self.wall

    def past(self, first: int) -> float:
        """200s per second after the first ``first`` answers (the pool's share); NaN if none."""
        done = sorted(self.answers, key=lambda a: a[2])
        if len(done) <= first or first < 1:
            return float("nan")
        later = done[first:]
        span = later[-1][2] - done[first - 1][2]
        return sum(1 for a in later if a[1] == 200) / span if span > 0 else float("nan")

    def refusal(self) -> str:
        """The first non-200 answer's body ("" when all were 200)."""
        return next((a[3] for a in self.answers if a[1] != 200), "")


@dataclass
class Version:
    """One version of the gateway, its default pool, and its bursts per scenario."""

    label: str
    baseline: Baseline | None
    pool_size: int
    low_water: int
    runs: dict[str, list[Burst]] = field(default_factory=dict)


def _pool_defaults(baseline: Baseline | None) -> tuple[int, int]:
    """The version's own default pool size and low-water mark (read from its code)."""
    env = dict(os.environ)
    if baseline is not None:
        env["PYTHONPATH"] = str(baseline.path / "src")
    code = (
        "from xmrgate.config import Settings as S; f = S.model_fields; "
        "print(f['address_pool_size'].default, f['address_pool_low_water'].default)"
    )
    command = [sys.executable, "-c", code]
    out = subprocess.run(command, env=env, cwd="/tmp", capture_output=True, text=True, check=True)
    size, low = out.stdout.split()
    return int(size), int(low)


class ChainLoad:
    """Pays one of the newest addresses about once a second and mines every few seconds.

    One thread does both, so the devnet's funder and HTTP client are used by one caller.
    """

    def __init__(self, devnet: Devnet, addresses: list[str], *, active: bool) -> None:
        self._devnet = devnet
        self._active = active
        self._addresses = addresses
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chain-load", daemon=True)
        self.payments = 0
        self.blocks = 0
        self.failures: list[str] = []

    def __enter__(self) -> ChainLoad:
        if self._active:
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._active:
            self._thread.join(timeout=180)  # a transfer in flight finishes first

    def _run(self) -> None:
        began = time.monotonic()
        next_pay, next_mine = began + PAY_EVERY, began + MINE_EVERY
        while not self._stop.wait(max(0.0, min(next_pay, next_mine) - time.monotonic())):
            try:
                if time.monotonic() >= next_mine:
                    self._devnet.mine(1)
                    self.blocks += 1
                    next_mine += MINE_EVERY
                elif self._addresses:
                    self._devnet.pay(self._addresses[-1], PAY_AMOUNT)
                    self.payments += 1
                    # A slow transfer is not caught up by several in a row.
                    next_pay = max(next_pay + PAY_EVERY, time.monotonic())
                else:
                    next_pay += PAY_EVERY / 10  # no address yet
            except Exception as exc:  # reported after the burst; the payer goes on
                self.failures.append(getattr(exc, "message", None) or repr(exc))
                next_pay = time.monotonic() + PAY_EVERY


def _post(client: httpx.Client, url: str, n: int, began: float, made: list[str]) -> Answer:
    try:
        answer = client.post(url + "/receive", json=BODY)
    except httpx.HTTPError as exc:
        return n, 0, time.perf_counter() - began, f"{type(exc).__name__}: {exc}"
    done = time.perf_counter() - began
    if answer.status_code == 200:
        made.append(answer.json()["address"])  # list.append is atomic: the payer reads it
        return n, 200, done, ""
    return n, answer.status_code, done, answer.text[:300]


def _sequential(url: str, count: int, made: list[str]) -> Burst:
    with httpx.Client(timeout=TIMEOUT, trust_env=False) as client:
        began = time.perf_counter()
        answers = [_post(client, url, n, began, made) for n in range(1, count + 1)]
        return Burst(answers, time.perf_counter() - began)


def _concurrent(url: str, count: int, made: list[str]) -> Burst:
    """``count`` requests from CLIENTS threads, each on its own keep-alive connection."""
    numbers = iter(range(1, count + 1))
    lock = threading.Lock()
    abort = threading.Event()  # Ctrl-C: the clients stop instead of finishing the burst
    answers: list[Answer] = []
    began = time.perf_counter()

    def client_loop() -> None:
        with httpx.Client(timeout=TIMEOUT, trust_env=False) as client:
            while not abort.is_set():
                with lock:
                    n = next(numbers, None)
                if n is None:
                    return
                answers.append(_post(client, url, n, began, made))

    with ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(client_loop) for _ in range(CLIENTS)]
        try:
            for future in futures:
                future.result()
        finally:
            abort.set()
    return Burst(answers, time.perf_counter() - began)


def _ranges(numbers: Sequence[int], most: int = 6) -> str:
    """``[3, 4, 5, 9]`` -> ``#3-5, #9`` (at most ``most`` ranges)."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    text = [f"#{a}" if a == b else f"#{a}-{b}" for a, b in spans[:most]]
    return ", ".join(text) + (", ..." if len(spans) > most else "")


def _run(devnet: Devnet, workdir: Path, version: Version, scenario: str, extra: list[str]) -> None:
    """One scenario of one version on a fresh wallet-rpc, SQLite file and gateway."""
    tag = f"{scenario}-{'baseline' if version.baseline else 'new'}-{uuid.uuid4().hex[:6]}"
    with contextlib.ExitStack() as stack:
        wallet = fresh_wallet(devnet, f"burst-{tag}", open_wallet=False)
        stack.callback(wallet.stop)
        directory = workdir / tag
        gateway = same_gateway(
            version.baseline, directory, wallet.url, str(directory / "xmrgate.sqlite3"), extra
        )
        stack.callback(gateway.close)
        started = time.perf_counter()
        gateway.start()  # returns at /health 200 (the first fill is done by then)
        ready = time.perf_counter() - started
        pooled = count_rows(gateway, "address_pool")
        made: list[str] = []
        send = _concurrent if scenario == "clients" else _sequential
        with ChainLoad(devnet, made, active=scenario != "start") as load:
            burst = send(gateway.url, SCENARIOS[scenario][1], made)
        if load.failures:
            print(f"    payer failures: {load.failures[:2]}", flush=True)
        burst.ready, burst.pooled = ready, pooled
        burst.payments, burst.blocks = load.payments, load.blocks
    version.runs.setdefault(scenario, []).append(burst)
    refused = burst.refused
    other = len(burst.answers) - burst.ok - len(refused)  # neither 200 nor 503
    print(
        f"  {version.label:<16} {SCENARIOS[scenario][0]:<38} ready {ready:4.1f} s, pool {pooled}; "
        f"{burst.ok}/{len(burst.answers)} ok, {len(refused)} x 503, {other} other, "
        f"{burst.rate:.1f}/s in {burst.wall:.2f} s, past the pool "
        f"{_each([burst.past(version.pool_size)], 1)}/s"
        + (f"; {burst.payments} payments, {burst.blocks} blocks" if scenario != "start" else "")
        + (
            f"\n    503 at {_ranges(refused)}; first: {burst.refusal()[:200]}"
            if burst.refusal()
            else ""
        ),
        flush=True,
    )


def _bound(devnet: Devnet) -> dict[str, float]:
    """Addresses per second of create_address sent straight to a fresh wallet-rpc."""
    wallet = fresh_wallet(devnet, f"burst-bound-{uuid.uuid4().hex[:6]}", open_wallet=True)
    rates: dict[str, float] = {}
    try:
        for shape, (count, store) in BOUND_SHAPES.items():
            made, began = 0, time.perf_counter()
            while time.perf_counter() - began < BOUND_SECONDS:
                wallet.call("create_address", {"account_index": 0, "count": count})
                if store:
                    wallet.call("store")
                made += count
            rates[shape] = made / (time.perf_counter() - began)
    finally:
        wallet.stop()
    print("  wallet-rpc alone: " + ", ".join(f"{k} {v:.0f}/s" for k, v in rates.items()))
    return rates


def _each(values: Sequence[float], digits: int = 0) -> str:
    return " / ".join("-" if math.isnan(v) else f"{v:,.{digits}f}" for v in values)


def _table(new: Version, old: Version, bound: dict[str, list[float]]) -> str:
    """The Markdown table of every figure (medians, with each repeat in parentheses)."""
    lines = [
        "| scenario | version (pool size) | ok / total | 503 (request numbers, each repeat) "
        "| 200s per second, median (each repeat) | wall, s (each repeat) "
        "| past the pool, 200s/s (each repeat) | new / baseline |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, (title, _count) in SCENARIOS.items():
        rates = {v.label: median([b.rate for b in v.runs[key]]) for v in (new, old)}
        for v in (new, old):
            runs = v.runs[key]
            refused = "; ".join(_ranges(b.refused, 3) or "none" for b in runs)
            ok = sum(b.ok for b in runs)
            total = sum(len(b.answers) for b in runs)
            rate = rates[v.label]
            past = [b.past(v.pool_size) for b in runs]
            ratio = rates[new.label] / rates[old.label] if v is new else float("nan")
            lines.append(
                f"| {title} | {v.label} ({v.pool_size}) | {ok:,} / {total:,} "
                f"| {sum(len(b.refused) for b in runs)} ({refused}) "
                f"| {rate:,.1f} ({_each([b.rate for b in runs], 1)}) "
                f"| {_each([b.wall for b in runs], 2)} "
                f"| {_each([median(past)], 1)} ({_each(past, 1)}) "
                f"| {'-' if math.isnan(ratio) else f'{ratio:.2f}x'} |"
            )
    lines += [
        "",
        "| wallet-rpc create_address, fresh wallet | addresses/s, median (each repeat) "
        "| new's rate past the pool as a fraction: 1,000 sequential / 16 clients |",
        "|---|---|---|",
    ]
    sustained = [
        median([b.past(new.pool_size) for b in new.runs[k]]) for k in ("sequential", "clients")
    ]
    for shape, values in bound.items():
        rate = median(values)
        fractions = " / ".join(f"{s / rate:.2f}" for s in sustained)
        lines.append(f"| {shape} | {rate:,.0f} ({_each(values)}) | {fractions} |")
    return "\n".join(lines)


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    # Turn SIGTERM into KeyboardInterrupt so every finally block stops its processes.
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Run every scenario for both versions, print each run and the table; the exit code."""
    parser = argparse.ArgumentParser(prog="python -m bench.burst", description=__doc__)
    parser.add_argument("--baseline", default="d5d6357", metavar="REV")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--poll-frequency", default="", help="passed to both gateways (default: each one's own)"
    )
    parser.add_argument("--keep-workdir", action="store_true")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    extra = ["--poll-frequency", args.poll_frequency] if args.poll_frequency else []
    workdir = Path(tempfile.mkdtemp(prefix="xmrgate-burst-"))
    started = time.monotonic()
    try:
        with checkout(args.baseline) as base, Devnet(workdir / "devnet") as devnet:
            new = Version("new", None, *_pool_defaults(None))
            old = Version(base.label, base, *_pool_defaults(base))
            print(
                f"xmrgate burst benchmark: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
                f"new pool {new.pool_size}/{new.low_water}, {old.label} pool "
                f"{old.pool_size}/{old.low_water} (size/low water, defaults); SQLite; "
                f"poll {args.poll_frequency or 'default'}; devnet height {devnet.height()}; "
                f"work dir {workdir}",
                flush=True,
            )
            bound: dict[str, list[float]] = {shape: [] for shape in BOUND_SHAPES}
            for r in range(args.repeats):
                print(f"\n== repeat {r + 1}/{args.repeats}", flush=True)
                order = (new, old) if r % 2 == 0 else (old, new)
                for scenario in SCENARIOS:
                    for version in order:
                        _run(devnet, workdir, version, scenario, extra)
                for shape, rate in _bound(devnet).items():
                    bound[shape].append(rate)
    except KeyboardInterrupt:
        print("\ninterrupted: processes stopped", flush=True)
        return 130
    finally:
        if args.keep_workdir:
            print(f"work dir kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n== results ({time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.2f})\n")
    print(_table(new, old, bound))
    return 0


if __name__ == "__main__":
    sys.exit(main())
