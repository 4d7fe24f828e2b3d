"""The one place that turns an xmrgate error into the checkout's HTML error page.

A customer gets a page, not the API's JSON: 404 for an unknown request, 503 (with
Retry-After) while the database cannot be read, and the same 503 page for anything
else, which never shows internal details.
"""

from __future__ import annotations

from fastapi.responses import HTMLResponse

from xmrgate.domain.errors import NotFound, XmrgateError
from xmrgate.web.checkout.page import (
    content_security_policy,
    render_not_found,
    render_unavailable,
    security_headers,
)


def checkout_error_page(exc: XmrgateError) -> HTMLResponse:
    """The HTML answer for ``exc`` on ``GET /pay/{address}``."""
    headers = security_headers(content_security_policy(with_script=False))
    if isinstance(exc, NotFound):
        return HTMLResponse(render_not_found(), status_code=404, headers=headers)
    return HTMLResponse(
        render_unavailable(), status_code=503, headers={**headers, "Retry-After": "30"}
    )
