"""``xmrgate serve --no-checkout``: no /pay/ pages, the API as usual."""

from __future__ import annotations

import pytest

from testsupport.gateway import Gateway

pytestmark = [
    pytest.mark.integration,
    pytest.mark.parametrize("gateway", ["sqlite"], indirect=True),
]

GATEWAY_ARGS = ["--no-checkout"]


def test_pay_is_json_404_when_checkout_is_off(gateway: Gateway) -> None:
    """A real payment request exists, yet /pay/<address> is the API's JSON 404."""
    address = gateway.receive(10**12, description="off")["address"]
    for path in (f"/pay/{address}", f"/pay/{address}/status.json", f"/pay/{address}/qr.svg"):
        r = gateway.get(path)
        assert r.status_code == 404, path
        assert r.headers["content-type"].startswith("application/json"), path
        assert r.json()["status"] == 404
    assert gateway.status(address)["amount"]["expected"] == 10**12
