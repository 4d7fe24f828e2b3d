"""Helpers shared by the store tests."""

from __future__ import annotations

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.domain.records import PaymentRequest

# Decimal digits spelt in base58 (which has no 0): the use cases refuse other addresses.
BASE58_DIGITS = str.maketrans("0123456789", "123456789A")


async def new_request(
    db: Database, index: int, *, prefix: str = "8Req", description: str = ""
) -> PaymentRequest:
    """A payment request of 100 piconero at subaddress ``index``, with a callback URL."""
    return await PaymentStore(db).create(
        address=prefix + str(index).translate(BASE58_DIGITS),
        subaddr_index=index,
        amount=100,
        description=description,
        callback_url="https://shop.example/cb",
        return_url=None,
    )
