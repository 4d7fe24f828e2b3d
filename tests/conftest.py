"""Test tiers: whatever needs the regtest network is marked ``integration``.

``make unit`` runs ``pytest -m "not integration"`` (pure tests, the store tests on
SQLite and PostgreSQL, the QR code through Chromium and zbarimg); ``make test`` runs
everything. A test needs the regtest network when it lives in ``tests/integration/``
or uses the ``devnet`` fixture (directly or through another fixture, such as
``gateway``); such a test gets the marker here even if its module forgot it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

INTEGRATION_DIR = Path(__file__).parent / "integration"


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        needs_network = item.path.is_relative_to(INTEGRATION_DIR) or "devnet" in getattr(
            item, "fixturenames", ()
        )
        if needs_network and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)
