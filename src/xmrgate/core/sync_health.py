"""Which wallet's sync is failing, for every process of a cluster to name.

The sync loop of a wallet records each failed tick (``SyncHealthStore.failed``: the
count in a row, the error, since when) and clears the record at the first tick that
runs again. The record is in the database, not in the ticking process: with several
processes only the one holding the wallet's lock ticks, and ``/health`` of every
process must say that payments to that wallet are not being seen. A wallet whose
ticks failed ``FAILING_AFTER`` times in a row makes ``/health`` answer 503 naming it
and the error; ``xmrgate status`` and the dashboard show the same message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

log = logging.getLogger(__name__)

# Failed ticks in a row before a wallet is named unhealthy: one or two are a wallet-rpc
# restart or a busy database; three (6 s at the default poll) are not.
FAILING_AFTER = 3


@dataclass(frozen=True, slots=True)
class SyncTrouble:
    """A wallet's sync failing: which wallet (for people), how many ticks in a row, the
    last error, since when."""

    wallet: str
    failures: int
    error: str
    since: datetime

    def failing(self) -> bool:
        """Whether this is enough to call the wallet's sync failing."""
        return self.failures >= FAILING_AFTER


class SyncHealthStore(Protocol):
    """One wallet's record of failed ticks (``adapters/store/sync_health.py``)."""

    async def failed(self, error: str) -> None:
        """Count one more failed tick in a row, with its error."""
        ...

    async def recovered(self) -> None:
        """Forget the failures: a tick ran."""
        ...


class SyncHealthTracker:
    """What the sync loop tells the store, written only when it changes something.

    A tick that runs clears the record once after start (another process may have left
    one) and after every failure; the common case writes nothing. Writing the record
    can fail too (the database down is a common cause of failed ticks): that is
    logged, never raised, and the loop goes on.
    """

    def __init__(self, store: SyncHealthStore | None) -> None:
        self._store = store
        self._clean = False

    async def failed(self, error: str) -> None:
        """Record a failed tick."""
        self._clean = False
        if self._store is None:
            return
        try:
            await self._store.failed(error[:1000])
        except Exception as exc:  # the database is likely what failed the tick
            log.debug("recording a failed sync tick failed too: %r", exc)

    async def ran(self) -> None:
        """A tick ran: clear the record unless it is known clear."""
        if self._clean or self._store is None:
            return
        try:
            await self._store.recovered()
            self._clean = True
        except Exception as exc:
            log.debug("clearing the sync's failure record failed: %r", exc)
