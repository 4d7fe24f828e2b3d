"""The gateway at a glance: what ``GET /status``, ``xmrgate status`` and ``/metrics`` show.

Facts of the database (synced height, callbacks pending and failed, payment requests
by status, the address pool) are read at the moment they are asked for, in one
statement (``adapters/store/overview.py``), never counted by hand in memory: every
process of ``--workers N`` reports the same numbers and a restart loses nothing.

With ``--daemon-address`` the overview also sets the wallet's height against monerod's:
a wallet stuck behind the network (its node stopped, wallet-rpc lost its daemon) would
otherwise look up to date, since "behind" compares the gateway with its wallet. The
daemon's height is the one the sync tick last read (``DaemonHeights``), not a call per
request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from xmrgate.core.wallet_status import HealthReport, WalletStatus
from xmrgate.domain.errors import NotFound, XmrgateError
from xmrgate.domain.invoice import InvoiceStatus

log = logging.getLogger(__name__)

T = TypeVar("T")

# Statuses of a payment request as the sync tick records them, in the order they are
# shown; exports list every one, zero included, so that a series never vanishes.
REQUEST_STATUSES = tuple(status.value for status in InvoiceStatus)


@dataclass(frozen=True, slots=True)
class StoreBreakdown:
    """The counts of ``StoreFacts`` store by store."""

    # (store, status) -> requests; (store, pending|failed) -> callbacks; store -> pool.
    requests: dict[tuple[str, str], int] = field(default_factory=dict)
    callbacks: dict[tuple[str, str], int] = field(default_factory=dict)
    pool: dict[str, int] = field(default_factory=dict)
    # store -> (open unmatched receipts not gone, their piconero); absent: none.
    unmatched: dict[str, tuple[int, int]] = field(default_factory=dict)
    # sync_state row -> the height synced there (1: the main wallet; a store on its own
    # wallet has its own row).
    synced: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StoreFacts:
    """What the database says, read in one statement."""

    synced_height: int | None
    callbacks_pending: int
    callbacks_failed: int
    requests_by_status: dict[str, int] = field(default_factory=dict)
    # Subaddresses ready in the pool (None: this gateway has no pool table).
    address_pool: int | None = None
    # The same by store (the ``store`` label of /metrics).
    by_store: StoreBreakdown | None = None

    def of(self, store_id: str, sync_id: int) -> StoreFacts:
        """The facts of one store; its wallet's synced height read from row ``sync_id``."""
        b = self.by_store or StoreBreakdown()
        mine = {k: n for k, n in b.requests.items() if k[0] == store_id}
        callbacks = {k: n for k, n in b.callbacks.items() if k[0] == store_id}
        pool = {k: n for k, n in b.pool.items() if k == store_id}
        return StoreFacts(
            synced_height=b.synced.get(sync_id),
            callbacks_pending=sum(n for k, n in callbacks.items() if k[1] == "pending"),
            callbacks_failed=sum(n for k, n in callbacks.items() if k[1] == "failed"),
            requests_by_status={k[1]: n for k, n in mine.items()},
            address_pool=None if self.address_pool is None else pool.get(store_id, 0),
            by_store=StoreBreakdown(
                requests=mine,
                callbacks=callbacks,
                pool=pool,
                unmatched={k: v for k, v in b.unmatched.items() if k == store_id},
                synced={k: v for k, v in b.synced.items() if k == sync_id},
            ),
        )

    def requests(self) -> dict[str, int]:
        """Requests by status, every known status present (0 when none)."""
        counts = dict.fromkeys(REQUEST_STATUSES, 0)
        counts.update(self.requests_by_status)
        return counts


class FactsOfStore:
    """The facts of one store (the overview of a store's key: never another store's)."""

    def __init__(self, facts: FactsStore, store_id: str, sync_id: int) -> None:
        self._facts = facts
        self._store_id = store_id
        self._sync_id = sync_id

    async def facts(self) -> StoreFacts:
        """The gateway's facts, narrowed to this store."""
        return (await self._facts.facts()).of(self._store_id, self._sync_id)


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


class DaemonHeights(Protocol):
    """monerod's height, as recently read (``adapters/daemon_rpc.py``)."""

    async def recent_height(self) -> int:
        """The daemon's height (blocks) read a few seconds ago at most; raises a
        ``domain.errors`` error when the daemon did not answer."""
        ...


@dataclass(frozen=True, slots=True)
class DaemonFacts:
    """What the overview knows of monerod (only with ``--daemon-address``)."""

    # None: the daemon did not answer.
    height: int | None


class MetricsExporter(Protocol):
    """Renders the metrics of this gateway (``adapters/metrics.py``)."""

    def exposition(
        self, facts: StoreFacts | None, daemon: DaemonFacts | None = None
    ) -> tuple[bytes, str]:
        """The scrape body and its content type; ``facts`` None: the database did not answer;
        ``daemon`` None: no ``--daemon-address``, nothing to say about monerod."""
        ...


@dataclass(frozen=True, slots=True)
class OverviewReport:
    """Everything the overview shows; None where a part could not be read."""

    health: HealthReport
    balance: tuple[int, int] | None
    wallet_height: int | None
    facts: StoreFacts | None
    problems: list[str]
    # None: no --daemon-address (the overview says nothing about monerod).
    daemon: DaemonFacts | None = None

    @property
    def blocks_behind(self) -> int | None:
        """Blocks the wallet has that the gateway has not synced yet (0: up to date)."""
        if self.wallet_height is None or self.facts is None or self.facts.synced_height is None:
            return None
        return max(self.wallet_height - self.facts.synced_height, 0)

    @property
    def wallet_behind_daemon(self) -> int | None:
        """Blocks the daemon has that the wallet has not scanned yet (0: up to date);
        None without a daemon address or when either height is unknown."""
        if self.wallet_height is None or self.daemon is None or self.daemon.height is None:
            return None
        return max(self.daemon.height - self.wallet_height, 0)


class Overview:
    """Reads the overview and renders the metrics."""

    def __init__(
        self,
        store: FactsStore,
        wallet_status: WalletStatus,
        heights: HeightSource,
        exporter: MetricsExporter | None = None,
        *,
        daemon: DaemonHeights | None = None,
        timeout: float = 5.0,
    ) -> None:
        """``daemon``: monerod's heights with ``--daemon-address`` (None without)."""
        self._store = store
        self._wallet_status = wallet_status
        self._heights = heights
        self._exporter = exporter
        self._daemon = daemon
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
        health, balance, height, facts, daemon = await asyncio.gather(
            self._wallet_status.health(),
            # Never waits for the start-up's wallet check: the overview shows what it has.
            self._part("balance", self._wallet_status.balance(wait=False), problems),
            self._part("wallet height", self._heights.get_height(), problems),
            self._part("database facts", self._store.facts(), problems),
            self._daemon_facts(problems),
        )
        return OverviewReport(health, balance, height, facts, problems, daemon)

    async def exposition(self) -> tuple[bytes, str]:
        """The Prometheus scrape body; database gauges are left out when it does not answer."""
        if self._exporter is None:
            # A store's own overview: /metrics is the gateway's (every store's labels).
            raise NotFound("the metrics are the gateway's: ask with an operator key")
        try:
            facts: StoreFacts | None = await self._store.facts()
        except XmrgateError as exc:
            log.warning("metrics: reading the database facts failed: %s", exc.message)
            facts = None
        return self._exporter.exposition(facts, await self._daemon_facts([]))

    async def _daemon_facts(self, problems: list[str]) -> DaemonFacts | None:
        """monerod's recent height (None without ``--daemon-address``)."""
        if self._daemon is None:
            return None
        height = await self._part("daemon height", self._daemon.recent_height(), problems)
        return DaemonFacts(height)

    async def _part(self, name: str, call: Awaitable[T], problems: list[str]) -> T | None:
        """``call``'s result, or None (with the reason in ``problems``) on failure or timeout."""
        try:
            return await asyncio.wait_for(call, timeout=self._timeout)
        except TimeoutError:
            problems.append(f"{name}: no answer in {self._timeout:.0f} s")
        except XmrgateError as exc:
            problems.append(f"{name}: {exc.message}")
        return None
