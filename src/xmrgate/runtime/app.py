"""``build_app``: the FastAPI app of one process, with its loops in the lifespan."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI

from xmrgate.adapters.store.consent_tokens import SqlConsentTokens
from xmrgate.adapters.store.flood_windows import SqlFloodWindows
from xmrgate.config import Settings
from xmrgate.runtime.container import Services
from xmrgate.runtime.lean_process import freeze_startup_objects
from xmrgate.runtime.supervisor import Supervisor
from xmrgate.web.app import create_app


def build_app(settings: Settings, services: Services | None = None) -> FastAPI:
    """The app over ``services`` (built from ``settings`` if not given)."""
    services = services or Services.build(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        supervisor = Supervisor(services)
        await supervisor.start()
        freeze_startup_objects()  # full collections stop walking the start's objects
        try:
            yield
        finally:
            await supervisor.close()

    app = create_app(
        settings,
        services.stores,
        services.store_admin,
        lifespan,
        public_gateway=services.public_gateway,
    )
    # The consent page's single-use tokens (web/consent_page): in the database, so a
    # token is used once whichever process answers, and no restart forgets one.
    app.state.consent_tokens = SqlConsentTokens(services.db)
    if not services.db.is_sqlite:
        # Several processes or hosts may share PostgreSQL: the public pages' limits are
        # counted there, for all of them (web/limits.py); SQLite counts in memory.
        app.state.flood_counter = SqlFloodWindows(services.db)
    return app
