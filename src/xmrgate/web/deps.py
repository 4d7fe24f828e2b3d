"""Request-scoped access to the process's use cases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from xmrgate.core.gateway import Gateway


async def get_gateway(request: Request) -> Gateway:
    """The Gateway the app was created with (async: no thread-pool hop per request)."""
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
