"""Helpers shared by the store tests."""

from __future__ import annotations

from sqlalchemy import insert

from xmrgate.adapters.store.db import Database, utcnow
from xmrgate.adapters.store.payments import PaymentStore
from xmrgate.adapters.store.tables import unmatched_receipts
from xmrgate.domain.records import PaymentRequest
from xmrgate.domain.stores import DEFAULT_STORE

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


async def new_receipt(
    db: Database,
    index: int,
    amount: int,
    *,
    state: str = "confirmed",
    status: str = "open",
    store: str = DEFAULT_STORE,
) -> int:
    """An unmatched receipt of ``amount`` at subaddress ``index`` (address ``8Lost<index>``,
    mined at height 100 unless in the pool); its id."""
    async with db.write() as conn:
        made = await conn.execute(
            insert(unmatched_receipts)
            .values(
                store_id=store,
                subaddr_index=index,
                address=f"8Lost{index}",
                tx_hash=f"{index:064x}",
                amount=amount,
                fee=1,
                height=0 if state == "pool" else 100,
                timestamp=0,
                unlock_time=0,
                double_spend_seen=False,
                state=state,
                status=status,
                created_at=utcnow(),
                updated_at=utcnow(),
            )
            .returning(unmatched_receipts.c.id)
        )
        return int(made.scalar_one())
