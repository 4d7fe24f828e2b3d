"""The gateway at a glance: what ``GET /status``, ``xmrgate status`` and ``/metrics`` show.

Facts of the database (synced height, callbacks pending and failed, payment requests
by status, the address pool) are read at the moment they are asked for, in one
statement (``adapters/store/overview.py``), never counted by hand in memory: every
process of ``--workers N`` reports the same numbers and a restart loses nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from xmrgate.core.wallet_status import HealthReport, WalletStatus
from xmrgate.domain.errors import XmrgateError
from xmrgate.domain.invoice import InvoiceStatus

log = logging.getLogger(__name__)

T = TypeVar("T")

# Statuses of a payment request as the sync tick records them, in the order they are
# shown; exports list every one, zero included, so that a series never vanishes.
REQUEST_STATUSES = tuple(status.value for status in InvoiceStatus)


@dataclass(frozen=True, slots=True)
class StoreFacts:
    """What the database says, read in one statement."""

    synced_height: int | None
    callbacks_pending: int
    callbacks_failed: int
    requests_by_status: dict[str, int] = field(default_factory=dict)
    # Subaddresses ready in the pool (None: this gateway has no pool table).
    address_pool: int | None = None

    def requests(self) -> dict[str, int]:
        """Requests by status, every known status present (0 when none)."""
        counts = dict.fromkeys(REQUEST_STATUSES, 0)
        counts.update(self.requests_by_status)
        return counts


class FactsStore(Protocol):
    """The one-statement read of the facts (``adapters/store/overview.py``)."""

    async def facts(self) -> StoreFacts:
        """Read the facts; raises a ``domain.errors`` database error when it cannot."""
        ...


class HeightSource(Protocol):
    """The wallet call that tells how far the wallet has scanned."""

    async def get_height(self) -> int:
        """The wallet's height (blocks scanned)."""
        ...


class MetricsExporter(Protocol):
    """Renders the metrics of this gateway (``adapters/metrics.py``)."""

    def exposition(self, facts: StoreFacts | None) -> tuple[bytes, str]:
        """The scrape body and its content type; ``facts`` None: the database did not answer."""
        ...


@dataclass(frozen=True, slots=True)
class OverviewReport:
    """Everything the overview shows; None where a part could not be read."""

    health: HealthReport
    balance: tuple[int, int] | None
    wallet_height: int | None
    facts: StoreFacts | None
    problems: list[str]

    @property
    def blocks_behind(self) -> int | None:
        """Blocks the wallet has that the gateway has not synced yet (0: up to date)."""
        if self.wallet_height is None or self.facts is None or self.facts.synced_height is None:
            return None
        return max(self.wallet_height - self.facts.synced_height, 0)


class Overview:
    """Reads the overview and renders the metrics."""

    def __init__(
        self,
        store: FactsStore,
        wallet_status: WalletStatus,
        heights: HeightSource,
        exporter: MetricsExporter | None = None,
        *,
        timeout: float = 5.0,
    ) -> None:
        self._store = store
        self._wallet_status = wallet_status
        self._heights = heights
        self._exporter = exporter
        self._timeout = timeout

    @property
    def metrics_enabled(self) -> bool:
        """False with ``--no-metrics``."""
        return self._exporter is not None

    async def facts(self) -> StoreFacts:
        """The database's facts (raises when the database does not answer)."""
        return await self._store.facts()

    async def report(self) -> OverviewReport:
        """Health, balance, heights and facts, read at once; a part that fails is None
        and its reason is listed in ``problems`` (the rest is still worth showing)."""
        problems: list[str] = []
        health, balance, height, facts = await asyncio.gather(
            self._wallet_status.health(),
            self._part("balance", self._wallet_status.balance(), problems),
            self._part("wallet height", self._heights.get_height(), problems),
            self._part("database facts", self._store.facts(), problems),
        )
        return OverviewReport(health, balance, height, facts, problems)

    async def exposition(self) -> tuple[bytes, str]:
        """The Prometheus scrape body; database gauges are left out when it does not answer."""
        if self._exporter is None:
            raise RuntimeError("metrics are turned off (--no-metrics)")
        try:
            facts: StoreFacts | None = await self._store.facts()
        except XmrgateError as exc:
            log.warning("metrics: reading the database facts failed: %s", exc.message)
            facts = None
        return self._exporter.exposition(facts)

    async def _part(self, name: str, call: Awaitable[T], problems: list[str]) -> T | None:
        """``call``'s result, or None (with the reason in ``problems``) on failure or timeout."""
        try:
            return await asyncio.wait_for(call, timeout=self._timeout)
        except TimeoutError:
            problems.append(f"{name}: no answer in {self._timeout:.0f} s")
        except XmrgateError as exc:
            problems.append(f"{name}: {exc.message}")
        return None
