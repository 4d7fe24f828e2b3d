"""``xmrgate dev``: a local regtest playground for integrating against xmrgate.

``xmrgate dev`` starts monerod (regtest), a funder wallet with mined coins, a
wallet-rpc for the gateway, and the gateway itself on SQLite, then prints the URL,
a sample payment request and how to pay it. ``xmrgate dev pay`` and ``xmrgate dev
mine`` drive that running network from another terminal through its state file.
"""

from __future__ import annotations

import argparse
import contextlib
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

DEFAULT_DIR = Path(".devnet")
STATE_FILE = "state.json"
PICONERO_PER_XMR = 10**12


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
    if options.action == "pay":
        net = _attach(workdir)
        tx = net.pay(options.address, parse_amount(options.amount), mine_blocks=options.blocks)
        print(f"paid: tx {tx}, mined {options.blocks} block(s); chain height {net.height()}")
        print("  10 more blocks unlock it:  xmrgate dev mine 10")
    elif options.action == "mine":
        print(f"chain height {_attach(workdir).mine(options.blocks)}")
    else:
        command = "xmrgate dev" if options.dir == DEFAULT_DIR else f"xmrgate dev --dir {workdir}"
        run(workdir, options.bind, command)


def _attach(workdir: Path) -> Devnet:
    try:
        return Devnet.attach(workdir / STATE_FILE)
    except (DevnetError, KeyError) as exc:
        raise SystemExit(
            f"xmrgate dev: no running playground in {workdir} ({exc}); start one with: xmrgate dev"
        ) from None


def run(workdir: Path, bind: str, command: str = "xmrgate dev") -> None:
    """Start everything, serve until Ctrl-C, then stop every process we started."""
    import uvicorn

    from xmrgate.api.app import create_app
    from xmrgate.config import Settings
    from xmrgate.logs import setup_logging

    workdir.mkdir(parents=True, exist_ok=True)
    setup_logging("pretty")
    print(f"starting a regtest network in {workdir} (about half a minute)...", flush=True)
    net = Devnet(workdir / f"net-{int(time.time())}")
    try:
        net.start()
        wallet = net.start_wallet_rpc("gateway")
        net.write_state(workdir / STATE_FILE)
        settings = Settings(
            bind=bind,
            rpc_address=wallet.url,
            sqlite=str(workdir / "xmrgate.sqlite3"),
            poll_frequency=1.0,
        )
        server = uvicorn.Server(
            uvicorn.Config(
                create_app(settings),
                host=settings.bind_host,
                port=settings.bind_port,
                log_config=None,
                access_log=False,
            )
        )
        url = f"http://{bind}"
        threading.Thread(
            target=_announce, args=(url, settings.checkout, command), daemon=True
        ).start()

        def on_term(_signum: int, _frame: FrameType | None) -> None:
            server.should_exit = True

        signal.signal(signal.SIGTERM, on_term)
        server.run()
    finally:
        print("stopping the regtest network...", flush=True)
        net.stop()
        with contextlib.suppress(OSError):
            (workdir / STATE_FILE).unlink()


def _announce(url: str, checkout: bool, command: str) -> None:
    """Wait for the gateway, create a sample request and print how to pay it."""
    with httpx.Client(timeout=10) as client:
        for _ in range(600):
            with contextlib.suppress(httpx.HTTPError):
                if client.get(url + "/health").status_code == 200:
                    break
            time.sleep(0.2)
        else:
            print("the gateway did not become healthy; see the log above", file=sys.stderr)
            return
        sample = client.post(
            url + "/receive", json={"amount": 1_500_000_000_000, "description": "Sample order"}
        ).json()
    address = sample["address"]
    lines = [
        "",
        "=" * 72,
        f"xmrgate is running on {url}  (regtest; Ctrl-C stops everything)",
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
        "=" * 72,
        "",
    ]
    print("\n".join(lines), flush=True)
