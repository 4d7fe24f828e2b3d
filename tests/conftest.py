"""Test tiers: whatever needs the regtest network is marked ``integration``.

``make unit`` runs ``pytest -m "not integration"`` (pure tests, the store tests on
SQLite and PostgreSQL, the QR code through Chromium and zbarimg); ``make test`` runs
everything. A test needs the regtest network when it lives in ``tests/integration/``
or uses the ``devnet`` fixture (directly or through another fixture, such as
``gateway``); such a test gets the marker here even if its module forgot it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from testsupport.properties import DEV_PROFILE

if TYPE_CHECKING:  # imported by the fixture: xdist's controller process never needs it
    from testsupport.migrated import MigratedTemplates

INTEGRATION_DIR = Path(__file__).parent / "integration"

# `make unit` runs with --hypothesis-profile=dev: the expensive property tests run a
# quarter of their examples there (testsupport/properties.py). `make test` (CI) selects no
# profile, so they run their full number, as does any other pytest run.
settings.register_profile(DEV_PROFILE, settings.get_profile("default"))

# The slowest modules, slowest first (``make test`` prints the 15 slowest tests). The two
# xdist workers take whole modules (``--dist loadscope``) in collection order; collected
# alphabetically, the store modules (added last and among the longest) came at the end
# and one worker ran them alone for minutes while the other idled. Longest first evens
# the two out. Every other module keeps its place after these.
HEAVIEST_FIRST = (
    "test_store_lookahead.py",
    "test_dev_restart.py",
    "test_dev_playground.py",
    "test_invoices.py",
    "test_stores.py",
    "test_store_own_wallet.py",
    "test_dev_interrupt.py",
    "test_admin_stores_browser.py",
    "test_stores_processes.py",
    "test_pool_burst.py",
    "test_fuzz.py",
    "test_faults.py",
    "test_wallet_restricted.py",
    "test_address_pool.py",
    "test_view_only.py",
    "test_api.py",
    "test_fiat_prices.py",
)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        needs_network = item.path.is_relative_to(INTEGRATION_DIR) or "devnet" in getattr(
            item, "fixturenames", ()
        )
        if needs_network and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)
    rank = {name: place for place, name in enumerate(HEAVIEST_FIRST)}
    # A stable sort: a module's tests stay together and in their order.
    items.sort(
        key=lambda item: (
            rank.get(item.path.name, len(rank))
            if item.path.is_relative_to(INTEGRATION_DIR)
            else len(rank)
        )
    )


@pytest.fixture(scope="session")
def migrated_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MigratedTemplates]:
    """This test process's migrated template databases, copied for each test that wants a
    fresh migrated database (``testsupport/migrated.py``): one migration per backend and
    process instead of one per test."""
    from testsupport.migrated import MigratedTemplates

    templates = MigratedTemplates(tmp_path_factory.mktemp("migrated-template"))
    try:
        yield templates
    finally:
        templates.close()
