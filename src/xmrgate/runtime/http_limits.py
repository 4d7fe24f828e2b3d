"""Bounds on a request's head (request line and headers) before the app sees it.

uvicorn's ``h11_max_incomplete_event_size`` bounds an unfinished head only for the h11
parser; with httptools (uvicorn's choice when it is installed, and ours: it is the faster
parser) nothing does. A client that sends header lines without ever ending the head was
buffered without limit (20 MB sent, 20 MB more RSS; measured), and one that trickles a
byte every few seconds kept its connection for ever (the keep-alive timer is reset by
every byte). ``web/api/security.py``'s ``HeaderLimits`` only runs once a head is
complete. This protocol is uvicorn's httptools protocol plus two bounds:

- at most ``MAX_HEAD_BYTES`` received while a head is unfinished: 431 and close;
- a head must be complete within ``HEAD_TIMEOUT`` of its first chunk: 408 and close
  (timed only when a chunk leaves it unfinished; a usual head comes in one chunk).

Subclassing uvicorn's protocol is a dependency on its internals (``data_received``,
``on_headers_complete``, ``on_message_complete``); ``tests/integration/test_security.py``
drives a real gateway process with both attacks, so an incompatible uvicorn fails there.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from xmrgate.domain.errors import HeadersTooLarge, HeadTooSlow, XmrgateError
from xmrgate.web.api.errors import error_answer

# Request line and headers together; HeaderLimits then holds the headers to 16 KB.
MAX_HEAD_BYTES = 64 * 1024
# From the first chunk that leaves a head unfinished to its blank line; a real client
# sends a head in one packet, so only a slow or hostile one is ever timed.
HEAD_TIMEOUT = 10.0

_REASONS = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing heads that are too large or too slow."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._in_head = True
        self._head_timer: asyncio.TimerHandle | None = None

    def data_received(self, data: bytes) -> None:
        """Count what arrives while a head is unfinished, then let httptools parse it."""
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if not self._in_head or not self._head_bytes:
            return  # the usual case: the whole head came in one chunk, nothing to time
        if self._head_bytes > MAX_HEAD_BYTES:
            message = f"request line and headers exceed {MAX_HEAD_BYTES} bytes"
            self._refuse(HeadersTooLarge(message))
        elif self._head_timer is None:
            # Timed from the first chunk that left the head unfinished: a timer armed
            # and cancelled for every request would be work on the hot GET path that
            # only a head split across chunks needs.
            too_slow = HeadTooSlow(f"request head not complete within {HEAD_TIMEOUT:.0f} s")
            loop = asyncio.get_running_loop()
            self._head_timer = loop.call_later(HEAD_TIMEOUT, self._refuse, too_slow)

    def on_headers_complete(self) -> None:
        """The head is whole: its bounds no longer apply to this request."""
        self._in_head = False
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        """The next bytes on this connection begin a new head."""
        super().on_message_complete()
        self._in_head = True
        self._head_bytes = 0

    def connection_lost(self, exc: Exception | None) -> None:
        """Drop the head timer with the connection."""
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _refuse(self, exc: XmrgateError) -> None:
        """Answer in the gateway's JSON error shape and close the connection."""
        self._cancel_head_timer()
        if self.transport is None or self.transport.is_closing():
            return
        status, body = error_answer(exc)
        payload = json.dumps(body).encode()
        head = b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, b"Error"))
        head += b"content-type: application/json\r\nconnection: close\r\n"
        head += b"content-length: %d\r\n\r\n" % len(payload)
        self.transport.write(head + payload)
        self.transport.close()
