"""A Greenfield invoice beside a fiat ``POST /receive``.

Target: ``POST /api/v1/stores/{s}/invoices`` within 1.5x the time of a fiat-priced
``POST /receive``. One gateway per backend (PostgreSQL, then SQLite), on its own
wallet-rpc, pricing EUR from fake rate providers on loopback (``testsupport.fake_rates``,
as ``tests/integration/test_fiat_prices.py``); an operator key (``--api-key``) and a key
of the default store with scopes read+receive, sent as ``Authorization: token <key>``
to Greenfield (as BTCPay's PHP client does) and ``Bearer <key>`` to ``/receive``:

- receive: ``POST /receive {"price": {"amount": "12.34", "currency": "EUR"}}``
- greenfield: ``POST /api/v1/stores/default/invoices {"amount": "12.34", "currency": "EUR",
  "metadata": {"orderId": "<n>"}, "checkout": {...every option null, as the PHP client
  sends them when the shop sets none}}``

Both kinds see the same machine state. Sequential: one client on one keep-alive
connection sends receive, greenfield, receive, greenfield, ... (which goes first flips
each round). 16 clients: a block of each kind per round (16 keep-alive connections,
``--burst`` requests each), the order of the blocks flipping each round. Only 200 answers
count. Every request takes a subaddress from the address pool; the pool is sized for the
whole run (plus a margin) and filled before the gateway reports ready, with a low-water
mark of 1, so no refill runs while measuring and no request waits for the wallet.

The client is a child process (``bench/greenfield_client.py``, raw HTTP/1.1 on asyncio
streams, as ``bench/loadgen.py``) so that it shares no interpreter lock with the fake
providers; ``bench/greenfield_probes.py`` counts transactions and profiles.

``python -m bench.greenfield`` (options below) or ``python -m bench --only greenfield``.
With ``--profile always`` (or auto, when the sequential ratio is over 1.5x) py-spy
samples the gateway during sequential runs of each kind (PostgreSQL).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench import runner
from bench.common import (
    Context,
    Figure,
    fresh_database,
    fresh_wallet,
    hostport,
    median,
    percentile,
    section,
)
from bench.greenfield_client import parts, run_client
from bench.greenfield_probes import profile, transactions
from testsupport.fake_rates import FakeRates
from testsupport.gateway import GatewayProcess
from testsupport.processes import wait_until

NAME = "greenfield"
TARGET_RATIO = 1.5
OPERATOR = "bench-greenfield-operator-key-0123456789"
RATES = {"coingecko": "150.00", "kraken": "150.30", "cryptocompare": "149.90"}
KINDS = ("receive", "greenfield")
CONCURRENCY = 16
WARMUP = 20  # requests of each kind before measuring (connections, caches, JIT-free paths)
POOL_MARGIN = 200
# --------------------------------------------------------------------------- the gateway


def _pool_needed(args: argparse.Namespace) -> int:
    per_round = 2 * args.sequential + 2 * CONCURRENCY * args.burst
    return int(args.rounds * per_round + 2 * WARMUP + POOL_MARGIN)


@contextmanager
def _gateway(
    ctx: Context, backend: str, rates: FakeRates, pool: int, extra: list[str]
) -> Iterator[GatewayProcess]:
    """A started gateway on ``backend`` with a full pool and the EUR rate known."""
    with ExitStack() as stack:
        wallet = fresh_wallet(ctx.devnet, f"bench-greenfield-{backend}", open_wallet=False)
        stack.callback(wallet.stop)
        workdir = Path(ctx.workdir) / f"{NAME}-{backend}"
        if backend == "postgresql":
            database = stack.enter_context(fresh_database())
        else:
            workdir.mkdir(parents=True, exist_ok=True)
            database = str(workdir / "xmrgate.sqlite3")
        args = [
            "--api-key",
            OPERATOR,
            "--rate-currencies",
            "EUR",
            "--rate-source-url",
            rates.option(),
            "--rate-lock",
            "10m",
            "--address-pool-size",
            str(pool),
            "--address-pool-low-water",
            "1",
            *extra,
        ]
        gateway = GatewayProcess(workdir, wallet.url, database, args)
        stack.callback(gateway.close)
        started = time.monotonic()
        gateway.start(wait=False)
        gateway.wait_ready(timeout=900)  # ready once the pool is filled
        auth = {"Authorization": f"Bearer {OPERATOR}"}

        def probe() -> tuple[bool, str]:
            answer = gateway.get("/rates", params={"currency": "EUR"}, headers=auth)
            return answer.status_code == 200 and answer.json().get("rate") is not None, answer.text

        wait_until("the EUR rate", probe, timeout=30, log=gateway.log_path, proc=gateway.proc)
        print(
            f"  {backend}: gateway ready with a pool of {pool:,} in "
            f"{time.monotonic() - started:.0f}s",
            flush=True,
        )
        yield gateway


def _store_key(gateway: GatewayProcess) -> str:
    made = gateway.post(
        "/stores/default/keys",
        json={"scopes": ["read", "receive"]},
        headers={"Authorization": f"Bearer {OPERATOR}"},
    )
    if made.status_code != 200:
        raise RuntimeError(f"store key: {made.status_code} {made.text}")
    return str(made.json()["key"])


def _check(gateway: GatewayProcess, key: str) -> None:
    """One of each kind answers 200 (not measured)."""
    for kind in KINDS:
        path, headers, body = parts(kind, 0, key)
        answer = gateway.post(path, content=body, headers=headers)
        if answer.status_code != 200:
            raise RuntimeError(f"{kind}: {answer.status_code} {answer.text[:500]}")


# --------------------------------------------------------------------------- measuring


def _measure(gateway: GatewayProcess, key: str, args: argparse.Namespace) -> dict[str, Any]:
    host, port = hostport(gateway.url)
    common = {"host": host, "port": port, "key": key, "described": args.receive_description}
    seq: dict[str, list[float]] = {k: [] for k in KINDS}
    conc: dict[str, list[float]] = {k: [] for k in KINDS}
    rates: dict[str, list[float]] = {k: [] for k in KINDS}
    bad = {k: 0 for k in KINDS}
    base = 1_000_000
    run_client(common | {"mode": "sequential", "first": "receive", "count": WARMUP, "base": 1})
    for r in range(args.rounds):
        first = KINDS[r % 2]
        got = run_client(
            common | {"mode": "sequential", "first": first, "count": args.sequential, "base": base}
        )
        base += args.sequential
        for kind in KINDS:
            seq[kind] += got[kind]
            bad[kind] += got["bad"][kind]
        if args.burst <= 0:
            continue
        for kind in KINDS if r % 2 == 0 else tuple(reversed(KINDS)):
            block = run_client(
                common
                | {
                    "mode": "block",
                    "kind": kind,
                    "clients": CONCURRENCY,
                    "count": args.burst,
                    "base": base,
                }
            )
            base += CONCURRENCY * args.burst
            conc[kind] += block["latencies"]
            rates[kind].append(len(block["latencies"]) / block["wall"])
            bad[kind] += block["bad"]
    return {"seq": seq, "conc": conc, "rates": rates, "bad": bad}


def _stats(seconds: list[float]) -> tuple[float, float, float]:
    ms = [1000 * s for s in seconds]
    return (min(ms) if ms else float("nan"), median(ms), percentile(ms, 0.95))


def _report(ctx: Context, backend: str, got: dict[str, Any], load: str) -> float:
    """Print the table of one backend, add its figures; return the sequential ratio."""
    print(f"  {backend} ({load}):")
    print(f"    {'':<28} {'n':>5} {'min ms':>8} {'median':>8} {'p95':>8} {'req/s':>8}")
    medians: dict[str, dict[str, float]] = {"seq": {}, "conc": {}}
    for mode, label in (("seq", "sequential"), ("conc", f"{CONCURRENCY} clients")):
        for kind in KINDS:
            values = got[mode][kind]
            if not values:
                continue
            lo, mid, p95 = _stats(values)
            medians[mode][kind] = mid
            rate = f"{median(got['rates'][kind]):8.0f}" if mode == "conc" else f"{'':8}"
            bad = got["bad"][kind]
            print(
                f"    {label + ' ' + kind:<28} {len(values):>5} {lo:8.2f} {mid:8.2f} {p95:8.2f} "
                f"{rate}" + (f"  ({bad} not 200)" if bad else ""),
                flush=True,
            )
    ratio = float("nan")
    for mode, label in (("seq", "sequential"), ("conc", f"{CONCURRENCY} clients")):
        if len(medians[mode]) < 2:
            continue
        g, r = medians[mode]["greenfield"], medians[mode]["receive"]
        tails = {kind: _stats(got[mode][kind])[2] for kind in KINDS}
        value = g / r
        if mode == "seq":
            ratio = value
        ctx.add(
            Figure(
                NAME,
                f"{backend}, {label}: greenfield/receive median",
                value,
                "x",
                TARGET_RATIO,
                note=f"median {g:.2f} vs {r:.2f} ms; p95 {tails['greenfield']:.2f} vs "
                f"{tails['receive']:.2f} ms",
            )
        )
    return ratio


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.greenfield", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sequential", type=int, default=100, help="pairs per round")
    parser.add_argument(
        "--burst", type=int, default=4, help="requests per client per 16-client block (0: none)"
    )
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--profile", choices=("auto", "always", "never"), default="auto")
    parser.add_argument("--profile-count", type=int, default=200)
    parser.add_argument(
        "--receive-description",
        action="store_true",
        help="receive sends description <n> too (labelled in the wallet, as the order id is)",
    )
    parser.add_argument(
        "--count-transactions",
        type=int,
        default=100,
        metavar="N",
        help="PostgreSQL: transactions and rows per create over N of each kind (0: skip)",
    )
    parser.add_argument("--keep-workdir", action="store_true")
    args = parser.parse_args(argv)
    args.backends = [b for b in args.backends.split(",") if b]
    return args


def run(ctx: Context, options: argparse.Namespace | None = None) -> None:
    """Both kinds on each backend; the ratio of the medians, greenfield over receive."""
    args = options or _parse(
        ["--rounds", str(ctx.repeats), "--profile", ctx.profile]
        + ["--sequential", "60", "--burst", "4"] * ctx.quick
    )
    profile_pool = (args.profile_count + 40) if args.profile != "never" else 0
    pool = _pool_needed(args) + 2 * profile_pool + 2 * args.count_transactions
    section(
        f"greenfield vs receive: {args.rounds} rounds of {args.sequential} sequential pairs"
        + (f" and {CONCURRENCY} x {args.burst} per kind" if args.burst else "")
        + f"; backends {', '.join(args.backends)}; load {os.getloadavg()[0]:.2f}"
    )
    with FakeRates() as rates:
        for source, value in RATES.items():
            rates.set(source, "EUR", value)
        for backend in args.backends:
            with _gateway(ctx, backend, rates, pool, ctx.gateway_args) as gateway:
                key = _store_key(gateway)
                _check(gateway, key)
                before = os.getloadavg()
                got = _measure(gateway, key, args)
                after = os.getloadavg()
                load = f"load {before[0]:.2f} -> {after[0]:.2f} (1 min)"
                ratio = _report(ctx, backend, got, load)
                wants = args.profile == "always" or (
                    args.profile == "auto" and ratio > TARGET_RATIO
                )
                if backend == "postgresql" and args.count_transactions:
                    transactions(gateway, key, args.count_transactions)
                if wants and backend == args.backends[0]:
                    profile(ctx, gateway, key, args.profile_count)
                ctx.record_rss(f"greenfield: {backend}", gateway.peak_rss_kib())


def main(argv: list[str]) -> int:
    """``python -m bench.greenfield``: ``python -m bench --only greenfield`` with options."""
    args = _parse(argv)
    flags = ["--only", NAME, "--repeats", str(args.rounds), "--profile", args.profile]
    flags += ["--keep-workdir"] * args.keep_workdir
    return runner.main(flags, {NAME: lambda ctx: run(ctx, args)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
