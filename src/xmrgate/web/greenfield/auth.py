"""Who calls a Greenfield route: the ``Authorization`` header, and what the key may do.

BTCPay reads ``token <key>`` (what its PHP client sends) and ``Bearer <key>``, the scheme
in any case (docs/greenfield.md, "Authentication"). The keys are ours, operator keys (``--api-key``)
and store keys alike; what a key may do in Greenfield's words is derived from its scopes
(``domain/greenfield/permissions.permissions_for``), limited to its store for a store key.
"""

from __future__ import annotations

import re

from xmrgate.domain.api_keys import ApiKey
from xmrgate.domain.greenfield.permissions import Permission, permissions_for

# BTCPay's pattern: the scheme, blanks, then the key (anything after it is ignored).
AUTHORIZATION = re.compile(r"^(token|bearer)\s+(\S+)", re.IGNORECASE)


def presented_token(authorization: str) -> str | None:
    """The key an ``Authorization`` header presents, or None (absent, another scheme
    such as ``Basic``: we have no users and passwords, only keys)."""
    found = AUTHORIZATION.match(authorization.strip())
    return found.group(2) if found else None


def granted_permissions(key: ApiKey) -> tuple[Permission, ...]:
    """The Greenfield permissions ``key`` holds, in the order ``api-keys/current`` lists
    them: a store key's are limited to its store, an operator key's to none (every store).

    The one place that says it, so that a key made with explicit permissions (the consent
    page, ``POST /stores/{id}/keys``) only has to be answered here:
    ``permissions`` on the key wins over what its scopes imply.
    """
    if key.permissions is not None:
        # Exactly the names granted, each limited to the key's store (never more: a
        # plugin refuses a key with a permission it did not ask for, §3).
        return tuple(Permission(name, key.store) for name in key.permissions)
    return permissions_for(key.scopes, key.store)
