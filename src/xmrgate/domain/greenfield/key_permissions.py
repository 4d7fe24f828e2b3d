"""The Greenfield permissions a new store key is made with.

A shop plugin's key is a store key that carries exactly the permissions it was granted
(``POST /stores/{id}/keys`` with ``permissions``, ``xmrgate store key --permission``,
the consent page ``/api-keys/authorize``). Two rules hold here, for all three ways:

- only store permissions, limited to the key's store: never ``unrestricted`` (a store
  key never holds ``admin``), never a permission limited to another store;
- the scopes the key gets (``scopes_for``: what our MoneroPay API lets it do) are store
  key scopes without ``transfer``: a plugin's key never sends money out of the wallet,
  whatever BTCPay's permission would allow there.
"""

from __future__ import annotations

from xmrgate.domain.errors import Unprocessable
from xmrgate.domain.greenfield.permissions import (
    STORE_POLICIES,
    UNRESTRICTED,
    Permission,
    parse_permission,
    scopes_for,
)
from xmrgate.domain.stores import STORE_KEY_SCOPES

# What a permission key may ever be given on our API (``transfer`` and ``admin`` never).
PERMISSION_KEY_SCOPES = STORE_KEY_SCOPES - {"transfer", "admin", "pos"}


def check_key_permissions(values: object, store_id: str | None) -> tuple[str, ...]:
    """The permission names a new key of ``store_id`` is granted, in the order asked,
    without repeats; ValueError naming the first bad one.

    ``name`` or ``name:<store_id>`` (``store_id`` None: a store is not chosen yet, so
    a name limited to any store is refused: the operator picks the store).
    """
    if not isinstance(values, list | tuple) or not values:
        raise ValueError("permissions must be a non-empty list of Greenfield permission names")
    names: list[str] = []
    for value in values:
        try:
            permission = parse_permission(value)
        except Unprocessable:
            raise ValueError(f"unknown Greenfield permission {value!r}") from None
        if permission.policy == UNRESTRICTED or permission.policy not in STORE_POLICIES:
            raise ValueError(
                f"a store key cannot hold {permission.policy!r}: ask for store permissions "
                "(btcpay.store.*)"
            )
        if permission.store is not None and permission.store != store_id:
            raise ValueError(f"{value!r} names another store than this key's")
        if permission.policy not in names:
            names.append(permission.policy)
    return tuple(names)


def key_scopes(names: tuple[str, ...]) -> frozenset[str]:
    """Our scopes for a key granted ``names`` (and what they imply); ValueError if they
    would ever exceed ``PERMISSION_KEY_SCOPES`` (a mapping changed: refuse, never widen)."""
    scopes = scopes_for(Permission(name) for name in names)
    if not scopes <= PERMISSION_KEY_SCOPES:
        raise ValueError(f"permissions {list(names)} would give the scopes {sorted(scopes)}")
    return scopes


def store_of_permissions(values: list[str]) -> str | None:
    """The one store the asked permissions name (``name:storeId``), or None if none
    names one; ValueError when they name several (one key belongs to one store)."""
    stores: set[str] = set()
    for value in values:
        _, colon, store = value.strip().partition(":")
        if colon and store:
            stores.add(store)
    if len(stores) > 1:
        raise ValueError("the permissions name several stores: a key belongs to one store")
    return next(iter(stores), None)
