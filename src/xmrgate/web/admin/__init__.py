"""The merchant dashboard at ``/admin``: a static shell whose JS reads the API.

The shell (HTML, CSS, JS) holds no data, so it is public like ``/health``; every
figure it shows comes from the ordinary API endpoints, called with the API key the
operator types in (kept in the tab's ``sessionStorage``, sent as a bearer token).
``SHELL_PATHS`` are the only paths ``ApiKeyGate`` lets through for it: exact paths,
never a prefix, so no data endpoint can hide under ``/admin``.
"""

from __future__ import annotations

SHELL_PATH = "/admin"
STATIC_PREFIX = "/admin/static/"
# The shell's files: name -> media type.
STATIC_FILES = {
    "admin.css": "text/css; charset=utf-8",
    # Loaded in this order (deferred): exact amounts; helpers, API and sign-in; the
    # overview, list and payouts; one request and the form; refunds; payment links;
    # unmatched receipts; store keys; store webhooks; the routes.
    "format.js": "text/javascript; charset=utf-8",
    "ui.js": "text/javascript; charset=utf-8",
    "pages.js": "text/javascript; charset=utf-8",
    "request.js": "text/javascript; charset=utf-8",
    "refunds.js": "text/javascript; charset=utf-8",
    "links.js": "text/javascript; charset=utf-8",
    "unmatched.js": "text/javascript; charset=utf-8",
    "keys.js": "text/javascript; charset=utf-8",
    "webhooks.js": "text/javascript; charset=utf-8",
    "admin.js": "text/javascript; charset=utf-8",
}
SHELL_PATHS = frozenset({SHELL_PATH, *(STATIC_PREFIX + name for name in STATIC_FILES)})
