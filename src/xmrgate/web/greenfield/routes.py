"""The one router of the Greenfield facade, mounted by ``create_app`` under ``/api/v1``.

Out of our OpenAPI schema (``include_in_schema=False``): the schema is the MoneroPay
contract the fuzzer checks, and Greenfield's contract is BTCPay's (shared/greenfield.md).
Each part adds its own router here (invoices and webhooks come with their use cases).
"""

from __future__ import annotations

from fastapi import APIRouter

from xmrgate.web.greenfield import PREFIX, invoices, refunds, server, stores, webhooks

router = APIRouter(prefix=PREFIX, include_in_schema=False)
router.include_router(server.router)
router.include_router(stores.router)
router.include_router(invoices.router)
router.include_router(refunds.router)
router.include_router(webhooks.router)
