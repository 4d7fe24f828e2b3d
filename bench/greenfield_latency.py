"""Block to Greenfield webhook beside block to callback (the target: block to
webhook as fast as block to callback, under 1 s with ZeroMQ).

One gateway on PostgreSQL with ``--daemon-zmq`` (woken by monerod's announcements) and
the default poll (5 s), its own wallet-rpc; one receiver process on loopback
(``bench/receiver.py``) is both the callback URL of ``POST /receive`` requests and the
URL of a Greenfield webhook of the default store (every event). For each payment: a
request with a callback and a Greenfield invoice of the same amount in XMR (MediumSpeed:
one confirmation settles it), one transaction of the funder pays both (it waits in the
pool), a random pause of 0..5 s, then ``devnet.mine(1)``. The delays are from ``mine()``
returning to the request's ``transfer.confirmed`` callback and to the invoice's
``InvoiceSettled`` webhook arriving: a sync tick woken by the block, then the callback
worker (and, for the webhook, the announcer between the two).

``python -m bench --only greenfield-latency`` (``--quick``: fewer payments) or
``python -m bench.greenfield_latency``.
"""

from __future__ import annotations

import contextlib
import random
import sys
import time
from pathlib import Path

import httpx

from bench import runner
from bench.common import Context, Figure, fresh_database, fresh_wallet, percentile, section
from bench.receiver import ReceiverProcess
from testsupport.gateway import GatewayProcess

NAME = "greenfield-latency"
OPERATOR = "bench-greenfield-latency-operator-key-0123"
AMOUNT = 1_000_000_000  # 0.001 XMR
TARGET_S = 1.0
PAUSE_S = 5.0
PERMISSIONS = [
    "btcpay.store.cancreateinvoice",
    "btcpay.store.canviewinvoices",
    "btcpay.store.webhooks.canmodifywebhooks",
]


def _gateway(ctx: Context, stack: contextlib.ExitStack) -> GatewayProcess:
    """This version's gateway with ZeroMQ, loopback callbacks allowed."""
    wallet = fresh_wallet(ctx.devnet, "bench-gf-latency", open_wallet=False)
    stack.callback(wallet.stop)
    database = stack.enter_context(fresh_database())
    args = ["--api-key", OPERATOR, "--callback-allow", "127.0.0.1", "--poll-frequency", "5s"]
    args += ["--daemon-zmq", ctx.devnet.zmq_pub_url, *ctx.gateway_args]
    gateway = GatewayProcess(Path(ctx.workdir) / NAME, wallet.url, database, args)
    stack.callback(gateway.stop)
    gateway.start()
    return gateway


def _ok(answer: httpx.Response) -> dict[str, object]:
    if answer.status_code != 200:
        raise RuntimeError(f"{answer.request.url}: {answer.status_code} {answer.text[:300]}")
    body: dict[str, object] = answer.json()
    return body


def _collect(
    receiver: ReceiverProcess, wanted: dict[tuple[str, str], str], mined: float
) -> dict[str, float]:
    """Seconds from ``mined`` to each wanted (kind, subject); keyed by its label."""
    deadline = time.monotonic() + 60
    got: dict[str, float] = {}
    while len(got) < len(wanted):
        for at, kind, subject in receiver.items():
            label = wanted.get((kind, subject))
            if label is not None and label not in got:
                got[label] = at - mined
        if time.monotonic() > deadline:
            missing = [v for v in wanted.values() if v not in got]
            raise TimeoutError(f"not delivered within 60 s: {', '.join(missing)}")
        time.sleep(0.02)
    return got


def run(ctx: Context) -> None:
    """Block -> callback and block -> webhook over the same payments."""
    payments = 8 if ctx.quick else 20
    section(f"greenfield: block mined -> webhook beside -> callback, {payments} payments (ZMQ)")
    rng = random.Random(11)
    delays: dict[str, list[float]] = {"callback": [], "webhook": []}
    receiver = ReceiverProcess()
    with contextlib.ExitStack() as stack:
        stack.callback(receiver.stop)
        gateway = _gateway(ctx, stack)
        client = stack.enter_context(httpx.Client(base_url=gateway.url, timeout=60))
        operator = {"Authorization": f"Bearer {OPERATOR}"}
        made = _ok(
            client.post("/stores/default/keys", json={"permissions": PERMISSIONS}, headers=operator)
        )
        shop = {"Authorization": f"token {made['key']}"}
        _ok(
            client.post(
                "/api/v1/stores/default/webhooks",
                json={"url": receiver.url, "authorizedEvents": {"everything": True}},
                headers=shop,
            )
        )
        for n in range(payments):
            request = _ok(
                client.post(
                    "/receive",
                    json={"amount": AMOUNT, "description": "bench", "callback_url": receiver.url},
                    headers=operator,
                )
            )
            invoice = _ok(
                client.post(
                    "/api/v1/stores/default/invoices",
                    json={"amount": "0.001", "currency": "XMR", "metadata": {"orderId": str(n)}},
                    headers=shop,
                )
            )
            methods = client.get(
                f"/api/v1/stores/default/invoices/{invoice['id']}/payment-methods", headers=shop
            )
            if methods.status_code != 200:
                raise RuntimeError(f"payment-methods: {methods.status_code} {methods.text[:300]}")
            destination = str(methods.json()[0]["destination"])
            ctx.devnet.pay_many([(str(request["address"]), AMOUNT), (destination, AMOUNT)])
            # A random phase against the 5 s round and poll (as bench/callbacks.py).
            time.sleep(rng.uniform(0, PAUSE_S))
            ctx.devnet.mine(1)
            mined = time.time()
            got = _collect(
                receiver,
                {
                    ("transfer.confirmed", str(request["address"])): "callback",
                    ("InvoiceSettled", str(invoice["id"])): "webhook",
                },
                mined,
            )
            for label, seconds in got.items():
                delays[label].append(seconds)
    for label in ("callback", "webhook"):
        values = delays[label]
        note = f"{len(values)} payments, min {min(values):.2f}s max {max(values):.2f}s"
        name = f"block mined -> {label}, --daemon-zmq"
        ctx.add(Figure(NAME, f"{name}, p50", percentile(values, 0.5), "s", TARGET_S, note=note))
        ctx.add(Figure(NAME, f"{name}, p99", percentile(values, 0.99), "s"))
    ratio = percentile(delays["webhook"], 0.5) / percentile(delays["callback"], 0.5)
    ctx.add(Figure(NAME, "webhook / callback, p50", ratio, "x"))


def main(argv: list[str]) -> int:
    """``python -m bench.greenfield_latency [--quick]``."""
    return runner.main(["--only", NAME, *argv], {NAME: run})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
