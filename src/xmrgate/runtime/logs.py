"""Logging set-up: human-readable or one JSON object per line (``--log-format``)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message (and exception)."""

    def format(self, record: logging.LogRecord) -> str:
        """Render a record as a JSON line."""
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def setup_logging(log_format: str, level: int = logging.INFO) -> None:
    """Configure the root logger once for the process."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # httpx logs every request at INFO, callback URLs included: keep it quiet.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)


def redact_url(url: str) -> str:
    """A URL fit for logs: no user:password, no query string (it may carry tokens)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
