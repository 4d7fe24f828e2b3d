"""Test tiers: whatever needs the regtest network is marked ``integration``.

``make unit`` runs ``pytest -m "not integration"`` (pure tests, the store tests on
SQLite and PostgreSQL, the QR code through Chromium and zbarimg); ``make test`` runs
everything. A test needs the regtest network when it lives in ``tests/integration/``
or uses the ``devnet`` fixture (directly or through another fixture, such as
``gateway``); such a test gets the marker here even if its module forgot it.
"""

from __future__ import annotations

import gc
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
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
    "test_interrupted_run.py",
    "test_dev_restart.py",
    "test_dev_playground.py",
    "test_invoices.py",
    "test_stores.py",
    "test_all_stores_together.py",
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
    "test_greenfield_webhooks.py",
    "test_greenfield_invoices.py",
    "test_fiat_prices.py",
    "test_link_workers.py",
    "test_rates_cluster.py",
    "test_unmatched.py",
)
# The same for ``make unit`` (tests/unit and tests/db), which runs them in this order
# (``--no-loadscope-reorder``: xdist otherwise puts the modules with the most tests first,
# and the browser modules, few tests but 10-30 s each, came last, one of them alone).
# Longest first, by their time in a run of three processes (the browser modules no longer
# wait out the pages' refreshes: the point of sale 30 s to 8 s); the modules of 2-4 s
# that come late alphabetically are among them, so that no process ends with one of them.
UNIT_HEAVIEST_FIRST = (
    "unit/test_link_page.py",
    "unit/test_address_pool_usecase.py",
    "unit/test_pos_browser.py",
    "unit/test_admin_unmatched.py",
    "db/test_refund_store.py",
    "db/test_link_store.py",
    "db/test_invoice_store.py",
    "unit/test_admin_links.py",
    "unit/test_admin_refunds.py",
    "unit/test_refund_page.py",
    "unit/test_admin_webhooks.py",
    "unit/test_cli_refusals.py",
    "unit/test_admin_fiat_forms.py",
    "unit/test_admin_price.py",
    "unit/test_admin_keys.py",
    "unit/test_wallet_status_usecase.py",
    "db/test_stores_store.py",
    "db/test_unmatched_store.py",
    "db/test_sync_window.py",
    "unit/test_greenfield_invoices_http.py",
    "unit/test_invoice_api.py",
    "unit/test_consent_page.py",
    "unit/test_dev_banner.py",
    "unit/test_admin_page.py",
    "unit/test_rate_sources.py",
    "unit/test_admin_overview_browser.py",
    "unit/test_greenfield_webhooks_http.py",
    "db/test_greenfield_invoice_store.py",
    "unit/test_rate_book.py",
    "unit/test_store_speed_policy.py",
    "unit/test_workers_settings.py",
    "unit/test_consent_browser.py",
    "db/test_outbox_schedule.py",
)
TESTS_DIR = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        needs_network = item.path.is_relative_to(INTEGRATION_DIR) or "devnet" in getattr(
            item, "fixturenames", ()
        )
        if needs_network and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)
    rank = {name: place for place, name in enumerate(HEAVIEST_FIRST)}
    unit_rank = {name: place for place, name in enumerate(UNIT_HEAVIEST_FIRST)}

    def place(item: pytest.Item) -> tuple[int, int]:
        if item.path.is_relative_to(INTEGRATION_DIR):
            return (rank.get(item.path.name, len(rank)), len(unit_rank))
        if not item.path.is_relative_to(TESTS_DIR):
            return (len(rank), len(unit_rank))
        relative = item.path.relative_to(TESTS_DIR).as_posix()
        return (len(rank), unit_rank.get(relative, len(unit_rank)))

    # A stable sort: a module's tests stay together and in their order.
    items.sort(key=place)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM as Ctrl-C: the run stops through ``KeyboardInterrupt``, so the session's
    fixtures are torn down (the ``devnet`` stops its processes); a second SIGTERM ends
    the process at once."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    """A ``make test`` stopped with SIGTERM (make passes it on to pytest) stops as one
    stopped with Ctrl-C: pytest-xdist stops its workers, and kills those still running
    10 s later. What a killed process could not stop dies with it all the same: the
    devnet's processes and the gateways get SIGKILL from the kernel when the test process
    that started them ends (``xmrgate.devnet.processes.die_with_parent``;
    ``tests/integration/test_interrupted_run.py``)."""
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    ):
        signal.signal(signal.SIGTERM, _interrupt)


#: Collect the youngest generation every this many new objects (Python's default: 700).
GC_THRESHOLD = (10_000, 10, 10)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Spare the cyclic garbage collector the objects of every module imported by now.

    The full collections walked everything the test modules imported (FastAPI, pydantic,
    SQLAlchemy, Hypothesis, the apps' routes): 43 of them took 10 s of the 40 s of CPU
    of tests/unit's tests without a browser in one process. Frozen, these long-lived
    objects are never walked again, and collections that come less often find as much
    garbage in fewer passes: 3.7 s. No test depends on when garbage is collected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Quit this process's shared Chromium (``testsupport/browser.py``) and drop its test
    gateways' template databases (``testsupport/gateway_databases.py``), if made."""
    browser = sys.modules.get("testsupport.browser")
    if browser is not None:
        browser.SHARED.quit()
    databases = sys.modules.get("testsupport.gateway_databases")
    if databases is not None:  # the test gateways' migrated templates
        databases.close()


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
