"""Command line: ``xmrgate [serve] [options]``, ``migrate``, ``dev ...``, ``wallet init``,
``store ...``.

Options are generated from ``Settings`` so each one is documented with its
environment variable. Go-style single-dash spellings (``-rpc-address``) are
accepted too, so MoneroPay command lines work unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from xmrgate import __version__
from xmrgate.config import Settings
from xmrgate.domain.durations import format_duration, parse_duration
from xmrgate.domain.fiat import RATE_SOURCE_NAMES
from xmrgate.domain.playground_rate import PLAYGROUND_RATE_NOTE, PLAYGROUND_RATE_SOURCE

log = logging.getLogger(__name__)

COMMANDS = ("serve", "migrate", "dev", "wallet", "status", "store")
EPILOG = """commands:
  serve (default)         run the gateway with the options above
  migrate                 apply database migrations and exit
  status [--url URL]      summary of a running gateway (API key: XMRGATE_API_KEY=KEY|@FILE)
  dev                     start a local regtest network and the gateway on SQLite
  dev pay ADDRESS AMOUNT  pay AMOUNT piconero from the dev funder wallet and mine a block
  dev mine [N]            mine N blocks on the dev network (10 unlock a payment)
  dev --view-only         the same, with a view-only gateway wallet (payouts refused)
  wallet init             create the gateway's wallet in wallet-rpc (a new one)
  wallet init --view-only --address A --view-key V [--restore-height H]
                          create a view-only wallet: no spend key on this server
  store add ID --account [--name NAME]
                          add a store on a new account of the main wallet
  store key ID [--scopes read+receive+transfer]
                          create an API key of the store (printed alone on stdout)
  store list [--json]     list the stores (store commands take --sqlite/--postgresql)

Every option can also be given by the environment variable in [brackets]."""


# Options given once per value on the command line (comma-separated in the environment).
REPEATABLE = frozenset({"rate_source_url"})


def _settings_parser(prog: str, *, add_help: bool = True) -> argparse.ArgumentParser:
    """The gateway's options; ``add_help=False`` (no -h, no abbreviations) picks them out
    of a subcommand's arguments."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="xmrgate: self-hosted Monero payment gateway (MoneroPay v2 compatible).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=add_help,
        allow_abbrev=add_help,
    )
    parser.add_argument("--version", action="version", version=f"xmrgate {__version__}")
    # The --rate-* options (inherited, so listed first by pydantic) come last in --help.
    fields = sorted(Settings.model_fields.items(), key=lambda item: item[0].startswith("rate_"))
    for name, field in fields:
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        flag = str(extra.get("flag") or name.replace("_", "-"))
        env = name.upper()
        default = field.default
        shown: object = "" if default is None or field.annotation is bool else default
        if any(getattr(m, "func", None) is parse_duration for m in field.metadata):
            shown = format_duration(float(default))
        help_text = f"{field.description} [{env}]" + (f" (default: {shown})" if shown != "" else "")
        help_text = help_text.replace("%", "%%")  # argparse formats help with %
        if field.annotation is bool:
            if default:
                parser.add_argument(
                    f"--no-{flag}",
                    dest=name,
                    action="store_const",
                    const=False,
                    default=None,
                    help=f"Turn off: {help_text}",
                )
            else:
                parser.add_argument(
                    f"-{flag}",
                    f"--{flag}",
                    dest=name,
                    action="store_const",
                    const=True,
                    default=None,
                    help=help_text,
                )
        elif name in REPEATABLE:
            parser.add_argument(
                f"-{flag}",
                f"--{flag}",
                dest=name,
                action="append",
                default=None,
                metavar="VALUE",
                help=f"{help_text}; repeatable",
            )
        else:
            parser.add_argument(
                f"-{flag}", f"--{flag}", dest=name, default=None, metavar="VALUE", help=help_text
            )
    return parser


def load_settings(argv: Sequence[str], prog: str = "xmrgate") -> Settings:
    """Parse options; values not given on the command line come from the environment."""
    return _settings(_settings_parser(prog).parse_args(list(argv)))


def split_settings(argv: Sequence[str], prog: str) -> tuple[Settings, list[str]]:
    """The gateway's options among ``argv`` (``--sqlite``, ``--rpc-address``...) as
    Settings, and the other arguments in their order (a subcommand's own)."""
    args, rest = _settings_parser(prog, add_help=False).parse_known_args(list(argv))
    return _settings(args), rest


def _settings(args: argparse.Namespace) -> Settings:
    given: dict[str, Any] = {
        k: ",".join(v) if isinstance(v, list) else v for k, v in vars(args).items() if v is not None
    }
    try:
        return Settings(**given)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']).replace('_', '-')}: {e['msg']}"
            for e in exc.errors()
        )
        raise SystemExit(f"xmrgate: invalid configuration: {problems}") from None


# Connections plus in-flight requests per process before uvicorn answers 503.
LIMIT_CONCURRENCY = 2048


def serve(settings: Settings) -> None:
    """Run the gateway until interrupted."""
    from xmrgate.runtime.logs import redact_url, setup_logging

    # The refusals come before the server and the app are imported (0.6 s of CPU): a
    # refused configuration says so at once.
    setup_logging(settings.log_format)
    refuse_playground_rate(settings)
    if settings.api_keys is None and not settings.bind_is_loopback:
        if not settings.allow_public_unauthenticated:
            raise SystemExit(
                f"xmrgate: refusing to serve {settings.bind} without API keys: anyone who can "
                "reach it could send payouts. Give --api-key, bind 127.0.0.1, or pass "
                "--allow-public-unauthenticated if a proxy in front authenticates."
            )
        log.warning(
            "serving %s WITHOUT authentication (--allow-public-unauthenticated)", settings.bind
        )
    if settings.workers > 1 and settings.database_kind != "postgresql":
        raise SystemExit("xmrgate: --workers above 1 needs --postgresql (SQLite has one writer)")
    from xmrgate.runtime.workers import (
        MULTIPROC_ENV,
        give_workers_a_metrics_dir,
        hand_settings_to_workers,
    )

    # Before prometheus-client is imported (it picks its mode then): one process keeps
    # its metrics in memory; a stray multiprocess directory would make it write files.
    for name in (MULTIPROC_ENV, MULTIPROC_ENV.lower()):
        os.environ.pop(name, None)
    from xmrgate.runtime.lean_process import migrate_in_child, skip_optional_imports

    skip_optional_imports()  # before httpx is imported
    import uvicorn

    from xmrgate.runtime.app import build_app
    from xmrgate.runtime.http_writes import GatewayHttpProtocol

    log.info(
        "xmrgate %s listening on http://%s (database: %s, wallet-rpc: %s, workers: %d)",
        __version__,
        settings.bind,
        settings.database_kind,
        redact_url(settings.rpc_address),
        settings.workers,
    )
    # Alembic never enters this process (nor its workers): the schema is migrated in a
    # child, if it has to be, before anything serves.
    migrate_in_child(settings.database_url())
    common = {
        "host": settings.bind_host,
        "port": settings.bind_port,
        "log_config": None,
        "access_log": False,
        "timeout_graceful_shutdown": 5,
        # Limits for a public checkout (a reverse proxy in front still belongs there,
        # docs/security.md): idle keep-alive connections are closed after 5 s, at most
        # LIMIT_CONCURRENCY connections/requests at once (503 beyond), and header
        # count/size are capped by web/api/security.py's HeaderLimits once a head is whole.
        "timeout_keep_alive": 5,
        "limit_concurrency": LIMIT_CONCURRENCY,
        # httptools with bounds on an unfinished head (size and time: runtime/http_limits.py),
        # each answer in one send (runtime/http_writes.py).
        "http": GatewayHttpProtocol,
    }
    if settings.workers == 1:
        uvicorn.run(build_app(settings), **common)  # type: ignore[arg-type]
        return
    # Worker processes rebuild the same settings; PostgreSQL's advisory lock lets one
    # of them tick at a time and outbox claims keep each callback to one worker.
    hand_settings_to_workers(settings)
    give_workers_a_metrics_dir()
    uvicorn.run(
        "xmrgate.runtime.workers:app_from_settings_file",
        factory=True,
        workers=settings.workers,
        **common,  # type: ignore[arg-type]
    )


def refuse_playground_rate(settings: Settings) -> None:
    """Stop with a clear error when ``--rate-sources`` names the fixed playground rate.

    ``xmrgate dev`` prices fiat with it offline; a gateway taking real payments would
    price them at a made-up rate. ``xmrgate dev`` builds its app without ``serve``.
    """
    if PLAYGROUND_RATE_SOURCE in settings.rate_source_names:
        raise SystemExit(
            f"xmrgate: refusing to serve with the rate source '{PLAYGROUND_RATE_SOURCE}': it "
            f"is the {PLAYGROUND_RATE_NOTE}, made for `xmrgate dev` only. Remove it from "
            "--rate-sources / RATE_SOURCES (the market sources: "
            f"{', '.join(RATE_SOURCE_NAMES)})."
        )


def migrate(settings: Settings) -> None:
    """Apply migrations and exit."""
    from xmrgate.adapters.store.db import Database
    from xmrgate.runtime.logs import setup_logging

    setup_logging(settings.log_format)

    async def run() -> None:
        db = Database(settings.database_url())
        try:
            await db.migrate()
        finally:
            await db.dispose()

    asyncio.run(run())
    print("database schema is up to date")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``xmrgate`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args and args[0] in COMMANDS else "serve"
    if args and args[0] in COMMANDS:
        args = args[1:]
    if command == "dev":
        from xmrgate.runtime.dev import dev_main

        dev_main(args)
    elif command == "wallet":
        from xmrgate.runtime.wallet_cli import wallet_main

        wallet_main(args)
    elif command == "status":
        from xmrgate.runtime.status_cli import status_main

        status_main(args)
    elif command == "store":
        from xmrgate.runtime.store_cli import main as store_main

        settings, store_args = split_settings(args, "xmrgate store")
        raise SystemExit(store_main(store_args, settings))
    elif command == "migrate":
        migrate(load_settings(args, "xmrgate migrate"))
    else:
        serve(load_settings(args))


if __name__ == "__main__":
    main()
