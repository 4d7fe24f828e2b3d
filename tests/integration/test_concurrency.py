"""Many clients at once: concurrent POST /receive against the real gateway, on both databases."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from testsupport.gateway import Gateway, count_rows

pytestmark = pytest.mark.integration

CLIENTS = 100


async def post_all(gateway: Gateway, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    """POST every body to /receive at once, each on its own connection."""
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    async with httpx.AsyncClient(
        base_url=gateway.url, timeout=120, limits=limits, trust_env=False
    ) as client:
        return await asyncio.gather(*(client.post("/receive", json=body) for body in bodies))


def test_concurrent_receive_gives_distinct_subaddresses(gateway: Gateway) -> None:
    """100 simultaneous POST /receive: 100 answers 200, 100 distinct subaddresses, 100 rows."""
    before = count_rows(gateway, "payment_requests")
    bodies = [{"amount": 1000 + i, "description": f"concurrent #{i}"} for i in range(CLIENTS)]
    started = time.monotonic()
    responses = asyncio.run(post_all(gateway, bodies))
    elapsed = time.monotonic() - started

    errors = [(i, r.status_code, r.text) for i, r in enumerate(responses) if r.status_code != 200]
    assert not errors, errors
    answers = [r.json() for r in responses]
    # Each answer belongs to its own request, not to a neighbour's.
    for body, answer in zip(bodies, answers, strict=True):
        assert answer["amount"] == body["amount"]
        assert answer["description"] == body["description"]
    addresses = [a["address"] for a in answers]
    assert len(set(addresses)) == CLIENTS
    assert count_rows(gateway, "payment_requests") == before + CLIENTS

    # Every address is a distinct subaddress of the gateway's wallet, Primary Account.
    indexes = set()
    for address in addresses:
        index = gateway.wallet.call("get_address_index", {"address": address})["index"]
        assert index["major"] == 0 and index["minor"] > 0, (address, index)
        indexes.add(index["minor"])
    assert len(indexes) == CLIENTS

    # And each one reads back as what was asked for.
    for body, address in zip(bodies, addresses, strict=True):
        assert gateway.status(address)["amount"]["expected"] == body["amount"]
    print(f"\n{gateway.backend}: {CLIENTS} concurrent POST /receive in {elapsed:.2f}s")
