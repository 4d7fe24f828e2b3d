"""Migration 0017 on SQLite and PostgreSQL: a shop plugin's key keeps its Greenfield
permissions (``store_keys.permissions``), and the consent page's tokens are single use
(``consent_tokens``: used once, never after expiry, never for another consent, and of two
concurrent uses exactly one wins)."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from xmrgate.adapters.store.consent_tokens import SqlConsentTokens
from xmrgate.adapters.store.db import Database
from xmrgate.adapters.store.stores import SqlStores
from xmrgate.adapters.store.tables import consent_tokens
from xmrgate.core.consent import Consents, binding_of
from xmrgate.core.store_directory import StoreDirectory
from xmrgate.domain.stores import Store, StoreKey
from xmrgate.web.greenfield.auth import granted_permissions

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
WOO = ("btcpay.store.canviewinvoices", "btcpay.store.cancreateinvoice")


def _key(key_id: str, permissions: tuple[str, ...] | None) -> StoreKey:
    return StoreKey(
        id=key_id,
        store_id="shop",
        digest=hashlib.sha256(key_id.encode()).digest(),
        scopes=frozenset({"read", "receive"}),
        created_at=NOW,
        permissions=permissions,
    )


def test_permissions_round_trip_and_reach_the_api_key(on_database: Any) -> None:
    async def scenario(db: Database) -> tuple[list[StoreKey], list[StoreKey], list[Any]]:
        repo = SqlStores(db)
        await repo.insert(Store(id="shop", name="Shop", account_index=1))
        await repo.add_key(_key("0000000000000001", WOO))
        await repo.add_key(_key("0000000000000002", None))
        directory = StoreDirectory(repo, operator_keys=[], default_secret=None)
        await directory.load()
        return await repo.keys("shop"), await repo.active_keys(), directory.keys()

    listed, active, api_keys = on_database(scenario)
    assert [k.permissions for k in listed] == [WOO, None]
    assert [k.permissions for k in active] == [WOO, None]
    plugin, scoped = api_keys
    assert plugin.permissions == WOO and scoped.permissions is None
    # Exactly what was granted, limited to the key's store; the scoped key's are derived.
    assert [str(p) for p in granted_permissions(plugin)] == [f"{n}:shop" for n in WOO]
    assert len(granted_permissions(scoped)) > len(WOO)


def test_a_token_is_used_once_for_its_own_consent(on_database: Any) -> None:
    clock = [NOW]

    async def scenario(db: Database) -> tuple[bool, bool, bool, int]:
        consents = Consents(SqlConsentTokens(db), clock=lambda: clock[0])
        mine, other = binding_of("a", "b"), binding_of("a", "c")
        token = await consents.issue(mine)
        wrong = await consents.redeem(token, other)
        first = await consents.redeem(token, mine)
        again = await consents.redeem(token, mine)
        async with db.read() as conn:
            left = (await conn.execute(select(func.count()).select_from(consent_tokens))).scalar()
        return wrong, first, again, int(left or 0)

    wrong, first, again, left = on_database(scenario)
    assert (wrong, first, again, left) == (False, True, False, 0)


def test_an_expired_token_is_refused_and_swept(on_database: Any) -> None:
    clock = [datetime(2020, 1, 1, tzinfo=UTC)]  # long before the sweep's real now

    async def scenario(db: Database) -> tuple[bool, list[str]]:
        tokens = SqlConsentTokens(db)
        consents = Consents(tokens, clock=lambda: clock[0])
        binding = binding_of("x")
        stale = await consents.issue(binding)
        clock[0] += timedelta(minutes=16)
        late = await consents.redeem(stale, binding)
        # Adding a token sweeps the expired rows (their expiry is before the real now).
        await tokens.add(b"\x01" * 32, binding, datetime.now(UTC) + timedelta(minutes=5))
        async with db.read() as conn:
            rows = (await conn.execute(select(consent_tokens.c.digest))).scalars().all()
        return late, list(rows)

    late, rows = on_database(scenario)
    assert late is False
    assert rows == ["01" * 32]


def test_of_two_concurrent_uses_exactly_one_wins(on_database: Any) -> None:
    async def scenario(db: Database) -> list[bool]:
        consents = Consents(SqlConsentTokens(db), clock=lambda: NOW)
        binding = binding_of("race")
        token = await consents.issue(binding)
        return list(await asyncio.gather(*(consents.redeem(token, binding) for _ in range(6))))

    results = on_database(scenario)
    assert sorted(results) == [False] * 5 + [True]
