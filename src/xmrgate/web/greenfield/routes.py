"""The routers of the Greenfield facade, added by ``create_app``, each under ``/api/v1``.

Out of our OpenAPI schema (``include_in_schema=False``): the schema is the MoneroPay
contract the fuzzer checks, and Greenfield's contract is BTCPay's (docs/greenfield.md).
Each part has its own router with that prefix (invoices and webhooks come with their use
cases); they are added one by one, not included in one router (``web/route_table.py``).
"""

from __future__ import annotations

from fastapi import APIRouter

from xmrgate.web.greenfield import invoices, refunds, server, stores, webhooks

routers: tuple[APIRouter, ...] = (
    server.router,
    stores.router,
    invoices.router,
    refunds.router,
    webhooks.router,
)
