"""The client of ``bench/greenfield.py``: raw HTTP/1.1 on asyncio streams, in a child
process of its own (it shares no interpreter lock with the fake rate providers), as
``bench/loadgen.py``. ``python -m bench.greenfield_client SPEC.json`` prints the result.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT

CONCURRENCY = 16
KINDS = ("receive", "greenfield")

# The checkout options of BTCPay's PHP client (InvoiceCheckoutOptions) when the shop sets
# none of them: every key sent, every value null.
CHECKOUT_NULLS: dict[str, Any] = {
    "speedPolicy": None,
    "paymentMethods": None,
    "defaultPaymentMethod": None,
    "expirationMinutes": None,
    "monitoringMinutes": None,
    "paymentTolerance": None,
    "redirectURL": None,
    "redirectAutomatically": None,
    "requiresRefundEmail": None,
    "defaultLanguage": None,
}


# --------------------------------------------------------------------------- the client


def parts(
    kind: str, n: int, key: str, described: bool = False
) -> tuple[str, dict[str, str], bytes]:
    """Path, headers and body of one create of ``kind`` (order id ``n``); ``described``:
    the receive carries ``description`` ``n`` too, labelled in the wallet as an invoice's
    order id is (``--receive-description``)."""
    if kind == "receive":
        path, auth = "/receive", f"Bearer {key}"
        body: dict[str, Any] = {"price": {"amount": "12.34", "currency": "EUR"}}
        if described:
            body["description"] = str(n)
    else:
        path, auth = "/api/v1/stores/default/invoices", f"token {key}"
        body = {
            "amount": "12.34",
            "currency": "EUR",
            "metadata": {"orderId": str(n)},
            "checkout": CHECKOUT_NULLS,
        }
    headers = {
        "Authorization": auth,
        "Accept": "application/json",
        "Content-Type": "application/json",
    }
    return path, headers, json.dumps(body).encode()


def _request(kind: str, n: int, host: str, port: int, key: str, described: bool = False) -> bytes:
    path, headers, payload = parts(kind, n, key, described)
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes
) -> tuple[int, float]:
    """Send one request, read its answer (Content-Length bodies); status and seconds."""
    started = time.perf_counter()
    writer.write(raw)
    head = await reader.readuntil(b"\r\n\r\n")
    lower = head.lower()
    at = lower.index(b"\r\ncontent-length:")
    size = int(lower[at + 17 : lower.index(b"\r\n", at + 2)])
    if size:
        await reader.readexactly(size)
    return int(head[9:12]), time.perf_counter() - started


async def _sequential(spec: dict[str, Any]) -> dict[str, Any]:
    """One connection: ``count`` pairs, the kinds alternating (``first`` first)."""
    host, port, key = spec["host"], int(spec["port"]), spec["key"]
    order = [spec["first"], next(k for k in KINDS if k != spec["first"])]
    out: dict[str, Any] = {k: [] for k in KINDS} | {"bad": {k: 0 for k in KINDS}}
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for i in range(int(spec["count"])):
            for kind in order:
                n = int(spec["base"]) + i
                raw = _request(kind, n, host, port, key, bool(spec.get("described")))
                status, seconds = await _exchange(reader, writer, raw)
                if status == 200:
                    out[kind].append(seconds)
                else:
                    out["bad"][kind] += 1
    finally:
        writer.close()
    return out


async def _block(spec: dict[str, Any]) -> dict[str, Any]:
    """``clients`` connections, ``count`` requests each, of one kind; latencies and wall."""
    host, port, key, kind = spec["host"], int(spec["port"]), spec["key"], spec["kind"]
    clients, count, base = int(spec["clients"]), int(spec["count"]), int(spec["base"])
    latencies: list[float] = []
    bad = 0
    conns = [await asyncio.open_connection(host, port) for _ in range(clients)]

    async def client(c: int) -> None:
        nonlocal bad
        reader, writer = conns[c]
        for i in range(count):
            raw = _request(
                kind, base + c * count + i, host, port, key, spec.get("described", False)
            )
            status, seconds = await _exchange(reader, writer, raw)
            if status == 200:
                latencies.append(seconds)
            else:
                bad += 1

    started = time.perf_counter()
    try:
        await asyncio.gather(*(client(c) for c in range(clients)))
        wall = time.perf_counter() - started
    finally:
        for _, writer in conns:
            writer.close()
    return {"latencies": latencies, "bad": bad, "wall": wall}


def _client_main(path: Path) -> None:
    spec = json.loads(path.read_text())
    run = _sequential if spec["mode"] == "sequential" else _block
    print(json.dumps(asyncio.run(run(spec))))


def run_client(spec: dict[str, Any]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(spec, handle)
        path = Path(handle.name)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.greenfield_client", str(path)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        path.unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"greenfield client failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


if __name__ == "__main__":
    _client_main(Path(sys.argv[1]))
