"""What the core needs from the outside world, as protocols.

The use cases in ``core/`` are written against these; ``adapters/`` implements them
(wallet-rpc client, SQL stores, HTTP sender, URL guard) and the unit tests implement
them with in-memory fakes. Nothing here imports an adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from xmrgate.domain.fiat import Quote
from xmrgate.domain.greenfield.invoice_row import InvoiceRow
from xmrgate.domain.records import OutboxEvent, PaymentRequest, PaymentStatus, StoredAnswer
from xmrgate.domain.wallet_answers import TxKeyCheck


class Wallet(Protocol):
    """The subset of monero-wallet-rpc the use cases call (``adapters/wallet_rpc.py``)."""

    async def create_address(self, label: str = "") -> tuple[str, int]:
        """A new subaddress of account 0 and its index."""
        ...

    async def skip_subaddresses(self, count: int) -> None:
        """Move the wallet's subaddress counter ``count`` indices ahead."""
        ...

    async def is_valid_address(self, address: str) -> bool:
        """Whether ``address`` is valid on the wallet's network."""
        ...

    async def address_network(self, address: str) -> str | None:
        """The network of a valid address of ANY network (``mainnet``, ``testnet`` or
        ``stagenet``; regtest addresses are mainnet's), None when it is not valid.

        wallet-rpc's ``validate_address`` with ``any_net_type``: it also checks the
        checksum, which ``domain.refund_address`` leaves to the wallet.
        """
        ...

    async def check_tx_key(self, txid: str, tx_key: str, address: str) -> TxKeyCheck:
        """How much transaction ``txid`` (whose secret key is ``tx_key``) gave ``address``.

        Any wallet connected to the daemon can answer, the receiver's or another. A
        wrong key or an address the transaction did not pay answers ``received`` 0; a
        key or txid that is not hex of the right length, an address that is not one,
        or a transaction the daemon does not know raise WalletRejected (400) with the
        wallet's message.
        """
        ...

    async def get_balance(self) -> tuple[int, int]:
        """Total and unlocked balance of account 0."""
        ...

    async def get_transfer_by_txid(self, txid: str) -> dict[str, Any] | None:
        """The wallet's record of one transaction, or None."""
        ...

    async def transfer_split(
        self, destinations: list[dict[str, Any]], *, priority: int, timeout: float
    ) -> dict[str, Any]:
        """Send; raises WalletTimeout / WalletUnavailable / WalletError."""
        ...

    async def is_view_only(self) -> bool:
        """Whether the open wallet is watch-only (holds no spend key)."""
        ...

    async def probe(self, *, timeout: float) -> bool:
        """Whether the wallet answers now."""
        ...


class PaymentRepository(Protocol):
    """Payment requests as the API reads and writes them (``adapters/store/payments.py``)."""

    async def create(
        self,
        *,
        address: str,
        subaddr_index: int,
        amount: int,
        description: str,
        callback_url: str | None,
        return_url: str | None,
        expires_at: datetime | None = None,
        underpay_tolerance: int = 0,
        status: str = "waiting",
        price: Quote | None = None,
        link_id: str | None = None,
        greenfield: InvoiceRow | None = None,
        idempotency_ref: str | None = None,
    ) -> PaymentRequest:
        """Insert; raises SubaddressTaken when the index is already used, and for a
        payment link's request (``link_id``) LinkInactive, LinkUsedUp or MissingReference when
        the link may not make it (decided in the inserting transaction). ``greenfield``:
        a Greenfield invoice's row, inserted with the new request's id in the same
        transaction (its failure is raised as is, and writes no request).
        ``idempotency_ref``: the Idempotency-Key claim it is made under (unique:
        AlreadyExists when a request was made under it already)."""
        ...

    async def highest_subaddr_index(self) -> int:
        """The highest subaddress index any request uses (0 when none)."""
        ...

    async def by_idempotency_ref(self, ref: str) -> PaymentRequest | None:
        """The request made under an Idempotency-Key claim's reference, if any."""
        ...

    async def get(self, address: str) -> PaymentRequest | None:
        """One request by address."""
        ...

    async def delete(self, address: str) -> bool:
        """Delete an unpaid request and its events; False when none has this address.

        Raises ``RequestHasFunds`` (``domain/errors.py``), deleting nothing, when a
        transfer to it is recorded: decided and done atomically, never check-then-delete.
        """
        ...

    async def status(self, address: str) -> PaymentStatus | None:
        """A request, its transfers and the synced height, read together."""
        ...


class OutboxRepository(Protocol):
    """Callback events as the API lists and retries them (``adapters/store/outbox.py``)."""

    async def for_request(self, request_id: int) -> list[OutboxEvent]:
        """Every event of one request, oldest first."""
        ...

    async def retry_now(self, request_id: int, event_id: str) -> OutboxEvent | None:
        """Make one event due now; None when it does not exist."""
        ...


class PayoutJournal(Protocol):
    """The payout journal (``adapters/store/payouts.py``)."""

    async def record_requested(
        self,
        destinations: list[dict[str, Any]],
        *,
        requested_by: str | None,
        idempotency_key: str | None,
    ) -> int:
        """Write a ``requested`` row before the wallet is asked; its id."""
        ...

    async def record_outcome(
        self,
        payout_id: int,
        state: str,
        *,
        fee: int | None = None,
        tx_hash_list: list[str] | None = None,
        error: str | None = None,
    ) -> None:
        """Record what the wallet answered."""
        ...

    async def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest payouts first."""
        ...


class IdempotencyRepository(Protocol):
    """Stored answers of idempotent requests (``adapters/store/idempotency.py``)."""

    @property
    def lease(self) -> float:
        """Seconds a running claim holds without being renewed."""
        ...

    async def claim(
        self, endpoint: str, key: str, request_hash: str, *, owner: str = "", ref: str = ""
    ) -> StoredAnswer | None:
        """Claim a key for ``owner`` (its work records ``ref``); None when it was free,
        else what it holds."""
        ...

    async def renew(self, endpoint: str, key: str, owner: str) -> bool:
        """Extend ``owner``'s lease on its running claim; False when it is not its any more."""
        ...

    async def take_over(self, endpoint: str, key: str, owner: str) -> str | None:
        """Make a running claim whose lease expired ``owner``'s; its ref, or None."""
        ...

    async def complete(self, endpoint: str, key: str, status: int, body: str) -> None:
        """Store the answer of a claimed key."""
        ...

    async def release(self, endpoint: str, key: str) -> None:
        """Forget a claimed key so that a retry runs again."""
        ...


class UrlGuard(Protocol):
    """Decides whether a merchant-given URL may be stored (SSRF defence)."""

    async def check(self, url: str, field: str) -> None:
        """Raise InvalidInput naming ``field`` when ``url`` may not be used."""
        ...


class Clock(Protocol):
    """Now, as an aware UTC datetime (a fake in tests)."""

    def __call__(self) -> datetime: ...


class CallbackQueue(Protocol):
    """The outbox as the delivery worker uses it (``adapters/store/outbox.py``)."""

    async def claim_due(self, worker: str, limit: int, lease: float) -> list[OutboxEvent]:
        """Claim up to ``limit`` due events for ``lease`` seconds, one per payment request."""
        ...

    async def record_attempt(
        self,
        event_id: str,
        worker: str,
        *,
        delivered: bool,
        status_code: int | None,
        error: str | None,
        next_attempt_at: datetime | None,
    ) -> None:
        """Count one try, store its outcome and release the claim.

        Not delivered and no next attempt means the event has failed for good.
        """
        ...

    async def next_due(self) -> datetime | None:
        """When the earliest claimable event becomes due (None when nothing is pending)."""
        ...


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """What one callback POST came to.

    ``error`` is what the merchant sees as ``last_error``: short and without socket
    details (``timeout``, ``connection refused``, ``HTTP 500``). ``permanent`` means
    trying again cannot help (the stored URL itself is invalid).
    """

    delivered: bool
    status_code: int | None = None
    error: str | None = None
    permanent: bool = False


class CallbackSender(Protocol):
    """POSTs one callback (``adapters/callback_http.py``); the worker bounds its duration."""

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        """POST ``body`` to ``url``; failures come back as a result, not an exception."""
        ...

    async def aclose(self) -> None:
        """Close kept-alive connections."""
        ...
