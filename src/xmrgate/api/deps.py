"""Request-scoped access to the process's Services."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from xmrgate.services import Services


def get_services(request: Request) -> Services:
    """The Services the app was created with."""
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
