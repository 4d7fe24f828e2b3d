"""``GET /receive`` (the list of requests) and ``GET /events`` (the event feed): thin routes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from xmrgate.core.invoices import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MAX_SEARCH,
    ListQuery,
    decode_cursor,
)
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.invoice import InvoiceStatus, displayed, unix
from xmrgate.domain.payloads import record_json
from xmrgate.domain.records import PaymentRequest
from xmrgate.web.api.invoice_docs import EventPage, RequestList
from xmrgate.web.api.security import require
from xmrgate.web.deps import GatewayDep

router = APIRouter()

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
STATUS_HELP = "Only requests in these statuses (repeatable): " + ", ".join(
    s.value for s in InvoiceStatus
)


# RFC 3339 (a zone-less time is read as UTC). Given as text with this pattern, not as
# pydantic's datetime: that also takes a bare number as a Unix time, which the schema
# does not promise (the OpenAPI fuzz test sends one and expects a 400).
RFC3339 = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})?$"
)
QueryTime = Annotated[
    str | None, Query(pattern=RFC3339, max_length=40, description="RFC 3339, exclusive")
]


def _utc(text: str | None, name: str) -> datetime | None:
    """A query time; one without a zone is read as UTC."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise InvalidInput(f"{name} is not an RFC 3339 time") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def listed_json(request: PaymentRequest, now: datetime) -> dict[str, Any]:
    """One request as the list shows it."""
    status = displayed(InvoiceStatus(request.status), unix(request.expires_at), now.timestamp())
    return {**record_json(request), "status": status.value}


@router.get(
    "/receive",
    dependencies=[require("read")],
    response_model=None,
    responses={200: {"model": RequestList, "description": "A page of requests, newest first"}},
)
async def list_payment_requests(
    gateway: GatewayDep,
    status: Annotated[list[InvoiceStatus] | None, Query(description=STATUS_HELP)] = None,
    created_after: QueryTime = None,
    created_before: QueryTime = None,
    limit: Limit = DEFAULT_LIMIT,
    # Never empty: a cursor is only ever the ``next_cursor`` of the page before.
    cursor: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    search: Annotated[
        str | None,
        Query(
            max_length=MAX_SEARCH,
            description="Only requests whose description contains this or whose address "
            "starts with it (any case)",
        ),
    ] = None,
    link: Annotated[
        str | None,
        Query(max_length=64, description="Only requests made by this payment link (its id)"),
    ] = None,
) -> JSONResponse:
    """Payment requests, newest first; ``next_cursor`` continues the list (null: the end)."""
    page = await gateway.invoices.find(
        ListQuery(
            statuses=frozenset(status or []),
            created_after=_utc(created_after, "created_after"),
            created_before=_utc(created_before, "created_before"),
            limit=limit,
            after_key=decode_cursor(cursor) if cursor else None,
            search=search or None,
            link=link or None,
        )
    )
    return JSONResponse(
        {
            "requests": [listed_json(r, page.now) for r in page.requests],
            "next_cursor": page.next_cursor,
        }
    )


@router.get(
    "/events",
    dependencies=[require("read")],
    response_model=None,
    responses={200: {"model": EventPage, "description": "Events after `after`, oldest first"}},
)
async def list_events(
    gateway: GatewayDep,
    after: Annotated[int, Query(ge=0, le=2**63 - 1)] = 0,
    limit: Limit = DEFAULT_LIMIT,
) -> JSONResponse:
    """Every event after ``seq`` ``after``, oldest first; ``next_after`` is the last ``seq``.

    The same events as the callbacks, also for requests without a callback_url. Ask
    again with ``after=next_after`` until ``next_after`` is null (nothing newer yet).
    """
    found = await gateway.invoices.events(after, limit)
    return JSONResponse(
        {
            "events": [
                {
                    "seq": e.seq,
                    "address": e.address,
                    "event": e.kind,
                    "payload": json.loads(e.payload),
                }
                for e in found
            ],
            "next_after": found[-1].seq if found else None,
        }
    )
