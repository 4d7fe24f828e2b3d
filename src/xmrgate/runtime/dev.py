"""``xmrgate dev``: a local regtest playground for integrating against xmrgate.

``xmrgate dev`` starts monerod (regtest), a funder wallet with mined coins, a
wallet-rpc for the gateway, and the gateway itself on SQLite, then prints the URL, the
pages to open (dashboard, point of sale, payment link, fiat checkout: made by
:mod:`xmrgate.runtime.dev_showcase`, fiat priced offline at the fixed playground rate),
a sample payment request and how to pay it. ``xmrgate dev pay`` and ``xmrgate dev
mine`` drive that running network from another terminal through its state file.

Every start makes a new chain and a new gateway wallet, so it starts on a new database
too; a gateway that does not become healthy in time ends the playground with the reason
and what to do (:mod:`xmrgate.runtime.dev_guards`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import shutil
import signal
import sys
import threading
import time
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from types import FrameType

import httpx

from xmrgate.devnet import Devnet, DevnetError
from xmrgate.runtime.dev_guards import (
    DATABASE,
    HEALTH_DEADLINE,
    HEALTH_DEADLINE_ENV,
    STATE_FILE,
    PlaygroundUnhealthy,
    RecentProblems,
    running_pids,
    set_aside_database,
    unhealthy_message,
    wait_healthy,
)
from xmrgate.runtime.dev_showcase import (
    PLAYGROUND_RATE_SETTINGS,
    Showcase,
    ShowcaseError,
    make_showcase,
    showcase_lines,
)

DEFAULT_DIR = Path(".devnet")
PICONERO_PER_XMR = 10**12
# A playground: callbacks to a shop on this machine are allowed (a real gateway refuses them).
DEV_CALLBACK_ALLOW = "127.0.0.0/8,::1"


def parse_amount(text: str) -> int:
    """Piconero from ``"1500000000"`` (piconero) or ``"0.5xmr"`` / ``"0.5"`` (XMR, exact)."""
    value = text.strip().lower().removesuffix("xmr").strip()
    try:
        if "." in value or text.strip().lower().endswith("xmr"):
            amount = Decimal(value) * PICONERO_PER_XMR
            if amount != amount.to_integral_value():
                raise ValueError("more than 12 decimals")
            result = int(amount)
        else:
            result = int(value)
    except (InvalidOperation, ValueError) as exc:
        raise SystemExit(f"xmrgate dev: not an amount: {text!r} ({exc})") from None
    if result <= 0:
        raise SystemExit("xmrgate dev: the amount must be positive")
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xmrgate dev", description="Local regtest playground for xmrgate."
    )
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="working directory")
    parser.add_argument("--bind", default="127.0.0.1:5000", help="gateway address (host:port)")
    parser.add_argument(
        "--view-only",
        action="store_true",
        help="give the gateway a view-only wallet (its spend key stays in a cold wallet): "
        "payments work, POST /transfer answers 409",
    )
    sub = parser.add_subparsers(dest="action")
    pay = sub.add_parser("pay", help="pay an address from the funder wallet and mine a block")
    pay.add_argument("address")
    pay.add_argument("amount", help="piconero, or XMR with a dot or 'xmr' suffix (0.5xmr)")
    pay.add_argument("--blocks", type=int, default=1, help="blocks to mine after paying")
    mine = sub.add_parser("mine", help="mine blocks (10 confirmations unlock a payment)")
    mine.add_argument("blocks", type=int, nargs="?", default=10)
    return parser


def dev_main(argv: Sequence[str]) -> None:
    """Entry of ``xmrgate dev``."""
    options = _parser().parse_args(list(argv))
    workdir: Path = options.dir.resolve()
    command = dev_command(workdir if options.dir != DEFAULT_DIR else None)
    if options.action == "pay":
        net = _attach(workdir)
        tx = net.pay(options.address, parse_amount(options.amount), mine_blocks=options.blocks)
        print(f"paid: tx {tx}, mined {options.blocks} block(s); chain height {net.height()}")
        print(f"  10 more blocks unlock it:  {command} mine 10")
    elif options.action == "mine":
        print(f"chain height {_attach(workdir).mine(options.blocks)}")
    else:
        run(workdir, options.bind, command, view_only=options.view_only)


def invocation() -> str:
    """The command that runs this xmrgate again, as the user can type it here.

    ``make dev`` runs ``.venv/bin/xmrgate``, which is not on PATH: the banner must print
    that path, not a bare ``xmrgate`` (a relative path works from the same directory).
    """
    script = sys.argv[0]
    if Path(script).name == "__main__.py":  # python -m xmrgate
        return f"{shlex.quote(sys.executable)} -m xmrgate"
    found = shutil.which("xmrgate")
    if found and Path(found).resolve() == Path(script).resolve():
        return "xmrgate"
    return shlex.quote(script)


def dev_command(workdir: Path | None) -> str:
    """``<xmrgate> dev`` (with ``--dir`` unless it is the default) for printed commands."""
    if workdir is not None:
        return f"{invocation()} dev --dir {shlex.quote(str(workdir))}"
    return f"{invocation()} dev"


def _attach(workdir: Path) -> Devnet:
    try:
        return Devnet.attach(workdir / STATE_FILE)
    except (DevnetError, KeyError) as exc:
        raise SystemExit(
            f"xmrgate dev: no running playground in {workdir} ({exc}); "
            f"start one with: {dev_command(workdir)}"
        ) from None


def run(workdir: Path, bind: str, command: str = "xmrgate dev", *, view_only: bool = False) -> None:
    """Start everything, serve until Ctrl-C, then stop every process we started.

    Exits non-zero (after stopping everything) when the network does not start or the
    gateway does not become healthy, saying why and what to do.
    """
    import uvicorn

    from xmrgate.config import Settings
    from xmrgate.runtime.app import build_app
    from xmrgate.runtime.logs import setup_logging

    workdir.mkdir(parents=True, exist_ok=True)
    running = running_pids(workdir)
    if running:
        # Setting its database aside under it would break the playground that runs.
        pids = " ".join(map(str, running))
        raise SystemExit(
            f"xmrgate dev: a playground is already running in {workdir} (processes {pids}): "
            f"stop it with Ctrl-C in its terminal (or: kill {pids}), or give this one "
            "another --dir"
        )
    deadline = float(os.environ.get(HEALTH_DEADLINE_ENV) or HEALTH_DEADLINE)
    setup_logging("pretty")
    problems = RecentProblems()
    logging.getLogger().addHandler(problems)
    print(f"starting a regtest network in {workdir} (about half a minute)...", flush=True)
    previous = set_aside_database(workdir)
    if previous is not None:
        print(f"a new network, so a new database: the previous one is now {previous}", flush=True)
    net = Devnet(workdir / f"net-{int(time.time())}")
    failure: list[str] = []
    # Ctrl-C or SIGTERM while the network starts: stop quietly (uvicorn has its own
    # handlers while it serves and puts these back when it is done).
    signal.signal(signal.SIGINT, _interrupt_once)
    signal.signal(signal.SIGTERM, _interrupt_once)
    try:
        net.start()
        wallet = net.start_wallet_rpc("gateway")
        if view_only:
            _view_only_wallet(net, wallet.url)
        net.write_state(workdir / STATE_FILE)
        settings = Settings(
            bind=bind,
            rpc_address=wallet.url,
            sqlite=str(workdir / DATABASE),
            poll_frequency=1.0,
            # The playground's monerod tells the gateway at once (checkout updates live).
            daemon_address=net.daemon_url,
            daemon_zmq=net.zmq_pub_url,
            callback_allow=DEV_CALLBACK_ALLOW,
            # Fiat prices offline, at a rate the banner and the pages call made up.
            **PLAYGROUND_RATE_SETTINGS,
        )
        server = uvicorn.Server(
            uvicorn.Config(
                build_app(settings),
                host=settings.bind_host,
                port=settings.bind_port,
                log_config=None,
                access_log=False,
            )
        )
        url = f"http://{bind}"

        def announce() -> None:
            try:
                _announce(url, settings.checkout, command, view_only=view_only, deadline=deadline)
            except PlaygroundUnhealthy as exc:
                failure.append(unhealthy_message(exc, deadline, workdir, list(problems.lines)))
                server.should_exit = True  # the main thread stops everything, then exits 1

        threading.Thread(target=announce, daemon=True).start()

        def on_term(_signum: int, _frame: FrameType | None) -> None:
            server.should_exit = True

        signal.signal(signal.SIGTERM, on_term)
        server.run()
    except KeyboardInterrupt:
        # Ctrl-C: uvicorn stops serving, then raises the signal it caught again, which
        # ends up here as KeyboardInterrupt (as does one before the server runs).
        pass
    except DevnetError as exc:
        failure.append(
            f"the regtest network did not start: {exc}\n"
            f"Its logs are in {net.workdir}; to start afresh: rm -rf {shlex.quote(str(workdir))}"
        )
    finally:
        # Another Ctrl-C must not cut the clean-up short and leave monerod running.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("stopping the regtest network...", flush=True)
        net.stop()
        with contextlib.suppress(OSError):
            (workdir / STATE_FILE).unlink()
        print("stopped.", flush=True)
    if failure:
        raise SystemExit(f"xmrgate dev: {failure[0]}")


def _interrupt_once(_signum: int, _frame: FrameType | None) -> None:
    """Raise KeyboardInterrupt once; later signals are ignored until the clean-up is done."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _view_only_wallet(net: Devnet, gateway_rpc: str) -> None:
    """A cold wallet (its own wallet-rpc, stopped once made) and, in the gateway's
    wallet-rpc, its view-only copy made as ``xmrgate wallet init --view-only`` does."""
    import asyncio

    from xmrgate.adapters.wallet_rpc import WalletClient
    from xmrgate.adapters.wallet_setup import WalletSetup

    cold = net.start_wallet_rpc("cold")
    cold.call("create_wallet", {"filename": "cold", "language": "English"})
    address = str(cold.call("get_address", {"account_index": 0})["address"])
    view_key = str(cold.call("query_key", {"key_type": "view_key"})["key"])
    cold.stop()  # the spend key stays in its file, away from the gateway

    async def init() -> None:
        client = WalletClient(gateway_rpc)
        try:
            await WalletSetup(client).create_view_only(
                address, view_key, restore_height=net.height()
            )
        finally:
            await client.aclose()

    asyncio.run(init())
    print(f"the gateway's wallet is view-only; the spend key is in {cold.wallet_dir}", flush=True)


def _announce(
    url: str,
    checkout: bool,
    command: str,
    *,
    view_only: bool = False,
    deadline: float = HEALTH_DEADLINE,
) -> None:
    """Wait for the gateway, create a sample request and the showcase's pages, and print
    them with how to pay the request.

    Raises :class:`PlaygroundUnhealthy` when the gateway does not become healthy (see
    :func:`wait_healthy`) or refuses the sample request.
    """
    with httpx.Client(timeout=10) as client:
        wait_healthy(client, url, deadline)
        what = f"POST {url}/receive (the sample request)"
        try:
            answer = client.post(
                url + "/receive", json={"amount": 1_500_000_000_000, "description": "Sample order"}
            )
        except httpx.HTTPError as exc:
            raise PlaygroundUnhealthy(f"{what}: no answer ({exc!r})") from exc
        if answer.status_code != 200:
            raise PlaygroundUnhealthy(f"{what}: {answer.status_code} {answer.text.strip()[:600]}")
        address = str(answer.json()["address"])
        showcase: Showcase | None = None
        problem: str | None = None
        try:
            showcase = make_showcase(client, url)
        except ShowcaseError as exc:  # the pages are extras: the playground still runs
            problem = str(exc)
    lines = [
        "",
        "=" * 72,
        f"xmrgate is running on {url}  (regtest; Ctrl-C stops everything)",
        "",
        *showcase_lines(showcase, problem, url),
        "",
        "A sample payment request for 1.5 XMR:",
        f"  curl {url}/receive/{address}",
    ]
    if checkout:
        lines.append(f"  checkout page: {url}/pay/{address}")
    lines += [
        "",
        "Pay it as a customer would (from another terminal):",
        f"  {command} pay {address} 1.5xmr",
        "Unlock it (10 confirmations):",
        f"  {command} mine 10",
        "",
        "Create your own:",
        f"""  curl -s -X POST {url}/receive -H 'Content-Type: application/json' \\""",
        """       -d '{"amount": 1000000000000, "description": "Order 42"}'""",
        "",
        "Callbacks to loopback (127.0.0.1, ::1, localhost) are allowed in this playground",
        f"(--callback-allow {DEV_CALLBACK_ALLOW}); a production gateway refuses internal",
        "addresses unless started with --callback-allow naming them.",
    ]
    if view_only:
        lines += [
            "",
            "The gateway's wallet is VIEW-ONLY: payments are seen, POST /transfer answers 409,",
            f'and {url}/health says "wallet": "view-only" (docs/view-only.md).',
        ]
    lines += [
        "=" * 72,
        "",
    ]
    print("\n".join(lines), flush=True)
