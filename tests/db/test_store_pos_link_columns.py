"""Migration 0015's columns on SQLite and PostgreSQL: a store's ``pos_confirmations``
(1 for the rows the migration found, as the POS screens did before) and an open fiat
link's ``min_price`` (exact decimal text in the link's currency)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.links import SqlLinkStore
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.domain.links import Link, LinkFields
from xmrgate.domain.stores import DEFAULT_STORE, Store

CREATED = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)


def test_pos_confirmations_default_round_trip_and_update(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[Store | None, Store, Store, Store]:
        repo = SqlStores(db)
        default = await repo.get(DEFAULT_STORE)
        plain = await repo.insert(Store(id="plain", name="Plain", account_index=1))
        strict = await repo.insert(
            Store(id="strict", name="Strict", account_index=2, pos_confirmations=0)
        )
        changed = await repo.update(strict.with_changes(pos_confirmations=10))
        return default, plain, strict, changed

    default, plain, strict, changed = on_database(scenario)
    # The row 0008 inserted gets the server default: its tills keep waiting for 1.
    assert default is not None and default.pos_confirmations == 1
    assert plain.pos_confirmations == 1
    assert strict.pos_confirmations == 0
    assert changed.pos_confirmations == 10
    assert changed.public()["pos_confirmations"] == 10


def test_an_open_fiat_links_minimum_is_kept_as_exact_text(on_database: Any) -> None:
    fields = LinkFields(title="Tip jar", currency="EUR", min_price="5.10")

    async def scenario(db: Database) -> tuple[Link, Link | None, Link | None]:
        repo = SqlLinkStore(db, DEFAULT_STORE)
        made = await repo.create("ln_00000000000000a1", "tip-jar", fields, CREATED)
        found = await repo.by_slug("tip-jar")
        cleared = await repo.update(made.id, LinkFields(title="Tip jar", currency="EUR"))
        return made, found, cleared

    made, found, cleared = on_database(scenario)
    assert made.fields.min_price == "5.10"
    assert found is not None and found.fields == made.fields
    assert cleared is not None and cleared.fields.min_price is None
