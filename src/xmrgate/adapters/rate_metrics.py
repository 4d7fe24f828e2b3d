"""Prometheus metrics of the exchange rates, read from the ``RateBook`` at each scrape.

Nothing is written to prometheus-client's own metric objects: in multiprocess mode
(``--workers N``) those live in files that a scrape merges, whereas each process holds
its own book. A collector that reads the book when scraped works alike in both modes.

* ``xmrgate_rate_age_seconds{currency}``: age of the oldest answer behind the rate in
  use; absent while the currency has no rate.
* ``xmrgate_rate_available{currency}``: 1 while the currency has a rate, else 0 (what
  an alert can watch without ``absent()``).
* ``xmrgate_rate_source_misses_total{source}``: fetches of a source that gave no usable
  answer, every currency counted.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from xmrgate.core.rates import RateBook


class RateCollector(Collector):
    """The rate metrics of one book."""

    def __init__(self, book: RateBook) -> None:
        self._book = book

    def collect(self) -> Iterator[Metric]:
        """The metrics as the book stands now."""
        age = GaugeMetricFamily(
            "xmrgate_rate_age_seconds",
            "Age of the oldest source answer behind the exchange rate in use, by currency "
            "(absent while there is no rate).",
            labels=["currency"],
        )
        available = GaugeMetricFamily(
            "xmrgate_rate_available",
            "1 while the currency has a fresh, agreeing exchange rate, else 0.",
            labels=["currency"],
        )
        for currency in self._book.currencies:
            seconds = self._book.age(currency)
            available.add_metric([currency], 0 if seconds is None else 1)
            if seconds is not None:
                age.add_metric([currency], seconds)
        yield age
        yield available
        misses = CounterMetricFamily(
            "xmrgate_rate_source_misses",
            "Exchange-rate fetches that gave no usable answer, by source.",
            labels=["source"],
        )
        for source, count in self._book.misses.items():
            misses.add_metric([source], count)
        yield misses


def register(registry: CollectorRegistry, book: RateBook) -> RateCollector:
    """Register the rate metrics of ``book`` on ``registry``; returns the collector."""
    collector = RateCollector(book)
    registry.register(collector)
    return collector
