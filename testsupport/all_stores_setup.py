"""The processes and stores of the all-stores scenario (``testsupport/all_stores.py``).

:class:`AllStoresSetup` starts the main wallet-rpc, a second one with a wallet of its
own, processes A and B on one database, the three stores with their keys and a
Greenfield webhook each; kills and restarts a process; ends every process it started
by PID.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx

from testsupport.all_stores_ledger import (
    DEFAULT_SECRET,
    LOG_RECORD,
    OPERATOR,
    RELOAD_WAIT,
    WEBHOOK_EVENTS,
    Payment,
    Store,
    gateway_args,
)
from testsupport.gateway import SYNC_WAIT, Gateway
from xmrgate.devnet import Devnet, WalletRpc


def ok_json(answer: httpx.Response) -> Any:
    """The JSON of a 200 answer (asserted)."""
    assert answer.status_code == 200, f"{answer.request.url}: {answer.status_code} {answer.text}"
    return answer.json()


def raised_after(after: list[str]) -> str:
    """The exception a traceback that starts ``after`` ends with (" | TypeError: ..."), or
    "" when none follows; the traceback ends at the next log record."""
    if not after or not after[0].startswith("Traceback"):
        return ""
    raised = "(traceback)"  # cut at the end of what was read: shown as far as it goes
    for line in after[1:]:
        if LOG_RECORD.match(line):
            break
        # Indented: a frame; "During handling..." and the next "Traceback" of a chain
        # come before the exception that was raised last.
        if line.strip() and not line.startswith((" ", "\t")):
            raised = line
    return f" | {raised}"


def _key_status(gateway: Gateway, store: Store) -> int:
    """The status code of GET /receive with the store's key (401 while unknown there)."""
    return gateway.get("/receive", headers=store.auth).status_code


class AllStoresSetup:
    """The three stores on processes A and B (see the module's docstring).

    ``strict``: a failed sync tick in either process's log ends any wait at once with an
    AssertionError (the test); otherwise waits go on and the failures are counted (the
    benchmark).
    """

    def __init__(
        self,
        devnet: Devnet,
        workdir: Path,
        database: str,
        *,
        callback_url: str,
        webhook_url: str,
        lookahead: str = "2s",
        a_poll: str = "0.5s",
        b_poll: str = "1s",
        strict: bool = True,
    ) -> None:
        """Prepare (not start); :meth:`start` or ``with`` starts everything."""
        self.devnet = devnet
        self.workdir = workdir
        self.database = database
        self.callback_url = callback_url
        self.webhook_url = webhook_url
        self.lookahead = lookahead
        self.polls = (a_poll, b_poll)
        self.strict = strict
        self.stores: list[Store] = []
        self.payments: list[Payment] = []
        self._stack = ExitStack()
        self._gateways: tuple[Gateway, Gateway] | None = None
        self._main: WalletRpc | None = None
        # Log files of A and B (a restart on another port writes a new one) and how far
        # each was read for failed ticks.
        self._read_to: dict[Path, int] = {}
        self._failed: list[str] = []

    # ----------------------------------------------------------------- processes

    @property
    def a(self) -> Gateway:
        """Process A."""
        assert self._gateways is not None, "not started"
        return self._gateways[0]

    @property
    def b(self) -> Gateway:
        """Process B."""
        assert self._gateways is not None, "not started"
        return self._gateways[1]

    @property
    def main_wallet(self) -> WalletRpc:
        """The main wallet-rpc (the default and the account store's wallet)."""
        assert self._main is not None, "not started"
        return self._main

    def name(self, gateway: Gateway) -> str:
        """ "A" or "B"."""
        return "A" if gateway is self.a else "B"

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        """Both wallet-rpcs, A (it creates the main wallet) and B, then the stores made
        through A with a key and a webhook each; return once B knows every store."""
        tag = uuid.uuid4().hex[:6]
        own = self.devnet.start_wallet_rpc(f"all-stores-own-{tag}")
        self._stack.callback(own.stop)
        own.call("create_wallet", {"filename": "own", "language": "English"})
        self._main = self.devnet.start_wallet_rpc(f"all-stores-{tag}")
        self._stack.callback(self._main.stop)
        a, b = (
            Gateway(
                devnet=self.devnet,
                wallet=self._main,
                backend="postgresql",
                db_arg=["--postgresql", self.database],
                workdir=self.workdir,
                extra_args=gateway_args(poll, self.lookahead),
            )
            for poll in self.polls
        )
        self._gateways = (a, b)
        # Closed last to first: B, then A (then the wallet-rpcs).
        self._stack.callback(a.close)
        self._stack.callback(b.close)
        # A creates the main wallet, B opens it; both run before the stores are made, as
        # on a gateway whose operator adds stores: the first full lookahead check after
        # that is one of the every-``lookahead`` ones, not the one at start (a process
        # restarted later makes that one with every store there: see :meth:`restart`).
        a.start()
        b.start()
        self._note_logs()
        self.stores = [
            self._store("default", "default", OPERATOR, DEFAULT_SECRET, self._main),
            self._new_store("account", {"account": "new"}, self._main),
            self._new_store("own", {"rpc_address": own.url}, own),
        ]
        for store in self.stores:
            b.wait_for(
                f"B to accept store {store.id}'s key made through A",
                functools.partial(_key_status, b, store),
                lambda code: code == 200,
                timeout=RELOAD_WAIT,
            )

    def _new_store(self, kind: str, wallet: dict[str, Any], rpc: WalletRpc) -> Store:
        """POST /stores through A (on ``wallet``), then a key of every store scope."""
        store_id = f"{kind}-store"
        secret = f"{store_id}-callback-secret-0123"
        body = {"id": store_id, "name": store_id, "wallet": wallet, "callback_secret": secret}
        ok_json(self.a.post("/stores", json=body, headers=OPERATOR))
        key = ok_json(self.a.post(f"/stores/{store_id}/keys", headers=OPERATOR))["key"]
        return self._store(store_id, kind, {"Authorization": f"Bearer {key}"}, secret, rpc)

    def _store(
        self, store_id: str, kind: str, auth: dict[str, str], secret: str, rpc: WalletRpc
    ) -> Store:
        """The store with a Greenfield webhook (its secret is only in this answer)."""
        hook = {
            "enabled": True,
            "automaticRedelivery": True,
            "url": self.webhook_url,
            "authorizedEvents": {"everything": False, "specificEvents": list(WEBHOOK_EVENTS)},
        }
        made = ok_json(
            self.a.post(f"/api/v1/stores/{store_id}/webhooks", json=hook, headers=OPERATOR)
        )
        return Store(store_id, kind, auth, secret, str(made["secret"]), rpc)

    def _note_logs(self) -> None:
        """Start reading A's and B's current log files (a restart may open new ones)."""
        for gateway in (self.a, self.b):
            self._read_to.setdefault(gateway.log_path, 0)

    def close(self) -> None:
        """End B, A and both wallet-rpcs by PID (those already gone are skipped)."""
        self._stack.close()

    def kill(self, gateway: Gateway, how: Callable[[Gateway], object] | None = None) -> None:
        """SIGKILL ``gateway`` (``how`` chooses the moment, then kills it)."""
        self._note_logs()
        if how is None:
            gateway.kill()
        else:
            how(gateway)
        assert gateway.proc is None, "the gateway was not killed"

    def restart(self, gateway: Gateway, timeout: float = SYNC_WAIT) -> float:
        """Start a killed ``gateway`` again; the seconds until it was ready (its wallet
        open and checked, the full lookahead check at start made with every store there)."""
        started = time.monotonic()
        gateway.start(wait=False)
        self._note_logs()
        gateway.wait_ready(timeout)
        return time.monotonic() - started
