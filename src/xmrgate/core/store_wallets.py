"""A store on its own monero-wallet-rpc: what the admin API accepts, and the checks.

``{"rpc_address": URL, "rpc_username"?: ..., "rpc_password"?: ...}``: the URL is
checked (http or https, a host, no credentials in it; ``/json_rpc`` is added when no
path is given), then wallet-rpc is asked for its wallet's primary address. A store is
refused (and nothing created) when it does not answer, has no wallet open, or holds
the main wallet or another store's wallet: two stores on one wallet would each be
credited with the other's payments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from xmrgate.domain.errors import AlreadyExists, InvalidInput
from xmrgate.domain.stores import Store

MAX_LOGIN = 256
WALLET_KEYS = frozenset({"rpc_address", "rpc_username", "rpc_password"})


@dataclass(frozen=True, slots=True)
class WalletSpec:
    """Where a store's wallet-rpc answers, and its login."""

    rpc_address: str
    rpc_username: str | None = None
    rpc_password: str | None = None


class WalletProbe(Protocol):
    """Asks a wallet-rpc which wallet it has open (``adapters/store_wallet_probe.py``)."""

    async def primary_address(self, spec: WalletSpec) -> str:
        """Its wallet's primary address; InvalidInput saying why when it cannot tell."""
        ...


def _login(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_LOGIN:
        raise InvalidInput(f"{name} must be 1 to {MAX_LOGIN} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidInput(f"{name} must not contain control characters")
    return value


def check_rpc_address(value: object) -> str:
    """An http(s) URL of wallet-rpc's JSON-RPC endpoint (``/json_rpc`` when no path)."""
    if not isinstance(value, str) or not value or len(value) > 2048:
        raise InvalidInput("rpc_address must be a URL like http://127.0.0.1:18083/json_rpc")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise InvalidInput(f"rpc_address is not a valid URL: {value!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("rpc_address must be an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise InvalidInput("give the login as rpc_username and rpc_password, not in the URL")
    if port == 0 or any(ord(c) < 33 or ord(c) == 127 for c in value):
        raise InvalidInput(f"rpc_address is not a valid URL: {value!r}")
    path = parts.path if parts.path not in ("", "/") else "/json_rpc"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def check_wallet_spec(value: Mapping[str, object]) -> WalletSpec:
    """The own-wallet form of a new store's ``wallet``, checked."""
    unknown = sorted(set(value) - WALLET_KEYS)
    if unknown:
        raise InvalidInput(f"unknown wallet field {unknown}; use {sorted(WALLET_KEYS)}")
    username = _login(value.get("rpc_username"), "rpc_username")
    password = _login(value.get("rpc_password"), "rpc_password")
    if password is not None and username is None:
        raise InvalidInput("rpc_password needs rpc_username")
    return WalletSpec(check_rpc_address(value.get("rpc_address")), username, password)


async def wallet_of_new_store(
    spec: WalletSpec,
    probe: WalletProbe,
    main_wallet: Callable[[], Awaitable[str | None]],
    stores: list[Store],
) -> str:
    """The primary address of the wallet ``spec`` has open, once it is known to be
    neither the main wallet nor another store's (409 naming which)."""
    primary = await probe.primary_address(spec)
    if primary == await main_wallet():
        raise AlreadyExists(
            f"wallet-rpc at {spec.rpc_address} has the gateway's main wallet open: a store's "
            'own wallet must be another wallet (or use {"account": "new"})'
        )
    for store in stores:
        if store.own_wallet is not None and store.own_wallet.primary_address == primary:
            raise AlreadyExists(
                f"wallet-rpc at {spec.rpc_address} has the wallet of store '{store.id}' open"
            )
    return primary
