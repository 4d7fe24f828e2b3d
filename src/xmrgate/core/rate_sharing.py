"""One exchange rate for the cluster: the stored answers and who asks.

Several gateway processes on one PostgreSQL database would each ask the sources every
refresh and could price the same second differently. Instead one process leads (it
holds the rates' advisory lock): it asks the sources and stores every source's last
answer; the others follow, reading those answers each refresh. Every process quotes
from the stored answers in its memory, so processes holding the same answers price
alike. On SQLite the one process always leads.

``RateAnswers`` is the port (``adapters/store/rate_answers.py``); :class:`AnswerSharing`
is the rate book's use of it, where a database failure is logged (once per change) and
never raised: the book goes on quoting from memory and tries again at the next refresh.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from xmrgate.domain.errors import XmrgateError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SharedAnswer:
    """One source's last answer for one currency, as the leader stored it.

    ``value`` and ``at`` are its last good answer (None: none yet); ``error`` is why its
    latest try failed (None: that try gave ``value``); ``checked_at`` is when that try
    ended; ``misses`` counts its tries that gave no usable answer.
    """

    source: str
    currency: str
    value: Decimal | None
    at: datetime | None
    error: str | None
    checked_at: datetime
    misses: int


class RateAnswers(Protocol):
    """Where the cluster's answers are kept, and who may write them."""

    async def lead(self) -> bool:
        """True when this process leads now: it keeps the lead it has, or takes it when
        free. Raises ``XmrgateError`` when that cannot be known."""
        ...

    async def store(self, answers: Sequence[SharedAnswer]) -> None:
        """Replace the stored answers of these (source, currency) pairs; only while
        leading. Raises ``XmrgateError`` (the lead may be lost with it)."""
        ...

    async def load(self) -> list[SharedAnswer]:
        """Every stored answer. Raises ``XmrgateError``."""
        ...

    async def release(self) -> None:
        """Give up the lead at once (shutdown); never raises."""
        ...


class AnswerSharing:
    """The rate book's side of :class:`RateAnswers`: failures logged, never raised."""

    def __init__(self, answers: RateAnswers) -> None:
        self._answers = answers
        self._leading: bool | None = None
        # The last failure logged per operation: a state is logged when it begins.
        self._failing: dict[str, str | None] = {}

    async def lead(self) -> bool:
        """Whether this process asks the sources at this refresh (False when the
        database cannot say: nobody can store, so nobody should ask)."""
        try:
            leading = await self._answers.lead()
        except XmrgateError as exc:
            self._failed("take the lead for", exc)
            leading = False
        else:
            self._worked("take the lead for")
        if leading != self._leading:
            self._leading = leading
            if leading:
                log.info(
                    "exchange rates: this process (pid %d) leads: it asks the sources "
                    "and stores their answers",
                    os.getpid(),
                )
            else:
                log.info(
                    "exchange rates: this process (pid %d) follows: it reads the answers "
                    "stored by the leader",
                    os.getpid(),
                )
        return leading

    async def load(self) -> list[SharedAnswer] | None:
        """The stored answers, or None when they cannot be read now."""
        try:
            answers = await self._answers.load()
        except XmrgateError as exc:
            self._failed("read", exc)
            return None
        self._worked("read")
        return answers

    async def store(self, answers: Sequence[SharedAnswer]) -> None:
        """Store ``answers``; a failure is logged (the book keeps quoting from them)."""
        try:
            await self._answers.store(answers)
        except XmrgateError as exc:
            self._failed("store", exc)
        else:
            self._worked("store")

    async def release(self) -> None:
        """Give up the lead (shutdown)."""
        await self._answers.release()

    def _failed(self, doing: str, exc: XmrgateError) -> None:
        if self._failing.get(doing) != exc.message:
            self._failing[doing] = exc.message
            log.warning(
                "exchange rates: cannot %s the cluster's answers (retried at the next refresh): %s",
                doing,
                exc.message,
            )

    def _worked(self, doing: str) -> None:
        if self._failing.get(doing) is not None:
            log.info("exchange rates: can %s the cluster's answers again", doing)
        self._failing[doing] = None
