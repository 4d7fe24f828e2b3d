"""Greenfield permissions (``xmrgate.domain.greenfield.permissions``; greenfield.md §3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xmrgate.domain.api_keys import SCOPES
from xmrgate.domain.greenfield import permissions as p
from xmrgate.domain.greenfield.errors import FieldError
from xmrgate.domain.stores import DEFAULT_STORE_KEY_SCOPES, STORE_KEY_SCOPES

FAST = settings(max_examples=30, deadline=None)
STORE = "shop"
# §1 A1: what WooCommerce asks for; §3: what each route needs.
WOOCOMMERCE = [
    "btcpay.store.canviewinvoices",
    "btcpay.store.cancreateinvoice",
    "btcpay.store.canviewstoresettings",
    "btcpay.store.canmodifyinvoices",
    "btcpay.store.cancreatenonapprovedpullpayments",
    "btcpay.store.webhooks.canmodifywebhooks",
]
WC_OPTIONAL = {
    "btcpay.store.cancreatenonapprovedpullpayments",
    "btcpay.store.webhooks.canmodifywebhooks",
}
ROUTES = [
    "btcpay.store.canviewstoresettings",
    "btcpay.store.cancreateinvoice",
    "btcpay.store.canviewinvoices",
    "btcpay.store.canmodifyinvoices",
    "btcpay.store.webhooks.canmodifywebhooks",
    "btcpay.store.cancreatenonapprovedpullpayments",
]


def woocommerce_accepts(reported: list[str]) -> bool:
    """WooCommerce's own check of a key (§1 A4): one store, exactly the required names."""
    stores = {text.partition(":")[2] for text in reported}
    if any(":" not in text for text in reported) or len(stores) != 1:
        return False
    names = {text.partition(":")[0] for text in reported}
    return names - WC_OPTIONAL == set(WOOCOMMERCE) - WC_OPTIONAL


def test_a_scoped_permission_reads_back() -> None:
    parsed = p.parse_permission(" BTCPay.Store.CanViewInvoices:ShopA ")
    assert parsed == p.Permission("btcpay.store.canviewinvoices", "ShopA")  # store kept as is
    assert str(parsed) == "btcpay.store.canviewinvoices:ShopA"
    assert str(p.parse_permission("unrestricted")) == "unrestricted"


@given(
    st.sampled_from(sorted(p.STORE_POLICIES)),
    st.none() | st.from_regex(r"[A-Za-z0-9-]{1,44}", fullmatch=True),
)
@FAST
def test_every_known_permission_reads_back(policy: str, store: str | None) -> None:
    permission = p.Permission(policy, store)
    assert p.parse_permission(str(permission)) == permission


@pytest.mark.parametrize(
    "value",
    [
        "btcpay.store.canfly",
        "btcpay.store.canuselightningnode",  # BTCPay has it; a Monero gateway does not
        "btcpay.server.canmodifyserversettings",
        "btcpay.store.canviewinvoices:",  # an empty store
        "unrestricted:shop",  # only store permissions take a store
        "",
        None,
        3,
    ],
)
def test_unknown_or_malformed_permissions_are_refused(value: object) -> None:
    with pytest.raises(FieldError) as caught:
        p.parse_permission(value, path="permissions[2]")
    assert (caught.value.path, caught.value.value) == ("permissions[2]", value)


def test_a_list_names_the_bad_item_and_keeps_exactly_what_was_asked() -> None:
    parsed = p.parse_permissions([*WOOCOMMERCE, WOOCOMMERCE[0]])
    assert [str(x) for x in parsed] == WOOCOMMERCE  # nothing implied added, duplicates gone
    with pytest.raises(FieldError) as caught:
        p.parse_permissions(["btcpay.store.canviewinvoices", "nope"])
    assert caught.value.path == "permissions[1]"
    with pytest.raises(FieldError):
        p.parse_permissions("btcpay.store.canviewinvoices")


@pytest.mark.parametrize(
    ("broad", "narrow", "covered"),
    [
        (p.MODIFY_STORE, p.VIEW_INVOICES, True),
        (p.MODIFY_STORE, p.CREATE_INVOICE, True),
        (p.MODIFY_STORE, p.MODIFY_WEBHOOKS, True),
        (p.MODIFY_STORE, p.CREATE_NON_APPROVED_PULL_PAYMENTS, True),
        (p.MODIFY_INVOICES, p.CREATE_INVOICE, True),
        (p.VIEW_STORE, p.VIEW_INVOICES, True),
        (p.VIEW_STORE, p.CREATE_INVOICE, False),
        (p.VIEW_INVOICES, p.VIEW_STORE, False),
        (p.CREATE_NON_APPROVED_PULL_PAYMENTS, p.CREATE_PULL_PAYMENTS, False),
        (p.CREATE_PULL_PAYMENTS, p.CREATE_NON_APPROVED_PULL_PAYMENTS, True),
        (p.MODIFY_WEBHOOKS, p.VIEW_INVOICES, False),
        (p.UNRESTRICTED, p.MODIFY_STORE, True),
    ],
)
def test_the_hierarchy(broad: str, narrow: str, covered: bool) -> None:
    assert (narrow in p.implied(broad)) is covered


@given(st.sampled_from(sorted(p.POLICIES)))
@FAST
def test_implication_is_reflexive_and_transitive(policy: str) -> None:
    assert policy in p.implied(policy)
    for child in p.implied(policy):
        assert p.implied(child) <= p.implied(policy)


def test_a_store_limited_permission_covers_its_store_only() -> None:
    granted = p.parse_permissions([f"{x}:{STORE}" for x in WOOCOMMERCE])
    assert all(p.grants(granted, route, STORE) for route in ROUTES)
    assert not any(p.grants(granted, route, "other") for route in ROUTES)
    assert not p.grants(granted, p.MODIFY_STORE, STORE)
    anywhere = p.parse_permissions([p.VIEW_STORE])
    assert p.grants(anywhere, p.VIEW_INVOICES, "any-store")
    assert not p.grants(anywhere, p.CREATE_INVOICE, "any-store")


def test_scopes_of_the_plugins_keys() -> None:
    required = [p.Permission(x) for x in WOOCOMMERCE if x not in WC_OPTIONAL]
    assert p.scopes_for(required) == {"read", "receive"}
    assert p.scopes_for([p.Permission(p.CREATE_NON_APPROVED_PULL_PAYMENTS)]) == {"read", "refund"}
    assert p.scopes_for([p.Permission(p.MODIFY_WEBHOOKS)]) == set()
    assert p.scopes_for([p.Permission(p.MODIFY_STORE)]) == {"read", "receive", "refund"}
    assert p.scopes_for([p.Permission(p.UNRESTRICTED)]) == SCOPES - {"pos"}


@given(st.sets(st.sampled_from(sorted(p.STORE_POLICIES))))
@FAST
def test_no_store_permission_sends_money_or_manages_stores(policies: set[str]) -> None:
    scopes = p.scopes_for([p.Permission(x, STORE) for x in policies])
    assert scopes <= STORE_KEY_SCOPES
    assert not scopes & {"transfer", "admin", "pos"}


@given(st.sets(st.sampled_from(sorted(SCOPES))), st.none() | st.just(STORE))
@FAST
def test_reported_permissions_never_exceed_the_scopes(scopes: set[str], store: str | None) -> None:
    reported = p.permissions_for(scopes, store)
    assert p.scopes_for(reported) <= scopes
    assert all(x.store == store for x in reported if x.policy != p.UNRESTRICTED)
    for permission in reported:  # api-keys/current's strings parse back
        assert p.parse_permission(str(permission)) == permission


def test_what_a_store_key_reports_passes_woocommerces_check() -> None:
    reported = [str(x) for x in p.permissions_for(DEFAULT_STORE_KEY_SCOPES, STORE)]
    assert woocommerce_accepts(reported)
    assert not woocommerce_accepts([str(x) for x in p.permissions_for({"read"}, STORE)])
    assert not woocommerce_accepts([str(x) for x in p.permissions_for({"read", "receive"}, None)])


def test_an_operator_key_is_unrestricted() -> None:
    assert p.permissions_for(SCOPES, None) == (p.Permission(p.UNRESTRICTED),)
    assert p.permissions_for(SCOPES - {"transfer"}, None) != (p.Permission(p.UNRESTRICTED),)


def test_every_known_permission_has_words_for_the_consent_page() -> None:
    assert all(p.describe(x) for x in p.POLICIES)
    with pytest.raises(KeyError):
        p.describe("btcpay.store.canfly")
