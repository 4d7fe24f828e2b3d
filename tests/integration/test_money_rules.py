"""Money rules on the real wallet: paid requests cannot be deleted; idempotency keys per caller."""

from __future__ import annotations

import pytest

from tests.integration.receiver import Receiver
from testsupport.gateway import SYNC_WAIT, Gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

SHOP_A = "shop-a-key-0123456789"
SHOP_B = "shop-b-key-0123456789"
GATEWAY_ARGS = [
    "--api-key",
    f"{SHOP_A}:read+receive {SHOP_B}:read+receive",
    "--callback-allow",
    "127.0.0.1",
]
XMR = 10**12


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_paid_request_cannot_be_deleted_and_keeps_its_callbacks(
    gateway: Gateway, devnet: Devnet, receiver: Receiver
) -> None:
    created = gateway.post(
        "/receive", json={"amount": XMR, "callback_url": receiver.url}, headers=_auth(SHOP_A)
    ).json()
    address = created["address"]
    devnet.pay(address, XMR, mine_blocks=1)
    gateway.wait_for(
        "a callback of the paid request",
        lambda: gateway.get(f"/receive/{address}/callbacks", headers=_auth(SHOP_A)).json(),
        lambda body: len(body["callbacks"]) >= 1,
        timeout=SYNC_WAIT,
    )
    refused = gateway.delete(f"/receive/{address}", headers=_auth(SHOP_A))
    assert refused.status_code == 409, refused.text
    assert "received funds" in refused.json()["message"]
    assert gateway.get(f"/receive/{address}", headers=_auth(SHOP_A)).status_code == 200
    history = gateway.get(f"/receive/{address}/callbacks", headers=_auth(SHOP_A)).json()
    assert history["callbacks"], "the callback history went away"
    unpaid = gateway.post("/receive", json={"amount": 1}, headers=_auth(SHOP_A)).json()
    gone = gateway.delete(f"/receive/{unpaid['address']}", headers=_auth(SHOP_A))
    assert gone.status_code == 200 and gone.json()["deleted"] is True


def test_same_idempotency_key_from_two_api_keys_is_two_requests(gateway: Gateway) -> None:
    body = {"amount": 5, "description": "order 1"}
    a = gateway.post("/receive", json=body, headers={**_auth(SHOP_A), "Idempotency-Key": "o-1"})
    b = gateway.post("/receive", json=body, headers={**_auth(SHOP_B), "Idempotency-Key": "o-1"})
    assert a.status_code == b.status_code == 200
    assert a.json()["address"] != b.json()["address"], "shop B got shop A's answer"
    assert "idempotent-replayed" not in b.headers
    again = gateway.post("/receive", json=body, headers={**_auth(SHOP_A), "Idempotency-Key": "o-1"})
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json()["address"] == a.json()["address"]
