"""What the gateway reports about its own work: the observer port.

The sync loop, the callback worker, the wallet-rpc client and the HTTP layer call an
``Observer`` at the moments an operator wants counted and timed. The Prometheus
adapter (``adapters/metrics.py``) implements it; ``NullObserver`` (``--no-metrics``,
unit tests) does nothing. Core never imports prometheus_client.
"""

from __future__ import annotations

from typing import Protocol

# How a callback try ended, the ``result`` label of the deliveries counter.
DELIVERED = "delivered"  # answered 2xx
RETRYING = "retrying"  # failed, another try is scheduled
FAILED = "failed"  # failed, and no try is left: the event is marked failed
CALLBACK_RESULTS = (DELIVERED, RETRYING, FAILED)

# The ``wallet`` label of the sync metrics: the main wallet's, or a store's own (its id).
MAIN_WALLET = "main"


class Observer(Protocol):
    """Receives what happened; every method must be cheap and must never raise."""

    def sync_tick(
        self, *, ran: bool, seconds: float, wallet_height: int | None, wallet: str = MAIN_WALLET
    ) -> None:
        """A tick of ``wallet`` ended without an error (``ran`` False: another process
        holds the lock, or the wallet is far behind); ``wallet_height`` if read."""
        ...

    def sync_tick_failed(self, seconds: float, wallet: str = MAIN_WALLET) -> None:
        """A tick of ``wallet`` raised (wallet or database trouble); the loop goes on."""
        ...

    def sync_step_failed(self, step: str, wallet: str = MAIN_WALLET) -> None:
        """A step before the sync of transfers failed and was skipped; the tick went on."""
        ...

    def callback_attempt(self, result: str, delay: float | None) -> None:
        """One callback try ended with ``result`` (one of ``CALLBACK_RESULTS``);
        ``delay`` is seconds from the event's creation to its 2xx answer."""
        ...

    def wallet_call(self, method: str, seconds: float, ok: bool) -> None:
        """One JSON-RPC call to monero-wallet-rpc took ``seconds``."""
        ...

    def http_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """One HTTP request, by route template (``/receive/{address}``), was answered."""
        ...


class NullObserver:
    """An observer that records nothing."""

    def sync_tick(
        self, *, ran: bool, seconds: float, wallet_height: int | None, wallet: str = MAIN_WALLET
    ) -> None:
        """Ignore the tick."""

    def sync_tick_failed(self, seconds: float, wallet: str = MAIN_WALLET) -> None:
        """Ignore the failure."""

    def sync_step_failed(self, step: str, wallet: str = MAIN_WALLET) -> None:
        """Ignore the skipped step."""

    def callback_attempt(self, result: str, delay: float | None) -> None:
        """Ignore the try."""

    def wallet_call(self, method: str, seconds: float, ok: bool) -> None:
        """Ignore the call."""

    def http_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Ignore the request."""


NO_OBSERVER = NullObserver()
