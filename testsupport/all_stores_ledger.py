"""What the all-stores scenario expects of each payment, and how deliveries are counted.

The data of ``testsupport/all_stores.py``: its constants, the stores and payments it
makes, and the tally of callbacks and webhook deliveries against what each payment is
due (used by ``tests/integration/test_all_stores_together.py`` and
``bench/all_stores_soak.py``).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xmrgate.devnet import WalletRpc

XMR = 10**12
# Blocks until a received output is spendable (CRYPTONOTE_DEFAULT_TX_SPENDABLE_AGE).
UNLOCK_BLOCKS = 10
OPERATOR_KEY = "all-stores-operator-key-0123456789"
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}
DEFAULT_SECRET = "all-stores-default-secret-0123"
# What the sync loop logs when a tick raises (``core/sync.py``), and when a tick goes on
# without its lookahead check, which failed (``core/wallet_checks.py``); their counters.
FAILED_TICK = "sync tick failed"
FAILED_CHECK = re.compile(r"lookahead check\b.*\bfailed")
# The start of a record of the gateway's log (a traceback's lines come after theirs).
LOG_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
TICK_FAILURES_METRIC = "xmrgate_sync_tick_failures_total"
STEP_FAILURES_METRIC = "xmrgate_sync_step_failures_total"
# The callbacks of a request paid once in full; of one whose payment a reorg removed
# before it was paid again (the gone transaction's two, then the new one's).
PAID = ("transfer.confirmed", "transfer.unlocked")
PAID_AGAIN = ("transfer.confirmed", "transfer.gone", *PAID)
# The webhook events of an invoice paid in full at once (the WooCommerce plugin's list
# without the ones of expiries and marks); InvoiceSettled comes last.
WEBHOOK_EVENTS = (
    "InvoiceReceivedPayment",
    "InvoicePaymentSettled",
    "InvoiceProcessing",
    "InvoiceSettled",
)
# B reads the stores table every 5 s (``core/store_gateways.RELOAD_EVERY``): a store
# made through A works on B after that, with room for a busy machine.
RELOAD_WAIT = 15.0


def gateway_args(poll: str, lookahead: str) -> list[str]:
    """The options of A and B (``Gateway`` adds the devnet's ZeroMQ, loopback callbacks)."""
    return [
        "--api-key",
        OPERATOR_KEY,
        "--callback-secret",
        DEFAULT_SECRET,
        "--callback-retry-base",
        "0.5s",
        # A claim lasts the try's deadline + 30 s: a delivery claimed by a process that is
        # then killed waits 32 s for the other, not 40 s.
        "--callback-timeout",
        "2s",
        # Each store fills its own pool when made: a small one keeps wallet-rpc free.
        "--address-pool-size",
        "8",
        "--address-pool-low-water",
        "2",
        "--lookahead-check-interval",
        lookahead,
        "--poll-frequency",
        poll,
    ]


@dataclass(frozen=True)
class Store:
    """One store: the headers that act on it, its callback and webhook secrets, and the
    wallet-rpc whose wallet receives its payments."""

    id: str
    kind: str  # "default", "account" (of the main wallet) or "own" (its own wallet-rpc)
    auth: dict[str, str]
    callback_secret: str
    webhook_secret: str
    rpc: WalletRpc


@dataclass
class Payment:
    """A payment request (or Greenfield invoice) of a store, and how it was paid.

    ``paid_at``: when the block with its latest transaction was mined (monotonic);
    ``credited_at``: when a gateway first showed that transaction mined and the amount
    covered in full.
    """

    store: Store
    address: str
    amount: int
    round: int
    made_on: str  # "A" or "B"
    invoice: str | None = None  # the Greenfield invoice id (no callback URL then)
    txs: list[str] = field(default_factory=list)
    reorged: bool = False
    mined_height: int = 0
    paid_at: float | None = None
    credited_at: float | None = None

    @property
    def callbacks(self) -> tuple[str, ...]:
        """The callback events this request must get, in order (none for an invoice)."""
        if self.invoice is not None:
            return ()
        return PAID_AGAIN if self.reorged else PAID

    @property
    def webhook_events(self) -> tuple[str, ...]:
        """The webhook event types this invoice must get (none for a plain request)."""
        return WEBHOOK_EVENTS if self.invoice is not None else ()

    @property
    def credit_seconds(self) -> float | None:
        """From its block to its credit (None while not credited)."""
        if self.paid_at is None or self.credited_at is None:
            return None
        return self.credited_at - self.paid_at


@dataclass(frozen=True)
class Tally:
    """Deliveries counted against what was due: each due one delivered once, the
    extra ones (duplicates), the due ones that never came."""

    due: int
    once: int
    duplicated: int
    missing: int


def tally(due: Counter[tuple[str, str]], got: Iterable[tuple[str, str]]) -> Tally:
    """Count ``got`` (``(address or invoice, event)`` per delivery) against ``due``."""
    seen = Counter(got)
    keys = set(due) | set(seen)
    return Tally(
        due=sum(due.values()),
        once=sum(min(due[k], seen[k]) for k in keys),
        duplicated=sum(max(seen[k] - due[k], 0) for k in keys),
        missing=sum(max(due[k] - seen[k], 0) for k in keys),
    )


def due_callbacks(payments: Iterable[Payment]) -> Counter[tuple[str, str]]:
    """``(address, event)`` -> how many callbacks of it the payments must get."""
    return Counter((p.address, kind) for p in payments for kind in p.callbacks)


def due_webhooks(payments: Iterable[Payment]) -> Counter[tuple[str, str]]:
    """``(invoice id, type)`` -> how many webhook deliveries of it the invoices must get."""
    return Counter(
        (p.invoice, kind) for p in payments if p.invoice is not None for kind in p.webhook_events
    )


def delivery_key(body: dict[str, Any]) -> tuple[str, str]:
    """``(address, event)`` of a callback body, ``(invoice id, type)`` of a webhook's."""
    if "invoiceId" in body:
        return str(body["invoiceId"]), str(body["type"])
    return str(body.get("address")), str(body.get("event"))


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """(min, median, max) of ``values``; NaNs for none."""
    if not values:
        nan = float("nan")
        return nan, nan, nan
    return min(values), statistics.median(values), max(values)
