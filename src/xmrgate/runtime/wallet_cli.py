"""``xmrgate wallet init``: create the gateway's wallet in a running monero-wallet-rpc.

``xmrgate wallet init`` creates a new wallet with its own keys. ``xmrgate wallet init
--view-only --address A --view-key V [--restore-height H]`` creates a view-only wallet
from the primary address and the secret view key of a wallet kept elsewhere: the
gateway then takes payments but holds no key that can spend them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from xmrgate.adapters.wallet_rpc import DEFAULT_WALLET_NAME, WalletClient
from xmrgate.adapters.wallet_setup import CreatedWallet, WalletSetup
from xmrgate.config import Settings
from xmrgate.domain.errors import WalletUnavailable, XmrgateError
from xmrgate.runtime.logs import redact_url

PROG = "xmrgate wallet"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Create the gateway's wallet in monero-wallet-rpc."
    )
    sub = parser.add_subparsers(dest="action", required=True)
    init = sub.add_parser(
        "init",
        help="create the wallet (a new one, or a view-only one from an address and view key)",
        description=f"Create the wallet the gateway opens ({DEFAULT_WALLET_NAME!r} in "
        "wallet-rpc's --wallet-dir). Run it once, before the gateway starts, against a "
        "monero-wallet-rpc started with --wallet-dir.",
    )
    default_rpc = str(Settings.model_fields["rpc_address"].default)
    init.add_argument(
        "--rpc-address",
        default=os.environ.get("RPC_ADDRESS", default_rpc),
        help=f"URL of monero-wallet-rpc's JSON-RPC [RPC_ADDRESS] (default: {default_rpc})",
    )
    init.add_argument(
        "--rpc-username", default=os.environ.get("RPC_USERNAME"), help="[RPC_USERNAME]"
    )
    init.add_argument(
        "--rpc-password", default=os.environ.get("RPC_PASSWORD"), help="[RPC_PASSWORD]"
    )
    init.add_argument(
        "--view-only",
        action="store_true",
        help="no spend key on this server: payments are seen, payouts are refused",
    )
    init.add_argument("--address", help="the wallet's primary address (with --view-only)")
    init.add_argument(
        "--view-key",
        help="the wallet's secret view key, 64 hex characters (with --view-only); "
        "'-' reads it from standard input, out of the shell's history",
    )
    init.add_argument(
        "--restore-height",
        type=int,
        help="scan from this block height: when the wallet was created or first paid "
        "(with --view-only; default 0, which scans the whole chain)",
    )
    return parser


def wallet_main(argv: Sequence[str]) -> None:
    """Entry of ``xmrgate wallet``."""
    parser = _parser()
    options = parser.parse_args(list(argv))
    if options.view_only:
        if not options.address or not options.view_key:
            parser.error("--view-only needs --address and --view-key")
        if options.view_key == "-":
            options.view_key = sys.stdin.readline().strip()
    elif options.address or options.view_key or options.restore_height is not None:
        parser.error("--address, --view-key and --restore-height go with --view-only")
    try:
        created = asyncio.run(_init(options))
    except WalletUnavailable as exc:
        raise SystemExit(
            f"{PROG} init: wallet-rpc at {redact_url(options.rpc_address)} is not usable "
            f"({exc.message}): start monero-wallet-rpc with --wallet-dir first"
        ) from None
    except XmrgateError as exc:
        raise SystemExit(f"{PROG} init: {exc.message}") from None
    print(_report(created, options.rpc_address))


async def _init(options: argparse.Namespace) -> CreatedWallet:
    client = WalletClient(
        options.rpc_address, username=options.rpc_username, password=options.rpc_password
    )
    try:
        setup = WalletSetup(client)
        if options.view_only:
            return await setup.create_view_only(
                options.address,
                options.view_key,
                restore_height=options.restore_height,
            )
        return await setup.create_full()
    finally:
        await client.aclose()


def _report(created: CreatedWallet, rpc_address: str) -> str:
    where = redact_url(rpc_address)
    if created.view_only:
        height = created.restore_height if created.restore_height is not None else 0
        return "\n".join(
            [
                f"created the view-only wallet {created.filename!r} in wallet-rpc at {where}",
                f"  address:        {created.address}",
                f"  restore height: {height} (the wallet scans the chain from there)",
                "No spend key is on this server: the gateway takes payments, and POST /transfer",
                "answers 409. Its balance cannot see spends made elsewhere (docs/view-only.md).",
                f"Start the gateway:  xmrgate --rpc-address {where}",
            ]
        )
    return "\n".join(
        [
            f"created the wallet {created.filename!r} in wallet-rpc at {where}",
            f"  address: {created.address}",
            "Back up its seed now: whoever has it has the money. With the wallet open, ask",
            "wallet-rpc once for query_key with key_type 'mnemonic', and keep it offline.",
            f"Start the gateway:  xmrgate --rpc-address {where}",
        ]
    )
