"""The point-of-sale screen at ``/pos``: a static shell whose JS calls ``/pos/*``.

Like the dashboard (``web/admin``), the shell (HTML, CSS, JS) holds no data, so it is
public; the JS calls ``web/api/pos.py`` with the key typed in once (kept in the tab's
``sessionStorage``). ``SHELL_PATHS`` are the exact paths ``ApiKeyGate`` lets through.
``format.js`` (exact XMR amounts) is the dashboard's own file, served here too.
"""

from __future__ import annotations

SHELL_PATH = "/pos"
STATIC_PREFIX = "/pos/static/"
# The shell's files: name -> (the package whose static/ holds it, media type).
STATIC_FILES = {
    "pos.css": ("xmrgate.web.pos", "text/css; charset=utf-8"),
    "format.js": ("xmrgate.web.admin", "text/javascript; charset=utf-8"),
    "pos.js": ("xmrgate.web.pos", "text/javascript; charset=utf-8"),
    # Reads a key given in the URL (/pos#key=KEY) before pos.js starts.
    "pos_key.js": ("xmrgate.web.pos", "text/javascript; charset=utf-8"),
}
SHELL_PATHS = frozenset({SHELL_PATH, *(STATIC_PREFIX + name for name in STATIC_FILES)})
