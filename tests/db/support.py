"""Helpers shared by the store tests."""

from __future__ import annotations

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.domain.records import PaymentRequest


async def new_request(
    db: Database, index: int, *, prefix: str = "8Req", description: str = ""
) -> PaymentRequest:
    """A payment request of 100 piconero at subaddress ``index``, with a callback URL."""
    return await PaymentStore(db).create(
        address=f"{prefix}{index}",  # base58: no zero padding (the use cases check it)
        subaddr_index=index,
        amount=100,
        description=description,
        callback_url="https://shop.example/cb",
        return_url=None,
    )
