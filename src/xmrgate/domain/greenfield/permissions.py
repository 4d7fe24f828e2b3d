"""Greenfield permissions: names, ``name:storeId`` strings, their hierarchy, our scopes (§3).

A Greenfield key carries permissions such as ``btcpay.store.canviewinvoices:<storeId>``;
a permission without a store applies to every store. Some imply others (BTCPay's
``Permission`` policy map): ``canmodifystoresettings`` covers the narrower store
permissions, ``canmodifyinvoices`` covers viewing and creating invoices, and so on, and
``unrestricted`` covers everything. We know the store permissions of that map that make
sense on a Monero gateway; Lightning, offerings and server or user permissions are
refused as unknown, so a plugin asking for them is told at once.

Our own keys have scopes (``api_keys.SCOPES``). ``scopes_for`` says what a Greenfield key
may do on our API; ``permissions_for`` says what ``api-keys/current`` reports for a key
that has scopes only. Neither ever adds ``transfer`` (sending arbitrary payouts) or
``admin`` (managing every store) from a store permission: a shop plugin's key must not
be able to empty the wallet, whatever BTCPay's ``canmodifystoresettings`` allows there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache

from xmrgate.domain.api_keys import SCOPES
from xmrgate.domain.greenfield.errors import FieldError

UNRESTRICTED = "unrestricted"
STORE_PREFIX = "btcpay.store."
VIEW_INVOICES = "btcpay.store.canviewinvoices"
CREATE_INVOICE = "btcpay.store.cancreateinvoice"
MODIFY_INVOICES = "btcpay.store.canmodifyinvoices"
MODIFY_WEBHOOKS = "btcpay.store.webhooks.canmodifywebhooks"
VIEW_STORE = "btcpay.store.canviewstoresettings"
MODIFY_STORE = "btcpay.store.canmodifystoresettings"
CREATE_NON_APPROVED_PULL_PAYMENTS = "btcpay.store.cancreatenonapprovedpullpayments"
CREATE_PULL_PAYMENTS = "btcpay.store.cancreatepullpayments"
MANAGE_PULL_PAYMENTS = "btcpay.store.canmanagepullpayments"
ARCHIVE_PULL_PAYMENTS = "btcpay.store.canarchivepullpayments"
VIEW_PULL_PAYMENTS = "btcpay.store.canviewpullpayments"
MODIFY_PAYMENT_REQUESTS = "btcpay.store.canmodifypaymentrequests"
VIEW_PAYMENT_REQUESTS = "btcpay.store.canviewpaymentrequests"
MANAGE_PAYOUTS = "btcpay.store.canmanagepayouts"
VIEW_PAYOUTS = "btcpay.store.canviewpayouts"
VIEW_REPORTS = "btcpay.store.canviewreports"

# Each permission and the ones it directly implies (the rest follow transitively).
CHILDREN: Mapping[str, frozenset[str]] = {
    MODIFY_STORE: frozenset(
        {
            MANAGE_PULL_PAYMENTS,
            MODIFY_INVOICES,
            VIEW_STORE,
            MODIFY_WEBHOOKS,
            MODIFY_PAYMENT_REQUESTS,
            MANAGE_PAYOUTS,
        }
    ),
    MODIFY_INVOICES: frozenset({VIEW_INVOICES, CREATE_INVOICE}),
    VIEW_STORE: frozenset(
        {VIEW_INVOICES, VIEW_PAYMENT_REQUESTS, VIEW_REPORTS, VIEW_PULL_PAYMENTS, VIEW_PAYOUTS}
    ),
    MANAGE_PULL_PAYMENTS: frozenset({CREATE_PULL_PAYMENTS, ARCHIVE_PULL_PAYMENTS}),
    CREATE_PULL_PAYMENTS: frozenset({CREATE_NON_APPROVED_PULL_PAYMENTS}),
    CREATE_NON_APPROVED_PULL_PAYMENTS: frozenset({VIEW_PULL_PAYMENTS}),
    MODIFY_PAYMENT_REQUESTS: frozenset({VIEW_PAYMENT_REQUESTS}),
    MANAGE_PAYOUTS: frozenset({VIEW_PAYOUTS}),
}
STORE_POLICIES = frozenset(CHILDREN).union(*CHILDREN.values())
POLICIES = STORE_POLICIES | {UNRESTRICTED}

# What each permission lets a key do on our API, before implication. Webhooks are
# Greenfield's alone, so managing them needs no scope of ours; pull payments are our
# refunds (the buyer claims, as in BTCPay's claim page).
_OWN_SCOPES: Mapping[str, frozenset[str]] = {
    VIEW_INVOICES: frozenset({"read"}),
    VIEW_STORE: frozenset({"read"}),
    VIEW_PAYMENT_REQUESTS: frozenset({"read"}),
    VIEW_REPORTS: frozenset({"read"}),
    VIEW_PULL_PAYMENTS: frozenset({"read"}),
    VIEW_PAYOUTS: frozenset({"read"}),
    CREATE_INVOICE: frozenset({"receive"}),
    MODIFY_PAYMENT_REQUESTS: frozenset({"receive"}),
    CREATE_NON_APPROVED_PULL_PAYMENTS: frozenset({"refund"}),
    ARCHIVE_PULL_PAYMENTS: frozenset({"refund"}),
    # The whole gateway, but a till's narrowing (``pos``) is not a power.
    UNRESTRICTED: SCOPES - {"pos"},
}
# What ``api-keys/current`` reports for a scopes-only key: each permission whose scopes
# the key holds all of, in this order (WooCommerce's list first).
_REPORTED_WHEN: tuple[tuple[str, frozenset[str]], ...] = (
    (VIEW_INVOICES, frozenset({"read"})),
    (CREATE_INVOICE, frozenset({"receive"})),
    (VIEW_STORE, frozenset({"read"})),
    # Marking an invoice paid or invalid, and telling a shop about invoices by webhook,
    # belong to the key that makes and reads the store's invoices: the shop's backend.
    (MODIFY_INVOICES, frozenset({"read", "receive"})),
    # It implies seeing pull payments, hence ``read`` too.
    (CREATE_NON_APPROVED_PULL_PAYMENTS, frozenset({"read", "refund"})),
    (MODIFY_WEBHOOKS, frozenset({"read", "receive"})),
    (MODIFY_STORE, frozenset({"read", "receive", "refund", "admin"})),
)


@dataclass(frozen=True, slots=True)
class Permission:
    """One granted permission: a policy name, and the store it is limited to (or None)."""

    policy: str
    store: str | None = None

    def __str__(self) -> str:
        return self.policy if self.store is None else f"{self.policy}:{self.store}"


@cache
def implied(policy: str) -> frozenset[str]:
    """``policy`` and every policy it implies, transitively (``unrestricted``: all)."""
    if policy == UNRESTRICTED:
        return POLICIES
    found = {policy}
    for child in CHILDREN.get(policy, ()):
        found |= implied(child)
    return frozenset(found)


def parse_permission(value: object, path: str = "permissions") -> Permission:
    """``name`` or ``name:storeId`` as BTCPay reads it, else a ``FieldError`` at ``path``.

    Blanks around are trimmed and the name is compared in lower case (BTCPay's
    ``Permission.TryParse``); the store id is kept as written, and only a store
    permission may name one, a non-empty one.
    """
    if isinstance(value, str):
        name, colon, store = value.strip().partition(":")
        policy = name.lower()
        if policy not in POLICIES:
            raise FieldError(path, f"Unknown permission {value!r}", value)
        if not colon:
            return Permission(policy)
        if policy in STORE_POLICIES and store:
            return Permission(policy, store)
        raise FieldError(path, f"{policy} cannot be limited to a store like this", value)
    raise FieldError(path, "a permission must be a string", value)


def parse_permissions(values: object, path: str = "permissions") -> tuple[Permission, ...]:
    """A list of permission strings; each error names ``path[i]``. Duplicates collapse,
    the first one's place is kept; nothing implied is added (clients want back exactly
    what they were granted)."""
    if not isinstance(values, list | tuple):
        raise FieldError(path, f"{path} must be a list of permission strings", values)
    parsed = [parse_permission(v, f"{path}[{i}]") for i, v in enumerate(values)]
    return tuple(dict.fromkeys(parsed))


def grants(granted: Iterable[Permission], policy: str, store: str) -> bool:
    """Whether the ``granted`` permissions allow ``policy`` on ``store``.

    A permission covers what it implies; a store-limited one covers its store only.
    """
    return any(
        policy in implied(p.policy) and (p.store is None or p.store == store) for p in granted
    )


def scopes_for(granted: Iterable[Permission]) -> frozenset[str]:
    """Our scopes for a key holding ``granted`` (each with everything it implies)."""
    scopes: set[str] = set()
    for permission in granted:
        for policy in implied(permission.policy):
            scopes |= _OWN_SCOPES.get(policy, frozenset())
    return frozenset(scopes)


def permissions_for(scopes: Iterable[str], store: str | None) -> tuple[Permission, ...]:
    """What ``api-keys/current`` reports for a key with our ``scopes`` only.

    A key holding every power of the gateway is ``unrestricted``; otherwise each store
    permission whose scopes the key holds, limited to ``store`` (None: an operator key,
    which may act on every store). Never more than the scopes allow:
    ``scopes_for(permissions_for(s, x)) <= s``.
    """
    held = frozenset(scopes)
    if _OWN_SCOPES[UNRESTRICTED] <= held:
        return (Permission(UNRESTRICTED),)
    return tuple(Permission(p, store) for p, needs in _REPORTED_WHEN if needs <= held)


def describe(policy: str) -> str:
    """The permission in words, for the consent page (``KeyError`` if unknown)."""
    return _WORDS[policy]


_WORDS: Mapping[str, str] = {
    UNRESTRICTED: "Everything, on every store",
    VIEW_INVOICES: "See invoices and their payments",
    CREATE_INVOICE: "Create invoices",
    MODIFY_INVOICES: "Create invoices, see them, and mark them settled or invalid",
    MODIFY_WEBHOOKS: "Add, change and remove webhooks",
    VIEW_STORE: "See the store's settings and its invoices",
    MODIFY_STORE: "Manage the store: its settings, invoices, webhooks and refunds",
    CREATE_NON_APPROVED_PULL_PAYMENTS: "Offer refunds that the buyer claims",
    CREATE_PULL_PAYMENTS: "Offer refunds that the buyer claims",
    MANAGE_PULL_PAYMENTS: "Offer and withdraw refunds",
    ARCHIVE_PULL_PAYMENTS: "Withdraw refund offers",
    VIEW_PULL_PAYMENTS: "See refund offers",
    MODIFY_PAYMENT_REQUESTS: "Create payment requests and see them",
    VIEW_PAYMENT_REQUESTS: "See payment requests",
    MANAGE_PAYOUTS: "See payouts (a plugin key never sends money here)",
    VIEW_PAYOUTS: "See payouts",
    VIEW_REPORTS: "See the store's reports",
}
