"""The exchange rates of fiat prices, built from the ``--rate-*`` options.

One ``RateBook`` per process, shared by every store: a rate does not depend on the
shop. The processes of one database share the sources' answers through it (one
process asks, every process quotes from the stored answers). ``None`` when
``--rate-currencies`` is empty: fiat prices are then refused with a 400 and nothing is
fetched.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from xmrgate.adapters.rate_sources import build_sources, rate_client
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.rate_answers import SqlRateAnswers
from xmrgate.config import Settings
from xmrgate.core.rates import RateBook


@dataclass
class Rates:
    """The book and the HTTP client its sources share (closed at shutdown)."""

    book: RateBook
    client: httpx.AsyncClient


def build_rates(settings: Settings, db: Database) -> Rates | None:
    """The rate book of ``settings``, sharing its answers through ``db``, or None when
    no currency is priced."""
    currencies = settings.rate_currency_list
    if not currencies:
        return None
    client = rate_client(settings.rate_proxy, settings.rate_timeout)
    sources = build_sources(settings.rate_source_names, settings.rate_source_bases, client=client)
    book = RateBook(
        sources,
        currencies,
        refresh=settings.rate_refresh,
        max_age=settings.rate_max_age,
        max_spread=settings.rate_max_spread,
        min_sources=settings.rate_min_sources,
        timeout=settings.rate_timeout,
        shared=SqlRateAnswers(db),
    )
    return Rates(book, client)
