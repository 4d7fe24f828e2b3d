"""``GET /admin`` and its static files: the dashboard's shell (mounted unless ``--no-admin``).

The shell holds no data: the JS in ``static/`` calls the API from the browser. It is
served by ``web/static_shell.py`` (as the POS is): its Content-Security-Policy allows
scripts, styles and fetches from this origin only (no inline code, nothing from another
host), images only as ``data:`` URLs, forbids framing, and sends no referrer.
"""

from __future__ import annotations

from xmrgate.web.admin import SHELL_PATH, STATIC_FILES, STATIC_PREFIX
from xmrgate.web.static_shell import StaticShell, content_security_policy

CONTENT_SECURITY_POLICY = content_security_policy(img_src="data:")
# All of the dashboard's files are in its own static/.
_FILES = {name: ("xmrgate.web.admin", media) for name, media in STATIC_FILES.items()}
SHELL = StaticShell("xmrgate.web.admin", SHELL_PATH, STATIC_PREFIX, _FILES, CONTENT_SECURITY_POLICY)

# The page and a file by name, as the browser tests serve them without the app.
shell, static_file = SHELL.shell, SHELL.static_file
build_router = SHELL.build_router
