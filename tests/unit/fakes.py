"""In-memory fakes of the wallet and the stores, for the use-case unit tests.

They reach failure paths the real processes cannot produce on demand (a journal
write failing right after the wallet sent, a wallet that forgot its subaddresses).
The integration tests prove the same behaviour on the real wallet and databases.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from xmrgate.core.wallet_checks import WalletChecks
from xmrgate.core.wallet_mode import WalletMode
from xmrgate.core.wallet_status import WalletIdentity
from xmrgate.domain.errors import (
    AlreadyExists,
    DatabaseUnavailable,
    RequestHasFunds,
    SubaddressTaken,
    WalletRestricted,
)
from xmrgate.domain.fiat import Quote
from xmrgate.domain.greenfield.invoice_row import GreenfieldInvoice, InvoiceRow
from xmrgate.domain.records import OutboxEvent, PaymentRequest, PaymentStatus, StoredAnswer
from xmrgate.domain.wallet_answers import TxKeyCheck

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
# check_tx_key's answer to a wrong key or address (wallet-rpc 0.18 raises no error).
NOTHING_RECEIVED = TxKeyCheck(received=0, confirmations=0, in_pool=False)


def address_of(index: int) -> str:
    """A base58-looking subaddress for an index."""
    return f"8Fake{index:060d}".replace("0", "A")


@dataclass
class FakeWallet:
    """A wallet whose answers a test sets; ``sent`` counts transfer_split calls."""

    next_index: int = 1
    transfer_error: BaseException | None = None
    invalid_addresses: set[str] = field(default_factory=set)
    # Set: is_valid_address raises it (validate_address timing out or refused).
    validate_error: BaseException | None = None
    sent: list[list[dict[str, Any]]] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    balance: tuple[int, int] = (0, 0)
    up: bool = True
    # A watch-only wallet: transfer_split answers like wallet-rpc's (hashes + unsigned set).
    view_only: bool = False
    # Set: is_view_only raises it (a wallet that does not answer the question).
    mode_error: BaseException | None = None
    mode_checks: int = 0
    # address_network: per-address answers; any other address is None when it is in
    # invalid_addresses, else ``network``. Also raises validate_error when set.
    address_networks: dict[str, str | None] = field(default_factory=dict)
    network: str = "mainnet"
    # check_tx_key: answers by (txid, tx_key, address); anything else gets
    # ``tx_key_default`` (received 0: what wallet-rpc says of a wrong key or address).
    # Set tx_key_error to raise it instead (e.g. WalletRejected("Tx key has invalid
    # format", code=-25)). ``tx_key_checks`` records every question.
    tx_key_answers: dict[tuple[str, str, str], TxKeyCheck] = field(default_factory=dict)
    tx_key_default: TxKeyCheck = NOTHING_RECEIVED
    tx_key_error: BaseException | None = None
    tx_key_checks: list[tuple[str, str, str]] = field(default_factory=list)

    async def create_address(self, label: str = "") -> tuple[str, int]:
        index = self.next_index
        self.next_index += 1
        return address_of(index), index

    async def skip_subaddresses(self, count: int) -> None:
        self.skipped.append(count)
        self.next_index += count

    async def is_valid_address(self, address: str) -> bool:
        if self.validate_error is not None:
            raise self.validate_error
        return address not in self.invalid_addresses

    async def address_network(self, address: str) -> str | None:
        if self.validate_error is not None:
            raise self.validate_error
        if address in self.address_networks:
            return self.address_networks[address]
        return None if address in self.invalid_addresses else self.network

    async def check_tx_key(self, txid: str, tx_key: str, address: str) -> TxKeyCheck:
        self.tx_key_checks.append((txid, tx_key, address))
        if self.tx_key_error is not None:
            raise self.tx_key_error
        return self.tx_key_answers.get((txid, tx_key, address), self.tx_key_default)

    async def get_balance(self) -> tuple[int, int]:
        return self.balance

    async def get_transfer_by_txid(self, txid: str) -> dict[str, Any] | None:
        return None

    async def transfer_split(
        self, destinations: list[dict[str, Any]], *, priority: int, timeout: float
    ) -> dict[str, Any]:
        self.sent.append(destinations)
        if self.transfer_error is not None:
            raise self.transfer_error
        n = len(self.sent)
        answer: dict[str, Any] = {
            "tx_hash_list": [f"{n:064x}"],
            "amount_list": [sum(int(d["amount"]) for d in destinations)],
            "fee_list": [100],
        }
        if self.view_only:
            answer["unsigned_txset"] = "4d6f6e65726f20756e7369676e6564"
        return answer

    async def is_view_only(self) -> bool:
        self.mode_checks += 1
        if self.mode_error is not None:
            raise self.mode_error
        return self.view_only

    async def probe(self, *, timeout: float) -> bool:
        return self.up


@dataclass
class FakePaymentStore:
    """Payment requests in a dict, with the unique subaddress index of the real table."""

    requests: dict[str, PaymentRequest] = field(default_factory=dict)
    transfers: dict[str, list[Any]] = field(default_factory=dict)
    # The Greenfield rows written with their requests, by invoice id.
    invoice_rows: dict[str, GreenfieldInvoice] = field(default_factory=dict)
    # Idempotency-Key claim reference -> the address of the request made under it.
    refs: dict[str, str] = field(default_factory=dict)

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
        if idempotency_ref is not None and idempotency_ref in self.refs:
            raise AlreadyExists("a row with the same key is already stored")
        if any(r.subaddr_index == subaddr_index for r in self.requests.values()):
            raise SubaddressTaken(f"subaddress index {subaddr_index} is already in use")
        request = PaymentRequest(
            id=len(self.requests) + 1,
            address=address,
            subaddr_index=subaddr_index,
            amount=amount,
            description=description,
            callback_url=callback_url,
            return_url=return_url,
            created_at=NOW,
            created_height=None,
            expires_at=expires_at,
            underpay_tolerance=underpay_tolerance,
            status=status,
            price=price,
            link=link_id,
        )
        if greenfield is not None:
            # As the real store: a duplicate row writes neither.
            if greenfield.id in self.invoice_rows:
                raise AlreadyExists("a row with the same key is already stored")
            self.invoice_rows[greenfield.id] = greenfield.of_request(request.id)
        self.requests[address] = request
        if idempotency_ref is not None:
            self.refs[idempotency_ref] = address
        return request

    async def by_idempotency_ref(self, ref: str) -> PaymentRequest | None:
        address = self.refs.get(ref)
        return None if address is None else self.requests.get(address)

    async def highest_subaddr_index(self) -> int:
        return max((r.subaddr_index for r in self.requests.values()), default=0)

    async def get(self, address: str) -> PaymentRequest | None:
        return self.requests.get(address)

    async def delete(self, address: str) -> bool:
        # As the real store: a request with a transfer is refused and kept, in one step.
        if self.transfers.get(address):
            raise RequestHasFunds()
        return self.requests.pop(address, None) is not None

    async def status(self, address: str) -> PaymentStatus | None:
        request = self.requests.get(address)
        if request is None:
            return None
        return PaymentStatus(request, list(self.transfers.get(address, [])), 100)


@dataclass
class FakeOutbox:
    """Callback events per request."""

    events: dict[int, list[OutboxEvent]] = field(default_factory=dict)

    async def for_request(self, request_id: int) -> list[OutboxEvent]:
        return list(self.events.get(request_id, []))

    async def retry_now(self, request_id: int, event_id: str) -> OutboxEvent | None:
        return next((e for e in self.events.get(request_id, []) if e.id == event_id), None)


@dataclass
class FakeJournal:
    """The payout journal; ``fail_outcome`` makes record_outcome raise like a lost DB."""

    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    fail_requested: bool = False
    fail_outcome: bool = False

    async def record_requested(
        self,
        destinations: list[dict[str, Any]],
        *,
        requested_by: str | None,
        idempotency_key: str | None,
    ) -> int:
        if self.fail_requested:
            raise DatabaseUnavailable("the database is not answering")
        payout_id = len(self.rows) + 1
        self.rows[payout_id] = {"state": "requested", "destinations": destinations}
        return payout_id

    async def record_outcome(
        self,
        payout_id: int,
        state: str,
        *,
        fee: int | None = None,
        tx_hash_list: list[str] | None = None,
        error: str | None = None,
    ) -> None:
        if self.fail_outcome:
            raise DatabaseUnavailable("the database is not answering")
        self.rows[payout_id].update(state=state, fee=fee, tx_hash_list=tx_hash_list, error=error)

    async def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        return [dict(id=k, **v) for k, v in sorted(self.rows.items(), reverse=True)][:limit]


@dataclass
class FakeIdempotencyStore:
    """Idempotency keys in a dict, claimed and completed like the real table.

    ``fail_complete`` / ``fail_release``: storing the answer / releasing the key raises
    like a lost database (the key then stays ``running``, as the real row would);
    ``release_calls`` lists every release asked for, failed ones included. ``now`` is
    the clock leases are measured with (moved by the test).
    """

    keys: dict[tuple[str, str], StoredAnswer] = field(default_factory=dict)
    fail_complete: bool = False
    fail_release: bool = False
    release_calls: list[tuple[str, str]] = field(default_factory=list)
    lease: float = 10.0
    now: datetime = NOW
    renewals: int = 0

    async def claim(
        self, endpoint: str, key: str, request_hash: str, *, owner: str = "", ref: str = ""
    ) -> StoredAnswer | None:
        found = self.keys.get((endpoint, key))
        if found is None:
            self.keys[(endpoint, key)] = StoredAnswer(
                request_hash,
                "running",
                None,
                None,
                NOW,
                owner=owner,
                lease_until=self.now + timedelta(seconds=self.lease),
                ref=ref,
            )
        return found

    async def renew(self, endpoint: str, key: str, owner: str) -> bool:
        old = self.keys.get((endpoint, key))
        if old is None or old.state != "running" or old.owner != owner:
            return False
        self.renewals += 1
        self.keys[(endpoint, key)] = replace(
            old, lease_until=self.now + timedelta(seconds=self.lease)
        )
        return True

    async def take_over(self, endpoint: str, key: str, owner: str) -> str | None:
        old = self.keys.get((endpoint, key))
        if old is None or old.state != "running":
            return None
        if old.lease_until is not None and old.lease_until >= self.now:
            return None
        ref = old.ref or "ref-of-an-old-claim"
        self.keys[(endpoint, key)] = replace(
            old, owner=owner, lease_until=self.now + timedelta(seconds=self.lease), ref=ref
        )
        return ref

    async def complete(self, endpoint: str, key: str, status: int, body: str) -> None:
        if self.fail_complete:
            raise DatabaseUnavailable("the idempotency table is not answering")
        old = self.keys[(endpoint, key)]
        self.keys[(endpoint, key)] = StoredAnswer(old.request_hash, "done", status, body, NOW)

    async def release(self, endpoint: str, key: str) -> None:
        self.release_calls.append((endpoint, key))
        if self.fail_release:
            raise DatabaseUnavailable("the idempotency table is not answering")
        del self.keys[(endpoint, key)]


class AllowAll:
    """A URL guard that lets every URL through."""

    async def check(self, url: str, field: str) -> None:
        return None


@dataclass
class FakePoolWallet:
    """A wallet for the pool: a counter, a saved mark, a subaddress table and labels."""

    next_index: int = 1
    saved_up_to: int = 0
    table_size: int = 1
    labels: dict[int, str] = field(default_factory=dict)
    rescans: int = 0
    calls: list[int] = field(default_factory=list)
    reopens: int = 0
    primary: str = "4Primary"

    async def create_addresses(self, count: int) -> list[tuple[str, int]]:
        assert 1 <= count <= 64, count
        self.calls.append(count)
        made = [(address_of(i), i) for i in range(self.next_index, self.next_index + count)]
        self.next_index += count
        self.table_size = max(self.table_size, self.next_index)
        return made

    async def save(self) -> None:
        self.saved_up_to = self.next_index - 1

    async def label_address(self, index: int, label: str) -> None:
        self.labels[index] = label

    async def has_subaddress(self, index: int) -> bool:
        return index < self.table_size

    async def rescan(self) -> None:
        self.rescans += 1

    async def primary_address(self) -> str:
        return self.primary


@dataclass
class FakeModeWallet(FakePoolWallet):
    """A pool wallet that also answers whether it is view-only; with ``restricted`` its
    wallet-rpc runs with --restricted-rpc (-7 on the question, as the real one answers)."""

    view_only: bool = False
    restricted: bool = False
    mode_checks: int = 0

    async def is_view_only(self) -> bool:
        self.mode_checks += 1
        if self.restricted:
            raise WalletRestricted("wallet-rpc refused sign_transfer", code=-7)
        return self.view_only


@dataclass
class FakeIdentityStore:
    """The wallet_identity row: the database belongs to ``address`` (None before the first
    start); ``reads`` counts the database reads."""

    address: str | None = None
    reads: int = 0

    async def remembered(self) -> str | None:
        self.reads += 1
        return self.address

    async def remember(self, primary_address: str) -> str:
        self.address = self.address or primary_address
        return self.address


@dataclass
class FakePoolStore:
    """The pool table and the requests made from it, in memory."""

    pool: dict[int, str] = field(default_factory=dict)
    requests: dict[str, PaymentRequest] = field(default_factory=dict)
    invoice_rows: dict[str, GreenfieldInvoice] = field(default_factory=dict)

    async def size(self) -> int:
        return len(self.pool)

    async def highest_index(self) -> int:
        used = [r.subaddr_index for r in self.requests.values()]
        return max([*self.pool, *used], default=0)

    async def add(self, entries: Any) -> None:
        for address, index in entries:
            assert index not in self.pool, f"index {index} offered twice"
            self.pool[index] = address

    async def take(
        self, values: Any, greenfield: InvoiceRow | None = None
    ) -> PaymentRequest | None:
        if not self.pool:
            return None
        if greenfield is not None and greenfield.id in self.invoice_rows:
            raise AlreadyExists("a row with the same key is already stored")
        index = min(self.pool)
        address = self.pool.pop(index)
        request = PaymentRequest(
            id=len(self.requests) + 1,
            address=address,
            subaddr_index=index,
            created_at=NOW,
            created_height=None,
            **values,
        )
        if greenfield is not None:
            self.invoice_rows[greenfield.id] = greenfield.of_request(request.id)
        self.requests[address] = request
        return request


async def _no_rewind() -> None:
    return None


def checked_identity(primary: str = "4Primary") -> WalletIdentity:
    """An identity checked the way the supervisor's start checks it (``WalletChecks.
    before_tick`` on the database's own wallet, whose mode is then known): use cases that
    create or send refuse until this happened once. Call it outside an event loop."""
    wallet, identity = FakeModeWallet(primary=primary), WalletIdentity()
    checks = WalletChecks(
        wallet,
        FakeIdentityStore(primary),
        identity,
        FakePoolStore(),
        _no_rewind,
        mode=WalletMode(wallet, identity),
    )
    assert asyncio.run(checks.before_tick()), "the check of the right wallet failed"
    return identity
