"""Payment links on a gateway of 4 worker processes on one PostgreSQL: the
link's ``max_uses`` and the page's limits hold for the whole cluster, not per process.

- 200 concurrent "Pay" from 200 clients on a link with ``max_uses`` 10: the link's limit
  (60 a minute, counted in the database) lets exactly 60 through, which make exactly 10
  requests (the rest 410, used up). Before, each process counted on its own: 4 workers
  made 11 or 12 requests of such a link.
- One client posting "Pay" on fresh connections (each may reach any worker) is refused
  (429) after its 10 a minute, whichever worker answers.

Each "Pay" is the page's own form as a browser posts it, from its own loopback address.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.integration.callback_support import XMR
from tests.integration.test_links import browser, make_link, pay
from testsupport.gateway import Gateway, close_gateway, count_rows, start_gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

WORKERS = 4
PAYERS = 200
MAX_USES = 10
CLIENT_LIMIT = 10  # web/link_page/routes.py: "Pay" per client a minute
LINK_LIMIT = 60  # and per link
# 200 payers, each its own address: 127.0.1.1 .. 127.0.1.200 (all of 127/8 is loopback).
PAYER_IPS = [f"127.0.1.{n}" for n in range(1, PAYERS + 1)]
LONE_CLIENT = "127.0.2.1"


@pytest.fixture(scope="module")
def gateway(devnet: Devnet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gw = start_gateway(
        devnet, "postgresql", tmp_path_factory.mktemp("link-workers"), ["--workers", str(WORKERS)]
    )
    try:
        yield gw
    finally:
        close_gateway(gw)


def _pay_once(gateway: Gateway, ip: str, slug: str) -> httpx.Response:
    """One "Pay" on a new connection (and no cookie) from ``ip``."""
    with browser(ip) as client:
        return pay(client, gateway, slug)


def test_200_concurrent_pays_make_exactly_max_uses_requests(gateway: Gateway) -> None:
    link = make_link(gateway, title="Ten only", amount=XMR // 100, max_uses=MAX_USES)
    with ThreadPoolExecutor(32) as threads:
        answers = list(threads.map(lambda ip: _pay_once(gateway, ip, link["slug"]), PAYER_IPS))
    codes = Counter(a.status_code for a in answers)
    assert set(codes) <= {303, 410, 429}, {a.status_code: a.text[:300] for a in answers}
    assert codes[303] == MAX_USES, codes
    # The link's limit, counted for the 4 processes together: 60 passed it, no more.
    assert codes[303] + codes[410] == LINK_LIMIT, codes
    assert codes[429] == PAYERS - LINK_LIMIT, codes
    made = {a.headers["location"] for a in answers if a.status_code == 303}
    assert len(made) == MAX_USES
    r = gateway.get(f"/links/{link['id']}")
    assert r.status_code == 200 and r.json()["uses"] == MAX_USES, r.text
    assert count_rows(gateway, "payment_requests") >= MAX_USES


def test_a_client_over_its_limit_is_refused_by_every_worker(gateway: Gateway) -> None:
    link = make_link(gateway, title="Open for all", amount=XMR // 100)
    answers = [_pay_once(gateway, LONE_CLIENT, link["slug"]) for _ in range(3 * CLIENT_LIMIT)]
    codes = [a.status_code for a in answers]
    assert codes == [303] * CLIENT_LIMIT + [429] * (2 * CLIENT_LIMIT), codes
    assert all(1 <= int(a.headers["retry-after"]) <= 60 for a in answers if a.status_code == 429)
    r = gateway.get(f"/links/{link['id']}")
    assert r.status_code == 200 and r.json()["uses"] == CLIENT_LIMIT, r.text
