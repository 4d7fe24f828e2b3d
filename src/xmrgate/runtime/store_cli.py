"""``xmrgate store``: add stores, create their keys, list them, on the configured database.

    xmrgate store add ID (--account | --wallet-rpc URL [--rpc-login USER:PASS]) [--name NAME]
    xmrgate store key ID [--scopes read+receive+transfer]   (prints the key alone on stdout)
    xmrgate store key ID --permission NAME [--permission NAME ...]   (a shop plugin's key)
    xmrgate store list [--json]

The database (``--sqlite``/``--postgresql``) and the wallet-rpc (``--rpc-address``...)
are the gateway's own options and environment variables. ``add --account`` asks the
configured wallet-rpc for a new account, after checking that it has this database's
wallet open; ``add --wallet-rpc`` asks that wallet-rpc which wallet it has open (refused
when it does not answer, has none open, or holds the main wallet or another store's).
Every refusal is one line on stderr and exit status 2; nothing is created.
A running gateway learns of stores and keys added here when it reloads them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import NoReturn, Protocol

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.identity import SqlIdentityStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store_wallet_probe import WalletRpcProbe
from xmrgate.adapters.wallet_rpc import WalletClient
from xmrgate.config import Settings
from xmrgate.core.stores import NEW_ACCOUNT, StoreAccounts, StoreAdmin
from xmrgate.core.wallet_status import IdentityStore
from xmrgate.domain.errors import WalletUnavailable, XmrgateError
from xmrgate.domain.stores import Store
from xmrgate.runtime.logs import redact_url

PROG = "xmrgate store"
USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Manage the gateway's stores on the configured database. The gateway's "
        "options (--sqlite, --postgresql, --rpc-address, --rpc-username, --rpc-password) "
        "and their environment variables choose the database and the wallet-rpc.",
    )
    sub = parser.add_subparsers(dest="action", required=True)
    add = sub.add_parser(
        "add", help="add a store on a new account of the main wallet or on its own wallet-rpc"
    )
    add.add_argument("id", help="the store's id: a short slug like shop-2")
    wallet = add.add_mutually_exclusive_group(required=True)
    wallet.add_argument(
        "--account", action="store_true", help="a new account of the main wallet (wallet-rpc)"
    )
    wallet.add_argument(
        "--wallet-rpc",
        metavar="URL",
        help="its own wallet-rpc, with its wallet open (/json_rpc is added without a path)",
    )
    add.add_argument("--rpc-login", metavar="USER:PASS", help="login of --wallet-rpc")
    add.add_argument("--name", help="display name on the checkout (default: the id)")
    key = sub.add_parser("key", help="create an API key of a store (printed alone on stdout)")
    key.add_argument("id", help="the store's id")
    rights = key.add_mutually_exclusive_group()
    rights.add_argument(
        "--scopes",
        metavar="SCOPES",
        help=(
            "what the key may do, joined with + (read, receive, transfer, refund, pos; "
            "default: read+receive+transfer)"
        ),
    )
    rights.add_argument(
        "--permission",
        metavar="NAME",
        action="append",
        help=(
            "a Greenfield permission for a shop plugin's key (repeat it), e.g. "
            "btcpay.store.canviewinvoices: the key holds exactly these (docs/greenfield.md)"
        ),
    )
    listing = sub.add_parser("list", help="list the stores")
    listing.add_argument("--json", action="store_true", help='as JSON: {"stores": [...]}')
    return parser


class AccountWallet(Protocol):
    """The wallet-rpc calls a new account needs (``adapters/wallet_rpc.py``)."""

    async def primary_address(self) -> str:
        """The open wallet's primary address."""
        ...

    async def create_account(self, label: str = "") -> int:
        """A new account of the open wallet; its index."""
        ...


class MainWalletAccounts:
    """New accounts of the main wallet, only while wallet-rpc has this database's wallet.

    An account created in another wallet would be an index that means nothing to the
    gateway's own wallet. On a database no gateway has started on yet, the open wallet
    is recorded as its wallet, as the gateway's first start does.
    """

    def __init__(self, wallet: AccountWallet, identity: IdentityStore) -> None:
        self._wallet = wallet
        self._identity = identity

    async def create_account(self, label: str) -> int:
        """A new account; WalletUnavailable when another wallet is open (none created)."""
        actual = await self._wallet.primary_address()
        expected = await self._identity.remembered()
        if expected is None:
            expected = await self._identity.remember(actual)
        if actual != expected:
            raise WalletUnavailable(
                f"wallet-rpc has the wallet {actual} open, but this database belongs to the "
                f"wallet {expected}: open the right wallet (no account was created)",
                request_sent=False,
            )
        return await self._wallet.create_account(label)


class _NoAccounts:
    """For the commands that never create an account."""

    async def create_account(self, label: str) -> int:
        raise AssertionError("this command creates no account")


async def _nothing_changed() -> None:
    """Nothing in this process keeps stores in memory."""


def main(argv: Sequence[str], settings: Settings, *, accounts: StoreAccounts | None = None) -> int:
    """Run ``xmrgate store ARGV`` on ``settings``' database; the exit status.

    ``accounts``: where ``add --account`` gets its account (default: the configured
    wallet-rpc, checked to hold this database's wallet).
    """
    try:
        options = _parser().parse_args(list(argv))
    except SystemExit as exc:  # --help (0) or a usage error (2, already printed)
        return exc.code if isinstance(exc.code, int) else USAGE_ERROR
    where = f"{PROG} {options.action}"
    if options.action == "add" and options.rpc_login is not None and options.wallet_rpc is None:
        return _refuse(where, "--rpc-login goes with --wallet-rpc")
    try:
        return asyncio.run(_run(options, settings, accounts))
    except WalletUnavailable as exc:
        rpc = redact_url(settings.rpc_address)
        return _refuse(where, f"wallet-rpc at {rpc} is not usable: {exc.message}")
    except XmrgateError as exc:
        return _refuse(where, exc.message)


def _wallet_of(options: argparse.Namespace) -> dict[str, object]:
    """The ``wallet`` of ``store add``: a new account, or the store's own wallet-rpc."""
    if options.wallet_rpc is None:
        return dict(NEW_ACCOUNT)
    wallet: dict[str, object] = {"rpc_address": options.wallet_rpc}
    if options.rpc_login is not None:
        user, _, password = options.rpc_login.partition(":")
        wallet["rpc_username"] = user
        if password:
            wallet["rpc_password"] = password
    return wallet


def _where(store: Store) -> str:
    own = store.own_wallet
    if own is not None:
        return f"on its own wallet {own.primary_address} at {own.rpc_address}"
    return f"on account {store.account_index} of the main wallet"


def _refuse(where: str, message: str) -> int:
    print(f"{where}: {message}", file=sys.stderr)
    return USAGE_ERROR


async def _run(
    options: argparse.Namespace, settings: Settings, accounts: StoreAccounts | None
) -> int:
    db = Database(settings.database_url())
    wallet: WalletClient | None = None
    try:
        await db.migrate()
        repo = SqlStores(db)
        if options.action == "add" and accounts is None:
            wallet = WalletClient(
                settings.rpc_address,
                username=settings.rpc_username,
                password=(
                    settings.rpc_password.get_secret_value() if settings.rpc_password else None
                ),
                timeout=settings.wallet_timeout,
            )
            accounts = MainWalletAccounts(wallet, SqlIdentityStore(db))
        admin = StoreAdmin(
            repo,
            accounts or _NoAccounts(),
            _nothing_changed,
            wallets=WalletRpcProbe(),
            main_wallet=SqlIdentityStore(db).remembered,
        )
        if options.action == "add":
            store = await admin.create(options.id, options.name, _wallet_of(options))
            print(
                f"created the store '{store.id}' ({store.name}) {_where(store)}; "
                f"its first key: xmrgate store key {store.id}"
            )
        elif options.action == "key":
            scopes = None if options.scopes is None else options.scopes.split("+")
            key, token = await admin.create_key(options.id, scopes, permissions=options.permission)
            rights = " ".join(key.permissions or ()) or "+".join(sorted(key.scopes))
            print(
                f"key {key.id} of the store '{key.store_id}' ({rights}): shown this once, keep it",
                file=sys.stderr,
            )
            print(token)
        else:
            found = await admin.list()
            if options.json:
                print(json.dumps({"stores": [s.public() for s in found]}, indent=2))
            else:
                active = [
                    sum(not key.revoked for key in await admin.list_keys(s.id)) for s in found
                ]
                print(_table(found, active))
        return 0
    finally:
        if wallet is not None:
            await wallet.aclose()
        await db.dispose()


def _table(found: list[Store], key_counts: list[int]) -> str:
    """The stores as aligned columns: id, account, state, active keys, name."""
    rows = [("ID", "ACCOUNT", "STATE", "KEYS", "NAME")]
    for store, keys in zip(found, key_counts, strict=True):
        state = "enabled" if store.enabled else "disabled"
        rows.append((store.id, str(store.account_index), state, str(keys), store.name))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        + "  "
        + row[4]
        for row in rows
    )
