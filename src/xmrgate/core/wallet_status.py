"""What the wallet is and whether it answers: balance, health, and the wallet's identity.

``/health`` is public and unauthenticated, so its answer is cached for at most
``max_age`` seconds and its wallet probe runs on a connection of its own: a flood of
health checks can neither starve the connections that sync and payouts use nor keep
wallet-rpc busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from xmrgate.core.ports import Wallet
from xmrgate.core.sync_health import SyncTrouble
from xmrgate.domain.errors import WalletUnavailable

log = logging.getLogger(__name__)

# Each probe gets this long; both run at once, so /health answers within ~2.5 s.
PROBE_TIMEOUT = 2.0
# Seconds a request that needs the wallet waits for it: for the first check at start-up,
# or for the address pool's refill. It fails sooner only when the wallet is known down.
WALLET_WAIT = 5.0
# How often a request waiting for the first check looks again.
CHECK_POLL = 0.05
# ... and how long in all while the supervisor's attempt to open and check the wallet is
# under way: wallet-rpc 0.18 takes 1-5 s to open a wallet (an RSA certificate is made at
# every open, measured on regtest), so a wallet-rpc that is back is waited for, not
# refused after WALLET_WAIT. A hung one still fails after this.
OPEN_WAIT = 15.0

NOT_CHECKED = (
    f"the wallet has not been checked yet: within {WALLET_WAIT:.0f} s the gateway could not "
    "verify that wallet-rpc has this database's wallet open and can use it (wallet-rpc busy, "
    "stopped or still starting?); nothing was created or sent, retry in a few seconds "
    "(GET /health says when the wallet is ready)"
)


@dataclass
class WalletIdentity:
    """What we learned from the wallet at start-up, and whether it is the right one.

    ``expected`` is the primary address the database was created with; ``mismatch``
    holds a message when wallet-rpc has another wallet open (then nothing that writes
    may run: no sync, no new subaddress, no payout).
    """

    primary_address: str | None = None
    expected: str | None = None
    mismatch: str | None = None
    view_only: bool | None = None
    # Set while wallet-rpc runs with --restricted-rpc (``WalletMode``): it cannot sync.
    restricted: str | None = None
    # Why the last start-up attempt to open and check the wallet failed (refused, no
    # wallet open, timeout), until one succeeds; ``attempts`` counts the attempts that
    # ended, ``retry`` asks the supervisor for the next one now (``fresh_failure``).
    unreachable: str | None = None
    attempts: int = 0
    retry: asyncio.Event = field(default_factory=asyncio.Event)
    attempt_done: asyncio.Event = field(default_factory=asyncio.Event)  # replaced each time
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    wait_budget: float = WALLET_WAIT
    # Set while the supervisor's attempt runs (``attempt_started``): requests then wait
    # up to ``open_budget`` instead of ``wait_budget``.
    attempting: bool = False
    open_budget: float = OPEN_WAIT

    @property
    def problem(self) -> str | None:
        """Why nothing that writes may run now (wrong wallet, restricted wallet-rpc), or None."""
        return self.mismatch or self.restricted

    @property
    def mode(self) -> str | None:
        """``full``, ``view-only``, ``restricted``, or None before the first detection."""
        if self.restricted is not None:
            return "restricted"
        if self.view_only is None:
            return None
        return "view-only" if self.view_only else "full"

    @property
    def checked(self) -> bool:
        """Whether this process has compared the open wallet with the database's
        (``verify_identity`` set ``expected``) and learnt its mode (``WalletMode.detect``).

        Derived from the verdicts themselves, not from a flag someone sets, so it holds
        only once the checks really ran; the supervisor runs them at start.
        """
        return self.expected is not None and self.mode is not None

    def refuse_known_problem(self) -> None:
        """Raise WalletUnavailable when the open wallet is known to be wrong or restricted.

        The address pool's guard: pooled subaddresses were checked against the right
        wallet when they were pooled, so they may be handed out before this process has
        checked the wallet (a start with wallet-rpc down), never while it is known bad.
        """
        if self.problem is not None:
            raise WalletUnavailable(self.problem, request_sent=False)

    def attempt_started(self) -> None:
        """The supervisor begins an attempt to open and check the wallet."""
        self.attempting = True

    def attempt_ended(self, failure: str | None) -> None:
        """The supervisor's start-up attempt ended: ``failure`` says why it failed, or None."""
        self.attempting = False
        self.unreachable = failure
        self.attempts += 1
        self.retry.clear()
        done, self.attempt_done = self.attempt_done, asyncio.Event()
        done.set()

    async def fresh_failure(self, deadline: float) -> str | None:
        """Why the wallet cannot be reached, from an attempt made after this call began.

        None when the last start-up attempt did not fail. Otherwise the supervisor is asked
        to try again now (it would wait out its back-off, up to 30 s, while wallet-rpc may
        be back already) and this waits for that attempt, until ``deadline``: its failure
        (wallet-rpc still down: a refused connection answers in milliseconds), or None once
        it got through (the caller goes on waiting for the check) or at the deadline.
        """
        if self.unreachable is None:
            return None
        if time.monotonic() >= deadline:  # no time to wait for an attempt (the overview)
            return f"wallet-rpc is not usable yet ({self.unreachable})"
        done = self.attempt_done
        self.retry.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), timeout=deadline - time.monotonic())
        if not done.is_set() or self.unreachable is None:
            return None
        return f"wallet-rpc is not usable yet ({self.unreachable})"

    def _deadline(self, started: float, wait: bool) -> float:
        """When a request that began waiting at ``started`` gives up: later while an
        attempt to open the wallet is under way."""
        if not wait:
            return started
        return started + (self.open_budget if self.attempting else self.wait_budget)

    async def require_usable(self, *, wait: bool = True) -> None:
        """Return once the right wallet is open and can be synced; else WalletUnavailable.

        At start the HTTP app serves while the supervisor is still verifying the wallet
        (the wallet-rpc it reaches may have another wallet open): a request waits for
        that first check for up to ``wait_budget`` seconds (``open_budget`` while an
        attempt to open the wallet is under way) instead of failing, so a shop
        started with the gateway is not refused on every boot (``wait=False``: no wait, for
        reads such as the dashboard's overview). It fails at once when the
        wallet is known wrong or restricted, or the start-up's attempt to reach it, made
        again for this request, failed (connection refused, no wallet open).
        The supervisor never waits on requests, so this cannot deadlock. The 503 says
        nothing happened (``request_sent=False``): an Idempotency-Key is released.
        """
        started = time.monotonic()
        while True:
            if self.problem is not None:
                raise WalletUnavailable(self.problem, request_sent=False)
            if self.checked:
                return
            down = await self.fresh_failure(self._deadline(started, wait))
            if down is not None:
                raise WalletUnavailable(
                    f"{down}; nothing was created or sent, retry in a few seconds",
                    request_sent=False,
                )
            if self.checked or self.problem is not None:
                continue  # the attempt ended with a verdict: answered at the top
            # Read again: the attempt this request asked for may have begun meanwhile.
            if time.monotonic() >= self._deadline(started, wait):
                raise WalletUnavailable(NOT_CHECKED, request_sent=False)
            await asyncio.sleep(CHECK_POLL)


@dataclass(frozen=True, slots=True)
class HealthReport:
    """The answer of ``GET /health``."""

    status: int
    services: dict[str, bool]
    message: str | None = None
    wallet_mode: str | None = None


class WalletStatus:
    """Balance and health, over the wallet, a database ping and the wallet's identity."""

    def __init__(
        self,
        wallet: Wallet,
        probe_wallet: Wallet,
        db_ping: Callable[[], Awaitable[bool]],
        database_kind: str,
        identity: WalletIdentity,
        *,
        max_age: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        down_message: str | None = None,
        sync_troubles: Callable[[], Awaitable[list[SyncTrouble]]] | None = None,
    ) -> None:
        # The wallets' failed sync ticks in a row, as the database records them
        # (``core/sync_health.py``): a failing one makes /health 503, naming it.
        self._sync_troubles = sync_troubles
        self._wallet = wallet
        self._probe_wallet = probe_wallet
        self._db_ping = db_ping
        self._database_kind = database_kind
        self._identity = identity
        self._max_age = max_age
        self._clock = clock
        # What a 503 says when the wallet does not answer (a store's own wallet-rpc).
        self._down_message = down_message
        self._cached: tuple[float, HealthReport] | None = None
        self._lock = asyncio.Lock()

    async def balance(self, *, wait: bool = True) -> tuple[int, int]:
        """Total and unlocked balance of the Primary Account; ``wait=False`` refuses at
        once instead of waiting for the start-up's wallet check (the overview)."""
        await self._identity.require_usable(wait=wait)
        return await self._wallet.get_balance()

    async def health(self) -> HealthReport:
        """200 when wallet-rpc and the database answer and the wallet is ours, else 503."""
        async with self._lock:  # concurrent callers share one probe
            if self._cached is not None and self._clock() - self._cached[0] < self._max_age:
                return self._cached[1]
            wallet_up, db_up, troubles = await asyncio.gather(
                _probe(self._probe_wallet.probe(timeout=PROBE_TIMEOUT)),
                _probe(self._db_ping()),
                self._read_troubles(),
            )
            failing = [t for t in troubles if t.failing()]
            message = self._identity.problem
            if message is None and not self._identity.ready.is_set():
                message = "the gateway has not opened its wallet yet"
            if message is None and not wallet_up:
                message = self._down_message
            if message is None and failing:
                message = "; ".join(
                    f"the sync of {t.wallet} has failed {t.failures} ticks in a row since "
                    f"{t.since.isoformat(timespec='seconds')}: payments to it are not being "
                    f"seen ({t.error})"
                    for t in failing
                )
            ok = wallet_up and db_up and message is None
            report = HealthReport(
                status=200 if ok else 503,
                services={"walletrpc": wallet_up, self._database_kind: db_up},
                message=message,
                wallet_mode=self._identity.mode,
            )
            self._cached = (self._clock(), report)
            return report

    async def _read_troubles(self) -> list[SyncTrouble]:
        """The syncs' failure records; none when unreadable (the database probe says why)."""
        if self._sync_troubles is None:
            return []
        try:
            return await asyncio.wait_for(self._sync_troubles(), timeout=PROBE_TIMEOUT)
        except Exception:
            return []


async def _probe(check: Awaitable[bool]) -> bool:
    try:
        return bool(await asyncio.wait_for(check, timeout=PROBE_TIMEOUT))
    except Exception:
        return False


class IdentityStore(Protocol):
    """Where the database remembers the wallet it belongs to (``adapters/store/identity.py``)."""

    async def remembered(self) -> str | None:
        """The primary address recorded at first start, or None."""
        ...

    async def remember(self, primary_address: str) -> str:
        """Record it unless one is recorded already; return the recorded one."""
        ...


class AddressSource(Protocol):
    """The wallet call that names the open wallet."""

    async def primary_address(self) -> str:
        """The open wallet's primary address."""
        ...


async def verify_identity(
    wallet: AddressSource, store: IdentityStore, identity: WalletIdentity
) -> bool:
    """Compare the open wallet with the one the database belongs to; record the verdict.

    On the first start the open wallet's address is recorded. Afterwards a different
    wallet sets ``identity.mismatch``: no sync, no subaddress, no payout until the
    right wallet is open again (reads keep working). The recorded address is read from
    the database once: the row is never rewritten, and this runs before every sync
    tick and around every address-pool batch.
    """
    actual = await wallet.primary_address()
    expected = identity.expected
    if expected is None:
        expected = await store.remembered()
    if expected is None:
        expected = await store.remember(actual)
    identity.primary_address = actual
    identity.expected = expected
    if actual == expected:
        if identity.mismatch is not None:
            log.warning("the right wallet is open again (%s): resuming", actual)
        identity.mismatch = None
        return True
    if identity.mismatch is None:
        log.error("wrong wallet open: %s (expected %s); sync and payouts stopped", actual, expected)
    identity.mismatch = (
        f"wallet-rpc has the wallet {actual} open, but this database belongs to the wallet "
        f"{expected}: open the right wallet (nothing is synced or sent until then)"
    )
    return False
