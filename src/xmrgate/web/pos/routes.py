"""``GET /pos`` and its static files: the point-of-sale shell (mounted with the dashboard).

The shell holds no data: ``static/pos.js`` calls ``/pos/config`` and ``/pos/sales`` with
the till's key. It is served by ``web/static_shell.py`` (as the dashboard is); its
Content-Security-Policy is the dashboard's, plus images from this origin (the
checkout's QR code, ``/pay/<address>/qr.svg``).
"""

from __future__ import annotations

from xmrgate.web.pos import SHELL_PATH, STATIC_FILES, STATIC_PREFIX
from xmrgate.web.static_shell import StaticShell, content_security_policy

CONTENT_SECURITY_POLICY = content_security_policy(img_src="'self' data:")
SHELL = StaticShell(
    "xmrgate.web.pos", SHELL_PATH, STATIC_PREFIX, STATIC_FILES, CONTENT_SECURITY_POLICY
)
shell, static_file = SHELL.shell, SHELL.static_file
build_router = SHELL.build_router
