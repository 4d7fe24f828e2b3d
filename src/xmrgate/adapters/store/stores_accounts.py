"""Which store each account of the main wallet belongs to: the sync tick's map."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from xmrgate.adapters.store.tables import stores


async def store_accounts(conn: AsyncConnection) -> dict[int, str]:
    """Account index -> store id, disabled stores included (their payments still count)."""
    rows = await conn.execute(select(stores.c.account_index, stores.c.id))
    return {int(account): str(store) for account, store in rows}
