"""Request-scoped access to the process's Services."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from xmrgate.services import Services


async def get_services(request: Request) -> Services:
    """The Services the app was created with (async: no thread-pool hop per request)."""
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
