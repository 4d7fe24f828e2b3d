"""The pool table's highest index: what the lookahead check compares the wallet with."""

from __future__ import annotations

from typing import Any

from tests.db.support import new_request
from xmrgate.adapters.store.address_pool import SqlAddressPool
from xmrgate.adapters.store.db import Database


def test_highest_index_covers_requests_and_the_pool(on_database: Any) -> None:
    async def scenario(db: Database) -> None:
        pool = SqlAddressPool(db)
        assert await pool.highest_index() == 0
        await new_request(db, 5)
        assert await pool.highest_index() == 5, "requests only"
        await pool.add([("8PoolA", 7), ("8PoolB", 9)])
        assert await pool.highest_index() == 9, "the pool reaches further"
        await new_request(db, 12)
        assert await pool.highest_index() == 12, "a request beyond the pool"

    on_database(scenario)
