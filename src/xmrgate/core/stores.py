"""Store administration: stores on accounts of the main wallet or on their own
wallet-rpc, and their API keys.

``StoreAdmin`` is what ``/stores`` and ``xmrgate store`` call. Every input is checked
before anything is written or the wallet is asked: a refused request creates nothing
(no account in the wallet, no row, no key). A duplicate id is refused (409) before the
wallet is asked for an account, so a retried ``POST /stores`` does not leave an unused
account behind. A store on its own wallet-rpc is created only when that wallet-rpc
answers with a wallet open that is neither the main wallet nor another store's
(``core/store_wallets.py``: 400 when it does not answer or has no wallet open, 409 for
a wallet already used).

Store keys are shown once, when created; only their SHA-256 digest is stored. After
every write the use case calls ``changed()``, so the process can reload what it keeps
in memory (the active keys, the stores' settings).
"""

from __future__ import annotations

import builtins
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Protocol

from xmrgate.core.store_wallets import (
    WalletProbe,
    WalletSpec,
    check_wallet_spec,
    wallet_of_new_store,
)
from xmrgate.domain.errors import AlreadyExists, Conflict, InvalidInput, NotFound
from xmrgate.domain.greenfield.key_permissions import check_key_permissions, key_scopes
from xmrgate.domain.greenfield.speed import check_store_speed_policy
from xmrgate.domain.invoice import MAX_EXPIRES_IN
from xmrgate.domain.money import MAX_AMOUNT
from xmrgate.domain.stores import (
    ACCENT,
    DEFAULT_POS_CONFIRMATIONS,
    DEFAULT_STORE,
    DEFAULT_STORE_SPEED_POLICY,
    EDITABLE,
    MAX_NAME,
    MAX_POS_CONFIRMATIONS,
    STORE_ID,
    OwnWallet,
    Store,
    StoreKey,
    check_scopes,
    check_store_id,
    key_digest,
    key_label,
    new_key_token,
)

# A store's callback secret: long enough to be a secret, short enough for a header key.
MIN_SECRET, MAX_SECRET = 16, 256
# A store on a new account of the main wallet (the other form: its own wallet-rpc).
NEW_ACCOUNT = {"account": "new"}
WALLET_FORMS = (
    'wallet must be {"account": "new"} or {"rpc_address": URL, "rpc_username"?: USER, '
    '"rpc_password"?: PASSWORD}'
)


class StoreRepository(Protocol):
    """Stores and their keys as the database keeps them (``adapters/store/stores.py``)."""

    async def all(self) -> list[Store]:
        """Every store, the default one first (by account)."""
        ...

    async def get(self, store_id: str) -> Store | None:
        """One store, or None."""
        ...

    async def insert(self, store: Store) -> Store:
        """Store a new store; AlreadyExists when its id (or its account) is taken."""
        ...

    async def update(self, store: Store) -> Store:
        """Write the editable fields of ``store``; the stored row (NotFound if gone)."""
        ...

    async def add_key(self, key: StoreKey) -> None:
        """Store a new key (its digest, never the key)."""
        ...

    async def keys(self, store_id: str) -> list[StoreKey]:
        """The keys of a store, revoked ones included, oldest first."""
        ...

    async def revoke_key(self, store_id: str, key_id: str) -> bool:
        """Revoke a key of that store (again: no change); False when it has no such key."""
        ...

    async def active_keys(self) -> list[StoreKey]:
        """The keys that may call the API: not revoked, of enabled stores."""
        ...


class StoreAccounts(Protocol):
    """Where a new store's account comes from: the main wallet (``create_account``)."""

    async def create_account(self, label: str) -> int:
        """A new account (major index) of the main wallet."""
        ...


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _checked(check: Callable[[str], object], value: str) -> None:
    """Run a domain check; its ValueError becomes InvalidInput (400)."""
    try:
        check(value)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


def check_name(value: object) -> str:
    """A display name: 1 to MAX_NAME characters after stripping, no control characters."""
    if not isinstance(value, str):
        raise InvalidInput("name must be a string")
    name = value.strip()
    if not 1 <= len(name) <= MAX_NAME:
        raise InvalidInput(f"name must be 1 to {MAX_NAME} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InvalidInput("name must not contain control characters")
    return name


def check_wallet(value: object) -> WalletSpec | None:
    """The wallet of a new store: ``{"account": "new"}`` (None), or its own wallet-rpc
    (``{"rpc_address", "rpc_username"?, "rpc_password"?}``)."""
    if isinstance(value, Mapping) and "rpc_address" in value:
        return check_wallet_spec(value)
    if not isinstance(value, Mapping) or dict(value) != NEW_ACCOUNT:
        raise InvalidInput(WALLET_FORMS)
    return None


def check_callback_secret(value: object) -> str | None:
    """A callback secret of MIN_SECRET to MAX_SECRET characters, or None (unsigned)."""
    if value is None:
        return None
    if not isinstance(value, str) or not MIN_SECRET <= len(value) <= MAX_SECRET:
        raise InvalidInput(f"callback_secret must be {MIN_SECRET} to {MAX_SECRET} characters")
    if "\x00" in value:
        raise InvalidInput("callback_secret must not contain NUL characters")
    return value


def check_accent(value: object) -> str | None:
    """A checkout accent colour ``#rrggbb`` (kept lower-case), or None."""
    if value is None:
        return None
    if not isinstance(value, str) or ACCENT.fullmatch(value) is None:
        raise InvalidInput("accent must be a colour like #1a2b3c")
    return value.lower()


def _int_or_none(value: object, name: str, low: int, high: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{name} must be an integer from {low} to {high}")
    return value


def check_expires_in(value: object) -> int | None:
    """A store's default ``expires_in``: 1 s to 30 days, or None (never)."""
    return _int_or_none(value, "default_expires_in", 1, MAX_EXPIRES_IN)


def check_tolerance(value: object) -> int | None:
    """A store's default ``underpay_tolerance`` in piconero (>= 0), or None."""
    return _int_or_none(value, "default_underpay_tolerance", 0, MAX_AMOUNT)


def check_pos_confirmations(value: object) -> int:
    """The confirmations a store's POS screens wait for: 0 to MAX_POS_CONFIRMATIONS
    (never None: a screen must know when a sale is paid)."""
    checked = _int_or_none(value, "pos_confirmations", 0, MAX_POS_CONFIRMATIONS)
    if checked is None:
        raise InvalidInput(
            f"pos_confirmations must be an integer from 0 to {MAX_POS_CONFIRMATIONS}"
        )
    return checked


def _checked_changes(fields: Mapping[str, object]) -> dict[str, object]:
    """The PATCH fields, checked and normalised; InvalidInput on the first bad one."""
    unknown = sorted(set(fields) - EDITABLE)
    if unknown:
        raise InvalidInput(f"cannot change {', '.join(unknown)}; editable: {sorted(EDITABLE)}")
    changes: dict[str, object] = {}
    for name, value in fields.items():
        if name == "name":
            changes[name] = check_name(value)
        elif name == "enabled":
            if not isinstance(value, bool):
                raise InvalidInput("enabled must be true or false")
            changes[name] = value
        elif name == "callback_secret":
            changes[name] = check_callback_secret(value)
        elif name == "accent":
            changes[name] = check_accent(value)
        elif name == "default_expires_in":
            changes[name] = check_expires_in(value)
        elif name == "pos_confirmations":
            changes[name] = check_pos_confirmations(value)
        elif name == "speed_policy":
            changes[name] = check_store_speed_policy(value).value
        else:
            changes[name] = check_tolerance(value)
    return changes


class StoreAdmin:
    """Create, change and list stores; create, list and revoke their keys."""

    def __init__(
        self,
        repo: StoreRepository,
        accounts: StoreAccounts,
        changed: Callable[[], Awaitable[None]],
        *,
        clock: Callable[[], datetime] = _utcnow,
        wallets: WalletProbe | None = None,
        main_wallet: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        """``changed()`` is awaited after every successful write. ``wallets`` asks a
        store's own wallet-rpc for its wallet; ``main_wallet`` is the main wallet's
        primary address (without them stores on their own wallet are refused)."""
        self._wallets = wallets
        self._main_wallet = main_wallet
        self._repo = repo
        self._accounts = accounts
        self._changed = changed
        self._clock = clock

    async def create(
        self,
        id: str,
        name: str | None,
        wallet: Mapping[str, object],
        callback_secret: str | None = None,
        accent: str | None = None,
        default_expires_in: int | None = None,
        default_underpay_tolerance: int | None = None,
        pos_confirmations: int = DEFAULT_POS_CONFIRMATIONS,
        speed_policy: str = DEFAULT_STORE_SPEED_POLICY,
    ) -> Store:
        """A new store on a new account of the main wallet (``name`` defaults to the id).

        Checks every input first (400), then that the id is free (409), and only then
        asks the wallet for an account: a refused store leaves nothing behind.
        """
        if not isinstance(id, str):
            raise InvalidInput("id must be a string")
        _checked(check_store_id, id)
        checked_name = check_name(id if name is None else name)
        spec = check_wallet(wallet)
        secret = check_callback_secret(callback_secret)
        colour = check_accent(accent)
        expires_in = check_expires_in(default_expires_in)
        tolerance = check_tolerance(default_underpay_tolerance)
        confirmations = check_pos_confirmations(pos_confirmations)
        policy = check_store_speed_policy(speed_policy).value
        if await self._repo.get(id) is not None:
            raise AlreadyExists(f"a store '{id}' already exists")
        own: OwnWallet | None = None
        if spec is not None:
            own = await self._own_wallet(spec)
            account = 0
        else:
            account = await self._accounts.create_account(f"xmrgate store {id}")
        created = await self._repo.insert(
            Store(
                id=id,
                name=checked_name,
                own_wallet=own,
                account_index=account,
                callback_secret=secret,
                accent=colour,
                default_expires_in=expires_in,
                default_underpay_tolerance=tolerance,
                pos_confirmations=confirmations,
                speed_policy=policy,
                created_at=self._clock(),
            )
        )
        await self._changed()
        return created

    async def _own_wallet(self, spec: WalletSpec) -> OwnWallet:
        """The store's own wallet, checked to answer and to be no other store's."""
        if self._wallets is None or self._main_wallet is None:
            raise InvalidInput("this command cannot reach a store's own wallet-rpc")
        primary = await wallet_of_new_store(
            spec, self._wallets, self._main_wallet, await self._repo.all()
        )
        return OwnWallet(
            rpc_address=spec.rpc_address,
            primary_address=primary,
            wallet_no=0,  # the repository numbers it
            rpc_username=spec.rpc_username,
            rpc_password=spec.rpc_password,
        )

    # ``builtins.list`` below: inside this class ``list`` is the method (the API's name).
    async def list(self) -> builtins.list[Store]:
        """Every store, the default one first."""
        return await self._repo.all()

    async def get(self, id: str) -> Store:
        """One store; NotFound when there is none of that id."""
        store = None
        if isinstance(id, str) and STORE_ID.fullmatch(id):
            store = await self._repo.get(id)
        if store is None:
            raise NotFound(f"no store '{id}'")
        return store

    async def update(self, id: str, /, **fields: object) -> Store:
        """Change the editable fields given (None clears the optional ones).

        The default store cannot be disabled: it is the gateway's own.
        """
        changes = _checked_changes(fields)
        store = await self.get(id)
        if id == DEFAULT_STORE and changes.get("enabled") is False:
            raise InvalidInput("the default store cannot be disabled")
        if not changes:
            return store
        updated = await self._repo.update(store.with_changes(**changes))
        await self._changed()
        return updated

    async def create_key(
        self,
        store_id: str,
        scopes: builtins.list[str] | None,
        *,
        permissions: builtins.list[str] | None = None,
    ) -> tuple[StoreKey, str]:
        """A new key of an enabled store, and the key itself (shown this once only).

        With ``permissions`` (Greenfield names, exclusive with ``scopes``) the key holds
        exactly those, and the scopes they map to (``domain/greenfield/key_permissions``).
        """
        if scopes is not None and (
            not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes)
        ):
            raise InvalidInput("scopes must be a list of strings")
        if scopes is not None and permissions is not None:
            raise InvalidInput("give scopes or permissions, not both")
        granted: tuple[str, ...] | None = None
        try:
            if permissions is not None:
                granted = check_key_permissions(permissions, store_id)
                chosen = key_scopes(granted)
            else:
                chosen = check_scopes(scopes)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        store = await self.get(store_id)
        if not store.enabled:
            raise Conflict(f"the store '{store.id}' is disabled: enable it before adding keys")
        token = new_key_token()
        key_id = secrets.token_hex(8)
        key = StoreKey(
            id=key_id,
            store_id=store.id,
            digest=key_digest(token),
            scopes=chosen,
            created_at=self._clock(),
            label=key_label(key_id),
            permissions=granted,
        )
        await self._repo.add_key(key)
        await self._changed()
        return key, token

    async def list_keys(self, store_id: str) -> builtins.list[StoreKey]:
        """The keys of a store (no secrets), revoked ones included."""
        store = await self.get(store_id)
        return await self._repo.keys(store.id)

    async def revoke_key(self, store_id: str, key_id: str) -> None:
        """Revoke a key of that store; NotFound when the store has no such key."""
        store = await self.get(store_id)
        if not await self._repo.revoke_key(store.id, key_id):
            raise NotFound(f"the store '{store.id}' has no key '{key_id}'")
        await self._changed()
